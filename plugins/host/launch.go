package host

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/core/version"
	"github.com/kube-aws/kube-aws/internal/fileutil"
	"github.com/kube-aws/kube-aws/plugins/protocol"
)

const (
	// DefaultStartTimeout bounds the handshake and GetInfo of one plugin.
	DefaultStartTimeout = 10 * time.Second
	// DefaultStageTimeout bounds one stage call of one plugin. Deploy waits
	// for CloudFormation, hence minutes.
	DefaultStageTimeout = 10 * time.Minute
	// DefaultCancelGrace is Options.CancelGrace's default.
	DefaultCancelGrace = 30 * time.Second
)

// Options configure Launch.
type Options struct {
	// StartTimeout bounds the handshake and GetInfo (default 10s).
	StartTimeout time.Duration
	// StageTimeout bounds each stage call (default 10m).
	StageTimeout time.Duration
	// Lock, when set, is checked before any non-built-in plugin starts.
	Lock *Lockfile
	// Stderr receives the plugins' output, one line at a time prefixed
	// "[<name>] " (default os.Stderr).
	Stderr io.Writer
	// StoreDir holds each plugin's key-value store as <plugin>.json
	// (normally .kube-aws/store); empty keeps stores in memory.
	StoreDir string
	// Credentials keeps the secrets plugins generate (normally
	// credentials/ beside cluster.yaml); nil keeps them in memory.
	Credentials *Credentials
	// HostVersion is sent to plugins in GetInfo (default core/version.Version).
	HostVersion string
	// Env is added to the plugins' environment (KEY=VALUE), over kube-aws's own.
	Env []string
	// CancelGrace is how long a plugin that reaches AWS may take to wind a
	// stage call up once kube-aws is interrupted (it is asked to stop, and
	// its waits end), before the call is cut and the plugin killed
	// (default 30s).
	CancelGrace time.Duration
}

func (o Options) withDefaults() Options {
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.StageTimeout <= 0 {
		o.StageTimeout = DefaultStageTimeout
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	if o.HostVersion == "" {
		o.HostVersion = version.Version
	}
	if o.CancelGrace <= 0 {
		o.CancelGrace = DefaultCancelGrace
	}
	return o
}

// Plugin is a started plugin process that has answered GetInfo.
type Plugin struct {
	Candidate
	// Info is what the plugin said about itself.
	Info stage.PluginInfo
	// ProtocolVersion is the protocol version negotiated with the plugin.
	ProtocolVersion int

	opts     Options
	client   *plugin.Client
	cmd      *exec.Cmd
	rpc      protocol.Plugin
	sink     *stderrSink
	writers  []*lineWriter
	store    *Store
	services *services
	// credentials are shared by every plugin of the run.
	credentials *Credentials

	killOnce sync.Once
	mu       sync.Mutex
	dead     error       // why the plugin can no longer be called
	proc     *os.Process // set once the process has started
}

// Store is the plugin's key-value store.
func (p *Plugin) Store() *Store { return p.store }

// Pid is the plugin's process id (0 if it never started).
func (p *Plugin) Pid() int {
	if proc := p.process(); proc != nil {
		return proc.Pid
	}
	return 0
}

func (p *Plugin) process() *os.Process {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.proc
}

// sigkill ends the process at once, without go-plugin's graceful shutdown.
func (p *Plugin) sigkill() {
	if proc := p.process(); proc != nil {
		_ = proc.Kill()
	}
}

// Exited reports whether the plugin process has ended.
func (p *Plugin) Exited() bool { return p.client.Exited() }

// live tracks every started plugin so that CleanupOnSignal can end them all.
var live = struct {
	sync.Mutex
	m map[*Plugin]struct{}
}{m: map[*Plugin]struct{}{}}

// Launch starts the candidates concurrently, does the go-plugin handshake and
// GetInfo with each, and returns them in input order. If any fails, every
// started plugin is killed and every failure is returned (errors.Join), each
// naming the plugin, its path and what to do.
func Launch(ctx context.Context, cands []Candidate, opts Options) ([]*Plugin, error) {
	opts = opts.withDefaults()
	out := make([]*Plugin, len(cands))
	errs := make([]error, len(cands))
	// Launching is mostly waiting on exec and the child's start-up, so a few
	// per CPU keeps both cores busy without a thundering herd.
	sem := make(chan struct{}, runtime.GOMAXPROCS(0)*4)
	var wg sync.WaitGroup
	for i, c := range cands {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i], errs[i] = launch(ctx, c, opts)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		KillAll(out)
		return nil, err
	}
	return out, nil
}

