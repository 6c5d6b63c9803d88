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
	"slices"
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
	"github.com/kube-aws/kube-aws/plugins/protocol"
	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
	"github.com/kube-aws/kube-aws/plugins/source"
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
	Lock *source.Lockfile
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

// Plugin is a started plugin that has answered GetInfo. Its process is its
// own, or shared with the other built-in plugins of one executable (see
// Launch).
type Plugin struct {
	source.Candidate
	// Info is what the plugin said about itself.
	Info stage.PluginInfo
	// ProtocolVersion is the protocol version negotiated with the plugin.
	ProtocolVersion int

	proc     *process // its options are the plugin's
	rpc      protocol.Plugin
	store    *Store
	services *services
	// credentials are shared by every plugin of the run.
	credentials *Credentials

	mu   sync.Mutex
	dead error // why the plugin can no longer be called
}

// Store is the plugin's key-value store.
func (p *Plugin) Store() *Store { return p.store }

// Pid is the plugin's process id (0 if it never started).
func (p *Plugin) Pid() int { return p.proc.pid() }

// Exited reports whether the plugin process has ended.
func (p *Plugin) Exited() bool { return p.proc.client.Exited() }

// process is one started plugin executable and the plugins it serves: one,
// or every built-in plugin of an executable that serves several
// (sdk.ServeAll).
type process struct {
	// label names the process in its output lines and errors.
	label   string
	opts    Options
	client  *plugin.Client
	sink    *stderrSink
	writers []*lineWriter

	killOnce sync.Once
	mu       sync.Mutex
	proc     *os.Process // set once the process has started
	members  []*Plugin
}

func (pr *process) pid() int {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.proc != nil {
		return pr.proc.Pid
	}
	return 0
}

// sigkill ends the process at once, without go-plugin's graceful shutdown.
func (pr *process) sigkill() {
	pr.mu.Lock()
	proc := pr.proc
	pr.mu.Unlock()
	if proc != nil {
		_ = proc.Kill()
	}
}

// live tracks every started plugin process so that CleanupOnSignal can end
// them all.
var live = struct {
	sync.Mutex
	m map[*process]struct{}
}{m: map[*process]struct{}{}}

// Launch starts the candidates concurrently, does the go-plugin handshake and
// GetInfo with each, and returns them in input order. If any fails, every
// started plugin is killed and every failure is returned (errors.Join), each
// naming the plugin, its path and what to do.
//
// Built-in candidates whose executables are one file (the built-in folder
// links each name to one executable that serves them all) share one
// process: a render starts one process for the built-ins instead of one
// each, and each started process costs about 10 ms of CPU
// (docs/benchmarks.md). Every other candidate gets a process of its own.
func Launch(ctx context.Context, cands []source.Candidate, opts Options) ([]*Plugin, error) {
	opts = opts.withDefaults()
	out := make([]*Plugin, len(cands))
	errs := make([]error, len(cands))
	// Launching is mostly waiting on exec and the child's start-up, so a few
	// per CPU keeps both cores busy without a thundering herd.
	sem := make(chan struct{}, runtime.GOMAXPROCS(0)*4)
	var wg sync.WaitGroup
	for _, group := range byExecutable(cands) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			members := make([]source.Candidate, len(group))
			for i, at := range group {
				members[i] = cands[at]
			}
			ps, es := launch(ctx, members, opts)
			for i, at := range group {
				out[at], errs[at] = ps[i], es[i]
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		KillAll(out)
		return nil, err
	}
	return out, nil
}

// byExecutable groups the candidates that share a process: built-ins whose
// executables are the same file. Each group lists indexes into cands, in
// order; every other candidate is a group of its own.
func byExecutable(cands []source.Candidate) [][]int {
	var (
		groups [][]int
		shared []os.FileInfo // the executable of each group that may take more
		of     []int         // the group of each entry of shared
	)
	for i, c := range cands {
		var fi os.FileInfo
		if c.Source == source.Builtin && c.Problem == "" {
			fi, _ = os.Stat(c.Path)
		}
		if fi != nil {
			if j := slices.IndexFunc(shared, func(o os.FileInfo) bool { return os.SameFile(o, fi) }); j >= 0 {
				groups[of[j]] = append(groups[of[j]], i)
				continue
			}
			shared, of = append(shared, fi), append(of, len(groups))
		}
		groups = append(groups, []int{i})
	}
	return groups
}

