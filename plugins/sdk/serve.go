package sdk

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"

	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/protocol"
	"github.com/kube-aws/kube-aws/plugins/sdk/cpuprofile"
)

// parentPollInterval is how often a plugin checks that kube-aws is still
// alive. kube-aws also asks Linux to SIGKILL its plugins when it dies
// (Pdeathsig); polling is the portable fallback and costs nothing measurable.
const parentPollInterval = 500 * time.Millisecond

// Serve runs p as a kube-aws plugin until kube-aws ends it. Call it from main
// and do nothing else there: it never returns. Serve fills Info's Stages from
// the stage interfaces p implements, ProtocolVersions with the versions this
// SDK speaks, and Name with the executable's name when p leaves it empty.
//
// Do not write to stdout before calling Serve: go-plugin's handshake line is
// the first thing kube-aws reads there. Once Serve runs, anything written to
// os.Stdout or os.Stderr is forwarded to kube-aws's log under the plugin's name.
func Serve(p Plugin) {
	if p == nil {
		fmt.Fprintln(os.Stderr, "sdk.Serve called with a nil Plugin")
		os.Exit(1)
	}
	stop := cpuprofile.Start()
	defer stop()
	go exitWhenOrphaned(os.Getppid(), parentPollInterval)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  protocol.Handshake,
		VersionedPlugins: protocol.ServerPlugins(&server{p: p}),
		GRPCServer:       protocol.NewGRPCServer,
		Logger:           logger(),
	})
}

// ServeAll runs several plugins from one process until kube-aws ends it, as
// Serve runs one. kube-aws calls each by its name, the Name its Info
// returns, which must be set and unique. One process costs one start-up
// instead of one per plugin: kube-aws's built-ins are served this way,
// from one executable that each built-in's file in the built-in folder
// links to, and kube-aws starts one process for all the built-ins whose
// files are that same executable. Contrib and user plugins always get a
// process each.
func ServeAll(ps ...Plugin) {
	impls, err := byName(ps)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sdk.ServeAll:", err)
		os.Exit(1)
	}
	stop := cpuprofile.Start()
	defer stop()
	go exitWhenOrphaned(os.Getppid(), parentPollInterval)
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig:  protocol.Handshake,
		VersionedPlugins: protocol.ServerPluginsByName(impls),
		GRPCServer:       protocol.NewGRPCServer,
		Logger:           logger(),
	})
}

// byName keys the plugins by their names, refusing a nil plugin, an empty
// name and a name given twice.
func byName(ps []Plugin) (map[string]protocol.Plugin, error) {
	if len(ps) == 0 {
		return nil, errors.New("no plugins to serve")
	}
	out := make(map[string]protocol.Plugin, len(ps))
	for i, p := range ps {
		if p == nil {
			return nil, fmt.Errorf("plugin %d is nil", i)
		}
		name := p.Info().Name
		if name == "" {
			return nil, fmt.Errorf("plugin %d (%T) has no Name in its Info; a process serving several plugins is called by their names", i, p)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("two plugins are named %q", name)
		}
		out[name] = &server{p: p}
	}
	return out, nil
}

// logger keeps go-plugin quiet: its default logs JSON at trace level to
// stderr, which kube-aws would have to parse for every plugin on every run.
// KUBE_AWS_DEBUG turns it back on for troubleshooting.
func logger() hclog.Logger {
	if os.Getenv("KUBE_AWS_DEBUG") == "" {
		return hclog.NewNullLogger()
	}
	return hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: os.Stderr, JSONFormat: true})
}

// exitWhenOrphaned ends the plugin when its parent changes, i.e. kube-aws
// died and the plugin was re-parented, so no plugin outlives kube-aws.
func exitWhenOrphaned(ppid int, every time.Duration) {
	if ppid <= 1 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for range t.C {
		if os.Getppid() != ppid {
			os.Exit(2)
		}
	}
}

// StagesOf lists the stages p implements, in run order.
func StagesOf(p Plugin) []stage.Name {
	if l, ok := p.(stageLister); ok {
		return append([]stage.Name(nil), l.implemented()...)
	}
	var out []stage.Name
	if _, ok := p.(Initialiser); ok {
		out = append(out, stage.Initialise)
	}
	if _, ok := p.(Renderer); ok {
		out = append(out, stage.Render)
	}
	if _, ok := p.(Deployer); ok {
		out = append(out, stage.Deploy)
	}
	if _, ok := p.(Validator); ok {
		out = append(out, stage.Validate)
	}
	if _, ok := p.(Differ); ok {
		out = append(out, stage.Diff)
	}
	if _, ok := p.(Destroyer); ok {
		out = append(out, stage.Destroy)
	}
	if _, ok := p.(AdminCredentialProvider); ok {
		out = append(out, stage.AdminCredential)
	}
	return out
}