func hostLogger() hclog.Logger {
	if os.Getenv("KUBE_AWS_DEBUG") != "" {
		return hclog.New(&hclog.LoggerOptions{Name: "plugin", Level: hclog.Debug, Output: os.Stderr})
	}
	// Off also makes go-plugin skip parsing every stderr line as JSON.
	return hclog.New(&hclog.LoggerOptions{Name: "plugin", Level: hclog.Off, Output: io.Discard})
}

func launch(ctx context.Context, c Candidate, opts Options) (*Plugin, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("plugin %s (%s) not started: %w", c.Name, c.Path, err)
	}
	if c.Problem != "" {
		return nil, fmt.Errorf("plugin %s cannot be started: %s", c.Name, c.Problem)
	}
	var secure *plugin.SecureConfig
	var want string
	if opts.Lock != nil && c.Source != SourceBuiltin {
		e := opts.Lock.Entry(c.Name)
		if e == nil {
			return nil, notLockedError(c)
		}
		// A registry plugin is checked against its build for this platform.
		e, err := e.forCandidate(c)
		if err != nil {
			return nil, err
		}
		// The executable is checked by go-plugin's SecureConfig as it
		// starts; its source and the files beside it (a script plugin's
		// code) are checked here, also before anything runs. When they
		// differ, the executable is hashed here as well, so that every
		// difference is reported at once.
		if errs := verifyEntry(c, e, false); len(errs) > 0 {
			if have, err := fileutil.SHA256(c.Path); err == nil && have != strings.ToLower(e.SHA256) {
				errs = append([]error{mismatchError(c, e.SHA256, have)}, errs...)
			}
			return nil, errors.Join(errs...)
		}
		want = strings.ToLower(e.SHA256)
		sum, err := hex.DecodeString(want)
		if err != nil {
			return nil, fmt.Errorf("plugins.lock has an invalid sha256 for plugin %s: %v; run `kube-aws plugins lock`", c.Name, err)
		}
		secure = &plugin.SecureConfig{Checksum: sum, Hash: sha256.New()}
	}

	p := &Plugin{Candidate: c, opts: opts, sink: newStderrSink(c.Name, opts.Stderr)}
	if opts.StoreDir != "" {
		p.store = NewStore(filepath.Join(opts.StoreDir, c.Name+".json"))
	} else {
		p.store = NewStore("")
	}
	p.credentials = opts.Credentials
	if p.credentials == nil {
		p.credentials = NewCredentials("")
	}
	p.services = &services{p: p}
	raw, synced := p.sink.writer(), p.sink.writer()
	p.writers = []*lineWriter{raw, synced}

	cmd := exec.Command(c.Path)
	cmd.SysProcAttr = sysProcAttr()
	// go-plugin would append kube-aws's environment after ours, and the last
	// value wins; build it here so Options.Env overrides.
	cmd.Env = append(os.Environ(), opts.Env...)
	p.cmd = cmd

	p.client = plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  protocol.Handshake,
		VersionedPlugins: protocol.ClientPlugins(),
		Cmd:              cmd,
		SkipHostEnv:      true,
		SecureConfig:     secure,
		StartTimeout:     opts.StartTimeout,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		GRPCDialOptions:  protocol.DialOptions(),
		Logger:           hostLogger(),
		Stderr:           raw,
		SyncStderr:       synced,
		SyncStdout:       synced,
	})
	live.Lock()
	live.m[p] = struct{}{}
	live.Unlock()

	if _, err := p.client.Start(); err != nil {
		p.Kill()
		return nil, p.startError(err, want)
	}
	p.mu.Lock()
	p.proc = cmd.Process
	p.mu.Unlock()
	if err := ctx.Err(); err != nil {
		p.Kill()
		return nil, fmt.Errorf("plugin %s (%s) stopped during start-up: %w", c.Name, c.Path, err)
	}
	rpc, err := protocol.Dispense(p.client)
	if err != nil {
		p.Kill()
		return nil, fmt.Errorf("plugin %s (%s): connecting after the handshake: %v; run with KUBE_AWS_DEBUG=1 for details", c.Name, c.Path, err)
	}
	p.mu.Lock()
	p.rpc = rpc
	p.mu.Unlock()
	p.ProtocolVersion = p.client.NegotiatedVersion()

	ictx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	info, err := rpc.GetInfo(ictx, p.ProtocolVersion, opts.HostVersion)
	if err != nil {
		p.Kill()
		if expired(ictx) && ctx.Err() == nil {
			return nil, fmt.Errorf("plugin %s (%s) did not answer GetInfo within %s; killed", c.Name, c.Path, opts.StartTimeout)
		}
		return nil, fmt.Errorf("plugin %s (%s) failed to describe itself (GetInfo): %s%s", c.Name, c.Path, status.Convert(err).Message(), p.stderrNote())
	}
	p.Info = info
	return p, nil
}

