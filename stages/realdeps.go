package stages

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/merge"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/host"
	"github.com/kube-aws/kube-aws/plugins/source"
)

// DefaultDeps binds the pipeline to core/config, core/merge and plugins/host.
func DefaultDeps() Deps {
	return Deps{
		LoadConfig:      loadConfig,
		Discover:        discover,
		Launch:          launch,
		ResolveSecrets:  resolveSecrets,
		ValidateValues:  validateValues,
		ChooseProviders: config.ChooseProviders,
		Merge:           merge.MergeWith,
		Redact:          func(s string, secrets map[string]string) string { return config.Redact(s, config.Secrets(secrets)) },
		Lock:            source.WriteLock,
		Verify:          source.VerifyLock,
		Ensure:          source.Ensure,
	}
}

// loadConfig loads, defaults and validates cluster.yaml and computes every
// plugin's effective values. Parse errors do not stop it: defaults and
// validation still run so the user sees every problem at once.
func loadConfig(path string) (*Loaded, diag.List, error) {
	c, diags, err := config.Load(path)
	if err != nil {
		return nil, diags, err
	}
	config.ApplyDefaults(c)
	diags = append(diags, config.Validate(c, "")...)
	dir := filepath.Dir(path)
	values, vd := config.EffectiveValues(c, dir)
	diags = append(diags, vd...)
	if diags.HasFatal() {
		return &Loaded{Path: path, Dir: dir, Cluster: c}, diags, nil
	}
	b, err := json.Marshal(c)
	if err != nil {
		return nil, diags, fmt.Errorf("encoding configuration: %w", err)
	}
	h, err := ConfigHash(path, c)
	if err != nil {
		return nil, diags, err
	}
	return &Loaded{Path: path, Dir: dir, Cluster: c, JSON: b, Values: values, Hash: h}, diags, nil
}

func resolveSecrets(l *Loaded, schemas map[string]json.RawMessage) (*Resolved, diag.List) {
	r, diags := config.ResolveSecrets(l.Cluster, l.Values, schemas, l.Dir)
	if diags.HasFatal() {
		return nil, diags
	}
	// The cluster was marshalled once, when it was loaded; the plugins get
	// that JSON with the secrets replaced by their markers.
	return &Resolved{JSON: config.RedactJSON(l.JSON, r.Secrets), Values: r.Values, Plain: r.Plain, Secrets: r.Secrets}, diags
}

func discover(clusterDir string, pluginDirs []string) ([]source.Candidate, error) {
	return source.Discover(source.DefaultFolders(clusterDir, pluginDirs))
}

func launch(ctx context.Context, cands []source.Candidate, opts host.Options) ([]Plugin, error) {
	ps, err := host.Launch(ctx, cands, opts)
	out := make([]Plugin, 0, len(ps))
	for _, p := range ps {
		if p != nil {
			out = append(out, hostPlugin{p})
		}
	}
	return out, err
}

// hostPlugin adapts *host.Plugin to Plugin.
type hostPlugin struct{ p *host.Plugin }

func (h hostPlugin) Candidate() source.Candidate { return h.p.Candidate }
func (h hostPlugin) Info() stage.PluginInfo      { return h.p.Info }
func (h hostPlugin) ProtocolVersion() int        { return h.p.ProtocolVersion }
func (h hostPlugin) Kill()                       { h.p.Kill() }
func (h hostPlugin) Register(ctx context.Context, reg stage.Registration) error {
	return h.p.Register(ctx, reg)
}
func (h hostPlugin) Run(ctx context.Context, in *stage.Input, onEvent func(stage.Event)) (*stage.Result, error) {
	return h.p.Run(ctx, in, onEvent)
}

// SignalContext returns a context cancelled on the first SIGINT or SIGTERM:
// the running stage is stopped, its plugins killed, the output folder left
// as it was, and the command exits 130. A second signal kills every plugin
// at once and exits 130 without waiting.
func SignalContext(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(parent)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-ch:
			cancel()
		case <-done:
			return
		}
		select {
		case <-ch:
			KillAllPlugins()
			os.Exit(ExitInterrupted)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel()
	}
}

// KillAllPlugins kills every plugin process this kube-aws started: the last
// resort on a panic or a second Ctrl-C.
func KillAllPlugins() { host.KillAllRunning() }

// UseRunDir gives the process a temporary folder of its own, removed by
// release and, if kube-aws is killed, by the next kube-aws (host.UseRunDir):
// the go-plugin socket files of a run go there. Call it first in main.
func UseRunDir() (release func()) { return host.UseRunDir() }