func hostLogger() hclog.Logger {
	if os.Getenv("KUBE_AWS_DEBUG") != "" {
		return hclog.New(&hclog.LoggerOptions{Name: "plugin", Level: hclog.Debug, Output: os.Stderr})
	}
	// Off also makes go-plugin skip parsing every stderr line as JSON.
	return hclog.New(&hclog.LoggerOptions{Name: "plugin", Level: hclog.Off, Output: io.Discard})
}

// launch starts one process for cands (one candidate, or built-ins that
// share an executable) and returns each plugin or why it failed, in order.
// A failure to start is reported once, on the first candidate.
func launch(ctx context.Context, cands []source.Candidate, opts Options) ([]*Plugin, []error) {
	out := make([]*Plugin, len(cands))
	errs := make([]error, len(cands))
	c := cands[0]
	if err := ctx.Err(); err != nil {
		errs[0] = fmt.Errorf("%s (%s) not started: %w", who(cands), c.Path, err)
		return out, errs
	}
	if c.Problem != "" {
		errs[0] = fmt.Errorf("plugin %s cannot be started: %s", c.Name, c.Problem)
		return out, errs
	}
	secure, want, err := checkLock(c, opts)
	if err != nil {
		errs[0] = err
		return out, errs
	}

	label, exe := c.Name, c.Path
	if len(cands) > 1 {
		// The shared executable runs under its own name, which is what ps
		// and the output lines show, not under one plugin's link.
		if real, err := filepath.EvalSymlinks(c.Path); err == nil {
			label, exe = filepath.Base(real), real
		}
	}
	pr := &process{label: label, opts: opts, sink: newStderrSink(label, opts.Stderr)}
	raw, synced := pr.sink.writer(), pr.sink.writer()
	pr.writers = []*lineWriter{raw, synced}
	cmd := exec.Command(exe)
	cmd.SysProcAttr = sysProcAttr()
	// go-plugin would append kube-aws's environment after ours, and the last
	// value wins; build it here so Options.Env overrides.
	cmd.Env = append(os.Environ(), opts.Env...)
	pr.client = plugin.NewClient(&plugin.ClientConfig{
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
	for i, c := range cands {
		p := &Plugin{Candidate: c, proc: pr}
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
		out[i] = p
	}
	pr.members = out
	live.Lock()
	live.m[pr] = struct{}{}
	live.Unlock()

	fail := func(at int, err error) ([]*Plugin, []error) {
		pr.kill()
		errs[at] = err
		return make([]*Plugin, len(cands)), errs
	}
	if _, err := pr.client.Start(); err != nil {
		// Killing waits until go-plugin has drained the process's stderr,
		// which usually says why it failed: the error quotes it after.
		pr.kill()
		return fail(0, pr.startError(cands, err, want))
	}
	pr.mu.Lock()
	pr.proc = cmd.Process
	pr.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return fail(0, fmt.Errorf("%s (%s) stopped during start-up: %w", who(cands), c.Path, err))
	}
	for i, p := range out {
		rpc, err := protocol.Dispense(pr.client, p.Name)
		if err != nil {
			return fail(i, fmt.Errorf("plugin %s (%s): connecting after the handshake: %v; run with KUBE_AWS_DEBUG=1 for details", p.Name, p.Path, err))
		}
		p.mu.Lock()
		p.rpc = rpc
		p.mu.Unlock()
		p.ProtocolVersion = pr.client.NegotiatedVersion()
	}

	ictx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	var wg sync.WaitGroup
	failed := make([]bool, len(out)) // GetInfo answered with an error
	for i, p := range out {
		wg.Add(1)
		go func() {
			defer wg.Done()
			info, err := p.rpc.GetInfo(ictx, p.ProtocolVersion, opts.HostVersion)
			switch {
			case err == nil:
				p.Info = info
			case expired(ictx) && ctx.Err() == nil:
				errs[i] = fmt.Errorf("plugin %s (%s) did not answer GetInfo within %s; killed", p.Name, p.Path, opts.StartTimeout)
			default:
				errs[i] = fmt.Errorf("plugin %s (%s) failed to describe itself (GetInfo): %s", p.Name, p.Path, status.Convert(err).Message())
				failed[i] = true
			}
		}()
	}
	wg.Wait()
	if slices.ContainsFunc(errs, func(err error) bool { return err != nil }) {
		// As above: the stderr is quoted once the process is gone.
		pr.kill()
		for i, f := range failed {
			if f {
				errs[i] = fmt.Errorf("%w%s", errs[i], pr.stderrNote())
			}
		}
		return make([]*Plugin, len(cands)), errs
	}
	return out, errs
}

// who names the plugins of one process in an error.
func who(cands []source.Candidate) string {
	if len(cands) == 1 {
		return "plugin " + cands[0].Name
	}
	names := make([]string, len(cands))
	for i, c := range cands {
		names[i] = c.Name
	}
	return "built-in plugins " + strings.Join(names, ", ")
}

// checkLock checks a candidate against plugins.lock before it starts
// (plugins/source decides what the lock says), and returns go-plugin's
// SecureConfig for the executable's hash and that hash.
func checkLock(c source.Candidate, opts Options) (*plugin.SecureConfig, string, error) {
	sum, err := opts.Lock.CheckBeforeStart(c)
	if err != nil || sum == nil {
		return nil, "", err
	}
	return &plugin.SecureConfig{Checksum: sum, Hash: sha256.New()}, hex.EncodeToString(sum), nil
}

var (
	reUnrecognized = regexp.MustCompile(`Unrecognized remote plugin message: ([^\n]*)`)
	rePluginProto  = regexp.MustCompile(`Plugin version: (\d+)`)
)

// startError turns go-plugin's start-up errors into ones that say which
// plugin, what went wrong and what to do.
func (pr *process) startError(cands []source.Candidate, err error, want string) error {
	c, w := cands[0], who(cands)
	msg := err.Error()
	switch {
	case errors.Is(err, plugin.ErrChecksumsDoNotMatch):
		have, herr := fileutil.SHA256(c.Path)
		if herr != nil {
			have = "unreadable: " + herr.Error()
		}
		return source.MismatchError(c, want, have)
	case strings.Contains(msg, "error verifying checksum"):
		return fmt.Errorf("%s (%s) could not be checked against plugins.lock: %v", w, c.Path, err)
	case strings.Contains(msg, "incompatible API version with plugin"):
		got := "?"
		if m := rePluginProto.FindStringSubmatch(msg); m != nil {
			got = m[1]
		}
		return fmt.Errorf("%s (%s) speaks plugin protocol version %s, but this kube-aws speaks %v; use a build of the plugin for protocol %d (rebuild it against this kube-aws's plugins/sdk) or a kube-aws that speaks version %s",
			w, c.Path, got, protocol.SupportedVersions, protocol.SupportedVersions[len(protocol.SupportedVersions)-1], got)
	case strings.Contains(msg, "unsupported plugin protocol"):
		return fmt.Errorf("%s (%s) serves go-plugin's net/rpc, but kube-aws plugins must serve gRPC: build it with kube-aws's plugins/sdk", w, c.Path)
	case strings.Contains(msg, "incompatible core API version"):
		return fmt.Errorf("%s (%s) uses an incompatible version of hashicorp/go-plugin: rebuild it against this kube-aws's plugins/sdk", w, c.Path)
	case strings.Contains(msg, "timeout while waiting for plugin to start"):
		return fmt.Errorf("%s (%s) did not complete the go-plugin handshake within %s; killed. Is it a kube-aws plugin? Raise the start timeout if it is slow to start%s",
			w, c.Path, pr.opts.StartTimeout, pr.stderrNote())
	case strings.Contains(msg, "plugin exited before we could connect"),
		strings.Contains(msg, "Failed to read any lines from plugin's stdout"):
		return fmt.Errorf("%s (%s) exited before the go-plugin handshake: it is not a kube-aws plugin, or it failed at start-up; remove it from %s if it is not a plugin%s",
			w, c.Path, c.Dir, pr.stderrNote())
	}
	if m := reUnrecognized.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("%s (%s) wrote %q to stdout before the go-plugin handshake; a plugin must not print to stdout before sdk.Serve (log to stderr instead), and a file that is not a kube-aws plugin does not belong in %s",
			w, c.Path, m[1], c.Dir)
	}
	return fmt.Errorf("%s (%s) failed to start: %v%s", w, c.Path, err, pr.stderrNote())
}