var (
	reUnrecognized = regexp.MustCompile(`Unrecognized remote plugin message: ([^\n]*)`)
	rePluginProto  = regexp.MustCompile(`Plugin version: (\d+)`)
)

// startError turns go-plugin's start-up errors into ones that say which
// plugin, what went wrong and what to do.
func (p *Plugin) startError(err error, want string) error {
	c := p.Candidate
	msg := err.Error()
	switch {
	case errors.Is(err, plugin.ErrChecksumsDoNotMatch):
		have, herr := fileutil.SHA256(c.Path)
		if herr != nil {
			have = "unreadable: " + herr.Error()
		}
		return mismatchError(c, want, have)
	case strings.Contains(msg, "error verifying checksum"):
		return fmt.Errorf("plugin %s (%s) could not be checked against plugins.lock: %v", c.Name, c.Path, err)
	case strings.Contains(msg, "incompatible API version with plugin"):
		got := "?"
		if m := rePluginProto.FindStringSubmatch(msg); m != nil {
			got = m[1]
		}
		return fmt.Errorf("plugin %s (%s) speaks plugin protocol version %s, but this kube-aws speaks %v; use a build of the plugin for protocol %d (rebuild it against this kube-aws's plugins/sdk) or a kube-aws that speaks version %s",
			c.Name, c.Path, got, protocol.SupportedVersions, protocol.SupportedVersions[len(protocol.SupportedVersions)-1], got)
	case strings.Contains(msg, "unsupported plugin protocol"):
		return fmt.Errorf("plugin %s (%s) serves go-plugin's net/rpc, but kube-aws plugins must serve gRPC: build it with kube-aws's plugins/sdk", c.Name, c.Path)
	case strings.Contains(msg, "incompatible core API version"):
		return fmt.Errorf("plugin %s (%s) uses an incompatible version of hashicorp/go-plugin: rebuild it against this kube-aws's plugins/sdk", c.Name, c.Path)
	case strings.Contains(msg, "timeout while waiting for plugin to start"):
		return fmt.Errorf("plugin %s (%s) did not complete the go-plugin handshake within %s; killed. Is it a kube-aws plugin? Raise the start timeout if it is slow to start%s",
			c.Name, c.Path, p.opts.StartTimeout, p.stderrNote())
	case strings.Contains(msg, "plugin exited before we could connect"),
		strings.Contains(msg, "Failed to read any lines from plugin's stdout"):
		return fmt.Errorf("plugin %s (%s) exited before the go-plugin handshake: it is not a kube-aws plugin, or it failed at start-up; remove it from %s if it is not a plugin%s",
			c.Name, c.Path, c.Dir, p.stderrNote())
	}
	if m := reUnrecognized.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("plugin %s (%s) wrote %q to stdout before the go-plugin handshake; a plugin must not print to stdout before sdk.Serve (log to stderr instead), and a file that is not a kube-aws plugin does not belong in %s",
			c.Name, c.Path, m[1], c.Dir)
	}
	return fmt.Errorf("plugin %s (%s) failed to start: %v%s", c.Name, c.Path, err, p.stderrNote())
}