// InfoOf returns p's Info as Serve sends it to kube-aws.
func InfoOf(p Plugin) stage.PluginInfo {
	info := p.Info()
	if info.Name == "" {
		info.Name = filepath.Base(os.Args[0])
	}
	info.Stages = StagesOf(p)
	if len(info.ProtocolVersions) == 0 {
		info.ProtocolVersions = append([]int(nil), protocol.SupportedVersions...)
	}
	return info
}

// server adapts a Plugin to protocol.Plugin.
type server struct {
	p Plugin
}

func (s *server) GetInfo(context.Context, int, string) (stage.PluginInfo, error) {
	return InfoOf(s.p), nil
}

func (s *server) NotifyRegistration(_ context.Context, reg stage.Registration) error {
	if o, ok := s.p.(RegistrationObserver); ok {
		o.Registered(reg)
	}
	return nil
}

func (s *server) RunStage(ctx context.Context, in *stage.Input, host protocol.Host, emit func(stage.Event) error) (*stage.Result, error) {
	name := InfoOf(s.p).Name
	req := &Request{Input: in, Plugin: name, Host: &requestHost{emit: emit, host: host}}
	return Call(ctx, s.p, req)
}

// Call runs the stage method of p named by req.Stage, turning a panic into
// an error. It is what Serve does for each stage call, exported so that a
// plugin's unit tests can call stage methods exactly as kube-aws would.
func Call(ctx context.Context, p Plugin, req *Request) (res *stage.Result, err error) {
	if req == nil || req.Input == nil {
		return nil, errors.New("sdk.Call: request without input")
	}
	var fn func(context.Context, *Request) (*stage.Result, error)
	switch req.Stage {
	case stage.Initialise:
		if i, ok := p.(Initialiser); ok {
			fn = i.Initialise
		}
	case stage.Render:
		if i, ok := p.(Renderer); ok {
			fn = i.Render
		}
	case stage.Deploy:
		if i, ok := p.(Deployer); ok {
			fn = i.Deploy
		}
	case stage.Validate:
		if i, ok := p.(Validator); ok {
			fn = i.Validate
		}
	case stage.Diff:
		if i, ok := p.(Differ); ok {
			fn = i.Diff
		}
	case stage.Destroy:
		if i, ok := p.(Destroyer); ok {
			fn = i.Destroy
		}
	case stage.AdminCredential:
		if i, ok := p.(AdminCredentialProvider); ok {
			fn = i.AdminCredential
		}
	}
	if l, ok := p.(stageLister); ok && !slices.Contains(l.implemented(), req.Stage) {
		fn = nil
	}
	if fn == nil {
		return nil, notImplemented(req, p)
	}
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprint(r)
			// The whole panic and its stack go to stderr, which kube-aws
			// forwards to its log; the error carries the first line so the
			// one-line report names what went wrong.
			fmt.Fprintf(os.Stderr, "panic in stage %s: %s\n\n%s", req.Stage, msg, debug.Stack())
			res, err = nil, fmt.Errorf("panic: %s", firstLine(msg))
		}
	}()
	res, err = fn(ctx, req)
	if err == nil && res == nil {
		res = &stage.Result{}
	}
	return res, err
}

func notImplemented(req *Request, p Plugin) error {
	return fmt.Errorf("plugin %s does not implement stage %q (it implements %v)", req.Plugin, req.Stage, StagesOf(p))
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[:i])
	}
	return s
}

// requestHost is the Host a stage method sees: events travel on the stage's
// own stream (ordered with the result and free of extra connections); the
// store, and events sent after the stage returned, go to the Host service
// kube-aws serves over the broker.
type requestHost struct {
	emit func(stage.Event) error
	host protocol.Host
}

var errNoHost = errors.New("kube-aws did not offer host services for this call")

func (h *requestHost) Emit(ev stage.Event) error {
	if h.emit != nil {
		err := h.emit(ev)
		if !errors.Is(err, protocol.ErrStageOver) {
			return err
		}
	}
	if h.host == nil {
		return errNoHost
	}
	return h.host.Emit(ev)
}

func (h *requestHost) StoreGet(key string) ([]byte, bool, error) {
	if h.host == nil {
		return nil, false, errNoHost
	}
	return h.host.StoreGet(key)
}

func (h *requestHost) StorePut(key string, value []byte) error {
	if h.host == nil {
		return errNoHost
	}
	return h.host.StorePut(key, value)
}

func (h *requestHost) SecretGet(key string) ([]byte, bool, error) {
	if h.host == nil {
		return nil, false, errNoHost
	}
	return h.host.SecretGet(key)
}

func (h *requestHost) SecretPut(key string, value []byte) (string, error) {
	if h.host == nil {
		return "", errNoHost
	}
	return h.host.SecretPut(key, value)
}

func (h *requestHost) StoreDelete(key string) error {
	if h.host == nil {
		return errNoHost
	}
	return h.host.StoreDelete(key)
}

func (h *requestHost) StoreList(prefix string) ([]string, error) {
	if h.host == nil {
		return nil, errNoHost
	}
	return h.host.StoreList(prefix)
}