// stderrNote quotes the end of the plugin's stderr, which usually says why
// it failed.
func (pr *process) stderrNote() string {
	lines := pr.sink.lastLines(5)
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
	ctx, cancel := context.WithTimeout(ctx, p.proc.opts.StartTimeout)
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
	sctx, cancel := context.WithTimeout(base, p.proc.opts.StageTimeout)
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
	actx, done := context.WithTimeout(context.Background(), p.proc.opts.StartTimeout)
	err := protocol.Cancel(actx, p.rpc)
	done()
	if err != nil {
		cut()
		return
	}
	t := time.NewTimer(p.proc.opts.CancelGrace)
	defer t.Stop()
	select {
	case <-returned:
	case <-t.C:
		p.proc.sink.line(fmt.Sprintf("plugin %s did not stop within %s of being interrupted; killed", p.Name, p.proc.opts.CancelGrace))
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
		p.killProcess(fmt.Errorf("plugin %s was killed when stage %s was cancelled", p.Name, st))
		se.Killed = true
		cause := parent.Err()
		if cause == nil {
			cause = context.DeadlineExceeded
		}
		se.Message = fmt.Sprintf("plugin %s was stopped in stage %s: %v; killed", p.Name, st, cause)
	case expired(sctx):
		p.killProcess(fmt.Errorf("plugin %s was killed after it did not finish stage %s within %s", p.Name, st, p.proc.opts.StageTimeout))
		se.Killed = true
		se.Message = fmt.Sprintf("plugin %s did not finish stage %s within %s; killed", p.Name, st, p.proc.opts.StageTimeout)
		se.Hint = "report the hang to the plugin's author, or raise the stage timeout if it is merely slow"
	case p.crashed(err):
		// Kill waits until go-plugin has drained the plugin's stderr, so the
		// panic line is there to quote.
		p.killProcess(fmt.Errorf("plugin %s crashed in stage %s", p.Name, st))
		se.Killed = true
		why := p.proc.sink.panicLine()
		if why == "" {
			why = "the process exited: " + status.Convert(err).Message()
		}
		se.Message = fmt.Sprintf("plugin %s crashed in stage %s: %s", p.Name, st, why)
		se.Hint = "this is a bug in the plugin: report it to its author with the plugin's stderr above"
	case code == codes.Canceled || code == codes.DeadlineExceeded || code == codes.Unavailable || code == codes.Internal:
		// The connection, not the plugin, failed: its state is unknown, so
		// it is not called again.
		p.killProcess(fmt.Errorf("plugin %s was killed after losing its connection in stage %s", p.Name, st))
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
		if p.proc.client.Exited() {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

// Kill stops the plugin: its process is ended, once every plugin it
// serves has been stopped, and waited for. It is safe to call more than once
// and from several goroutines.
func (p *Plugin) Kill() {
	p.markDead(fmt.Errorf("plugin %s (%s) was already stopped", p.Name, p.Path))
	if p.proc.allDead() {
		p.proc.kill()
	}
}

// killProcess ends the plugin's process at once (a hang, a crash, a lost
// connection): every plugin it serves can no longer be called.
func (p *Plugin) killProcess(why error) {
	p.markDead(why)
	for _, m := range p.proc.members {
		if m != p {
			m.markDead(fmt.Errorf("plugin %s was stopped because plugin %s, which shares its process, was: %v", m.Name, p.Name, why))
		}
	}
	p.proc.kill()
}

func (p *Plugin) markDead(why error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead == nil {
		p.dead = why
	}
}

func (p *Plugin) isDead() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dead != nil
}

func (p *Plugin) started() (protocol.Plugin, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rpc, p.rpc != nil
}

func (pr *process) allDead() bool {
	for _, m := range pr.members {
		if !m.isDead() {
			return false
		}
	}
	return true
}

// kill ends the process and waits until it is gone. It is safe to call more
// than once and from several goroutines.
func (pr *process) kill() {
	pr.killOnce.Do(func() {
		var (
			rpcs []protocol.Plugin
			busy bool
		)
		for _, m := range pr.members {
			if rpc, ok := m.started(); ok {
				rpcs = append(rpcs, rpc)
			}
			busy = busy || m.services.busy()
		}
		// A plugin that is mid-call (hung, or being cancelled) would
		// only delay go-plugin's graceful shutdown: SIGKILL it first.
		if len(rpcs) == 0 || busy {
			pr.sigkill()
		}
		// A plugin killed by a signal cannot remove its socket file;
		// remember where it is to remove it for the plugin.
		var sock string
		if rc := pr.client.ReattachConfig(); rc != nil && rc.Addr != nil && rc.Addr.Network() == "unix" {
			sock = rc.Addr.String()
		}
		for _, rpc := range rpcs {
			protocol.Settle(rpc)
		}
		pr.client.Kill()
		if sock != "" {
			_ = os.Remove(sock) // usually gone already: the plugin removes it on a clean exit
		}
		for _, w := range pr.writers {
			w.flush()
		}
		live.Lock()
		delete(live.m, pr)
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
	if len(s.p.proc.members) > 1 {
		s.p.proc.sink.line(fmt.Sprintf("%s: %s: %s", s.p.Name, ev.Kind, ev.Message))
	} else {
		s.p.proc.sink.line(fmt.Sprintf("%s: %s", ev.Kind, ev.Message))
	}
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