// stderrNote quotes the end of the plugin's stderr, which usually says why
// it failed.
func (p *Plugin) stderrNote() string {
	lines := p.sink.lastLines(5)
	if len(lines) == 0 {
		return ""
	}
	return "; its stderr ended with:\n    " + strings.Join(lines, "\n    ")
}

// Register tells the plugin whether kube-aws accepted it (and why not).
func (p *Plugin) Register(ctx context.Context, reg stage.Registration) error {
	if err := p.usable(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, p.opts.StartTimeout)
	defer cancel()
	if err := p.rpc.NotifyRegistration(ctx, reg); err != nil {
		return fmt.Errorf("plugin %s (%s): sending the registration result: %s", p.Name, p.Path, status.Convert(err).Message())
	}
	return nil
}

func (p *Plugin) usable() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead != nil {
		return p.dead
	}
	if p.rpc == nil {
		return fmt.Errorf("plugin %s (%s) was not started", p.Name, p.Path)
	}
	return nil
}

// StageError is a plugin failing a stage: an error it returned, a panic, a
// crash, or not finishing within the stage timeout. It carries what a
// diagnostic needs.
type StageError struct {
	Plugin string
	Path   string
	Stage  stage.Name
	// Message says what happened, naming the plugin and the stage.
	Message string
	Hint    string
	// Killed is set when kube-aws killed the plugin (timeout, cancellation)
	// or it died; the plugin cannot be called again.
	Killed bool
}

