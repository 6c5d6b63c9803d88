package host

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/protocol"
	"github.com/kube-aws/kube-aws/plugins/source"
)

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