func (e *StageError) Error() string {
	s := e.Message + " (" + e.Path + ")"
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// Diagnostic renders the failure as a fatal diagnostic.
func (e *StageError) Diagnostic() diag.Diagnostic {
	return diag.Diagnostic{Severity: diag.Fatal, Plugin: e.Plugin, Stage: string(e.Stage), Message: e.Message, Hint: e.Hint, File: e.Path}
}

// Run calls one stage of the plugin with the stage timeout. onEvent (may be
// nil) receives the events the plugin reports while the stage runs. Calls to
// one plugin must not overlap: stages run one after another. The
// result's diagnostics and files are stamped with the plugin's name and the
// stage. On failure the error is a *StageError.
func (p *Plugin) Run(ctx context.Context, in *stage.Input, onEvent func(stage.Event)) (*stage.Result, error) {
	if in == nil {
		return nil, fmt.Errorf("plugin %s: Run called without input", p.Name)
	}
	if err := p.usable(); err != nil {
		return nil, err
	}
	if !p.Info.Implements(in.Stage) {
		return nil, &StageError{Plugin: p.Name, Path: p.Path, Stage: in.Stage,
			Message: fmt.Sprintf("plugin %s does not implement stage %s (it implements %v)", p.Name, in.Stage, p.Info.Stages)}
	}
	// A plugin that reaches AWS acts on the world outside: when ctx is
	// cancelled (kube-aws interrupted) its call is not cut at once; it is
	// asked to stop and given CancelGrace to return its result, so that it
	// can stop its waits and release what it holds (the deploy plugin's
	// lock). Only then, or at once when it cannot be asked, is the call cut.
	// Any other plugin only computes: its call is cut at once.
	base := ctx
	if p.Info.ReachesAWS {
		base = context.WithoutCancel(ctx)
	}
	sctx, cancel := context.WithTimeout(base, p.opts.StageTimeout)
	defer cancel()
	if p.Info.ReachesAWS {
		returned := make(chan struct{})
		defer close(returned)
		go p.cancelOnInterrupt(ctx, returned, cancel)
	}

	emit := func(ev stage.Event) error {
		if ev.Diagnostic != nil {
			d := diag.List{*ev.Diagnostic}.Reported(p.Name, string(in.Stage))[0]
			ev.Diagnostic = &d
		}
		if onEvent != nil {
			onEvent(ev)
		}
		return nil
	}
	p.services.setEmit(emit)
	defer p.services.setEmit(nil)

	res, err := p.rpc.RunStage(sctx, in, p.services, emit)
	if err == nil {
		res.Diagnostics = res.Diagnostics.Reported(p.Name, string(in.Stage))
		if len(res.Diagnostics) == 0 {
			res.Diagnostics = nil
		}
		for i := range res.Files {
			res.Files[i].Plugin = p.Name
		}
		return res, nil
	}
	return nil, p.stageError(ctx, sctx, in.Stage, err)
}

// cancelOnInterrupt waits until the stage call returns or ctx is
// cancelled; then it asks the plugin to stop (protocol.Cancel) and cuts the
// call (cut) when the plugin does not return within CancelGrace, or cannot
// be asked.
func (p *Plugin) cancelOnInterrupt(ctx context.Context, returned <-chan struct{}, cut context.CancelFunc) {
	select {
	case <-returned:
		return
	case <-ctx.Done():
	}
	actx, done := context.WithTimeout(context.Background(), p.opts.StartTimeout)
	err := protocol.Cancel(actx, p.rpc)
	done()
	if err != nil {
		cut()
		return
	}
	t := time.NewTimer(p.opts.CancelGrace)
	defer t.Stop()
	select {
	case <-returned:
	case <-t.C:
		p.sink.line(fmt.Sprintf("did not stop within %s of being interrupted; killed", p.opts.CancelGrace))
		cut()
	}
}

func (p *Plugin) stageError(parent, sctx context.Context, st stage.Name, err error) error {
	se := &StageError{Plugin: p.Name, Path: p.Path, Stage: st}
	code := status.Code(err)
	switch {
	// gRPC sends the deadline to the plugin, whose side may end the stream a
	// moment before our own timer fires, so a passed deadline counts as
	// expired even while ctx.Err() is still nil.
	case expired(parent):
		p.kill(fmt.Errorf("plugin %s was killed when stage %s was cancelled", p.Name, st))
		se.Killed = true
		cause := parent.Err()
		if cause == nil {
			cause = context.DeadlineExceeded
		}
		se.Message = fmt.Sprintf("plugin %s was stopped in stage %s: %v; killed", p.Name, st, cause)
	case expired(sctx):
		p.kill(fmt.Errorf("plugin %s was killed after it did not finish stage %s within %s", p.Name, st, p.opts.StageTimeout))
		se.Killed = true
		se.Message = fmt.Sprintf("plugin %s did not finish stage %s within %s; killed", p.Name, st, p.opts.StageTimeout)
		se.Hint = "report the hang to the plugin's author, or raise the stage timeout if it is merely slow"
	case p.crashed(err):
		// Kill waits until go-plugin has drained the plugin's stderr, so the
		// panic line is there to quote.
		p.kill(fmt.Errorf("plugin %s crashed in stage %s", p.Name, st))
		se.Killed = true
		why := p.sink.panicLine()
		if why == "" {
			why = "the process exited: " + status.Convert(err).Message()
		}
		se.Message = fmt.Sprintf("plugin %s crashed in stage %s: %s", p.Name, st, why)
		se.Hint = "this is a bug in the plugin: report it to its author with the plugin's stderr above"
	case code == codes.Canceled || code == codes.DeadlineExceeded || code == codes.Unavailable || code == codes.Internal:
		// The connection, not the plugin, failed: its state is unknown, so
		// it is not called again.
		p.kill(fmt.Errorf("plugin %s was killed after losing its connection in stage %s", p.Name, st))
		se.Killed = true
		se.Message = fmt.Sprintf("plugin %s lost its connection in stage %s: %s; killed", p.Name, st, status.Convert(err).Message())
		se.Hint = "run again with KUBE_AWS_DEBUG=1 to see go-plugin's log"
	default:
		msg := status.Convert(err).Message()
		se.Message = fmt.Sprintf("plugin %s failed in stage %s: %s", p.Name, st, msg)
		if strings.HasPrefix(msg, "panic: ") {
			se.Hint = "this is a bug in the plugin: report it to its author with the plugin's stderr above"
		}
	}
	return se
}

func expired(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// crashed reports whether a failed call means the process died.
func (p *Plugin) crashed(err error) bool {
	code := status.Code(err)
	if code != codes.Unavailable && code != codes.Canceled && code != codes.Internal {
		return false
	}
	// The connection drops a moment before go-plugin notices the exit.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if p.client.Exited() {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

// Kill ends the plugin process and waits until it is gone. It is safe to
// call more than once and from several goroutines.
func (p *Plugin) Kill() {
	p.kill(fmt.Errorf("plugin %s (%s) was already stopped", p.Name, p.Path))
}

func (p *Plugin) kill(why error) {
	p.mu.Lock()
	if p.dead == nil {
		p.dead = why
	}
	started := p.rpc != nil
	p.mu.Unlock()
	p.killOnce.Do(func() {
		if p.client != nil {
			// A plugin killed by a signal cannot remove its socket file;
			// remember where it is to remove it for the plugin.
			var sock string
			if rc := p.client.ReattachConfig(); rc != nil && rc.Addr != nil && rc.Addr.Network() == "unix" {
				sock = rc.Addr.String()
			}
			// A plugin that is mid-call (hung, or being cancelled) would
			// only delay go-plugin's graceful shutdown: SIGKILL it first.
			if !started || p.services.busy() {
				p.sigkill()
			}
			if started {
				protocol.Settle(p.rpc)
			}
			p.client.Kill()
			if sock != "" {
				_ = os.Remove(sock) // usually gone already: the plugin removes it on a clean exit
			}
		}
		for _, w := range p.writers {
			w.flush()
		}
		live.Lock()
		delete(live.m, p)
		live.Unlock()
	})
}

// KillAll kills the plugins concurrently and waits for all of them. Nil
// entries are skipped.
func KillAll(ps []*Plugin) {
	var wg sync.WaitGroup
	for _, p := range ps {
		if p == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Kill()
		}()
	}
	wg.Wait()
}

// services is the Host implementation kube-aws serves to one plugin: events
// go to the running stage's callback, the store to the plugin's Store.
type services struct {
	p *Plugin

	mu   sync.Mutex
	emit func(stage.Event) error
}

func (s *services) setEmit(f func(stage.Event) error) {
	s.mu.Lock()
	s.emit = f
	s.mu.Unlock()
}

func (s *services) busy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emit != nil
}

func (s *services) Emit(ev stage.Event) error {
	s.mu.Lock()
	f := s.emit
	s.mu.Unlock()
	if f != nil {
		return f(ev)
	}
	// Between stages there is no one to hand events to: log them.
	s.p.sink.line(fmt.Sprintf("%s: %s", ev.Kind, ev.Message))
	return nil
}

func (s *services) StoreGet(key string) ([]byte, bool, error) { return s.p.store.Get(key) }
func (s *services) StorePut(key string, v []byte) error       { return s.p.store.Put(key, v) }
func (s *services) StoreDelete(key string) error              { return s.p.store.Delete(key) }
func (s *services) SecretGet(key string) ([]byte, bool, error) {
	return s.p.credentials.Get(s.p.Name, key)
}
func (s *services) SecretPut(key string, v []byte) (string, error) {
	return s.p.credentials.Put(s.p.Name, key, v)
}
func (s *services) StoreList(prefix string) ([]string, error) {
	return s.p.store.List(prefix)
}
