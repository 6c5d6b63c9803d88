// Package boot is `kube-aws-node boot`, what the launch template's
// bootstrap execs: it keeps the bootstrap's settings for later steps,
// fetches the role's rendered userdata from S3, checks it against the
// sha256 its key names, and applies it with cloud-init's semantics
// (package cloudinit): write_files, then runcmd in order, stopping at the
// first failing command. Every step is a console line and a status object.
package boot

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/cloudinit"
	"github.com/kube-aws/kube-aws/node/envfile"
	"github.com/kube-aws/kube-aws/node/retry"
	"github.com/kube-aws/kube-aws/node/step"
	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

// maxUserdata bounds the userdata object: far above any rendered one.
const maxUserdata = 16 << 20

// EnvRoot passes a --root other than / on to the steps runcmd starts.
const EnvRoot = "KUBE_AWS_ROOT"

// Step is the step.
type Step struct {
	// Self is kube-aws-node's own path: its folder goes first on runcmd's
	// PATH, so "kube-aws-node <step>" runs this very program. The running
	// executable when empty.
	Self string
	// FetchTimeout bounds fetching the userdata (S3 may not answer at once
	// while the network comes up).
	FetchTimeout time.Duration
	// CommandTimeout bounds each runcmd command.
	CommandTimeout time.Duration
}

// New is the step as kube-aws-node runs it.
func New() *Step { return &Step{} }

func (*Step) Name() string { return nodeplan.StepBoot }

func (s *Step) Flags(fs *flag.FlagSet) {
	fs.DurationVar(&s.FetchTimeout, "fetch-timeout", 5*time.Minute, "how long to try fetching the userdata")
	fs.DurationVar(&s.CommandTimeout, "command-timeout", 30*time.Minute, "how long each runcmd command may take")
}

// FreshFacts: the machine (or the disk it booted from) may be new.
func (*Step) FreshFacts() bool { return true }

// settingsFile is the content of nodeplan.SettingsEnvPath.
type settingsFile []byte

// Check compares the kept settings with the bootstrap's, and fetches,
// checks and parses the userdata: applying it (write_files, then runcmd)
// is the change, at every boot.
func (s *Step) Check(ctx context.Context, e *agent.Env) (step.Changes, error) {
	c, err := s.check(ctx, e)
	return c, failed(ctx, e, err)
}

func (s *Step) check(ctx context.Context, e *agent.Env) (step.Changes, error) {
	var changes step.Changes
	// Steps run later by systemd have no bootstrap environment.
	if kept := settings(e); !sameFile(e.Path(nodeplan.SettingsEnvPath), kept) {
		changes = append(changes, step.Change{Action: "write", Target: nodeplan.SettingsEnvPath, Detail: "the bootstrap's settings, for the steps systemd runs", Data: kept})
	}
	set := e.Settings
	if set.UserDataKey == "" {
		return nil, agent.BadInput(fmt.Errorf("%s is not set: the bootstrap must say where the role's userdata is", nodeplan.EnvUserDataKey))
	}
	sum, ok := nodeplan.KeyDigest(set.UserDataKey)
	if !ok {
		return nil, agent.BadInput(fmt.Errorf("%s=%s is not content-addressed (roles/<role>/userdata/<sha256>): kube-aws-node runs only userdata whose sha256 it can check", nodeplan.EnvUserDataKey, set.UserDataKey))
	}
	e.Report.Report(ctx, nodeplan.PhaseBooting, "fetching the userdata", nil)
	fctx, cancel := context.WithTimeout(ctx, s.FetchTimeout)
	defer cancel()
	var data []byte
	err := retry.Do(fctx, retry.Boot, func(ctx context.Context) error {
		var err error
		data, err = e.Store.GetVerified(ctx, set.UserDataKey, sum, maxUserdata)
		return err
	}, e.Retrying("fetching the userdata"))
	if err != nil {
		return nil, fmt.Errorf("fetching the userdata: %w", err)
	}
	where := fmt.Sprintf("userdata s3://%s/%s", set.Bucket, set.UserDataKey)
	e.Logf("%s: %d bytes, sha256 checked", where, len(data))
	u, err := cloudinit.Parse(data)
	if err != nil {
		return nil, agent.BadInput(fmt.Errorf("%s: %w", where, err))
	}
	for _, w := range u.Warnings {
		e.Logf("warning: %s", w)
	}
	changes = append(changes, step.Change{Action: "apply", Target: where, Detail: fmt.Sprintf("%d files, %d commands", len(u.WriteFiles), len(u.RunCmd)), Data: u})
	for _, f := range u.WriteOrder() {
		verb := "write"
		if f.Append {
			verb = "append to"
		}
		changes = append(changes, step.Change{Action: verb, Target: f.Path, Detail: fmt.Sprintf("%d bytes, mode %04o", len(f.Content), f.Mode)})
	}
	for i, c := range u.RunCmd {
		changes = append(changes, step.Change{Action: "run", Target: fmt.Sprintf("runcmd[%d]", i), Detail: c.String()})
	}
	return changes, nil
}

// Apply keeps the settings, then applies the userdata: write_files, then
// runcmd in order, stopping at the first failing command.
func (s *Step) Apply(ctx context.Context, e *agent.Env, changes step.Changes) error {
	return failed(ctx, e, s.apply(ctx, e, changes))
}

func (s *Step) apply(ctx context.Context, e *agent.Env, changes step.Changes) error {
	for _, c := range changes {
		switch d := c.Data.(type) {
		case settingsFile:
			if err := fileutil.WriteAtomic(e.Path(nodeplan.SettingsEnvPath), d, 0o644); err != nil {
				return fmt.Errorf("keeping the settings in %s: %w", nodeplan.SettingsEnvPath, err)
			}
		case *cloudinit.Userdata:
			if err := s.run(ctx, e, d); err != nil {
				return err
			}
		}
	}
	return nil
}

// failed reports a failure of boot in the status: the runcmd command that
// failed, or boot.
func failed(ctx context.Context, e *agent.Env, err error) error {
	if err != nil {
		var f *cloudinit.Failed
		where := "boot"
		if errors.As(err, &f) {
			where = fmt.Sprintf("runcmd[%d]: %s", f.Index, f.Command)
		}
		e.Report.Report(ctx, nodeplan.PhaseFailed, where, err)
	}
	return err
}

func (s *Step) run(ctx context.Context, e *agent.Env, u *cloudinit.Userdata) error {
	self := s.Self
	if self == "" {
		var err error
		if self, err = os.Executable(); err != nil {
			return err
		}
	}
	e.Report.Report(ctx, nodeplan.PhaseBooting, "write_files", nil)
	if err := u.Write(e.Root, func(s string) { e.Logf("%s", s) }); err != nil {
		return err
	}
	tail := &tailBuffer{max: 2048}
	// The `wait` step may report the machine ready from inside
	// runcmd; from then on the phase stays ready.
	phase := nodeplan.PhaseBooting
	checkReady := func() {
		if last, ok := e.Report.Last(); ok && last.Phase == nodeplan.PhaseReady {
			phase = nodeplan.PhaseReady
		}
	}
	err := u.Run(ctx, cloudinit.RunOptions{
		Env: commandEnv(e, self), Out: io.MultiWriter(e.Stderr, tail), Timeout: s.CommandTimeout,
		Started: func(i int, c cloudinit.Command) {
			checkReady()
			where := fmt.Sprintf("runcmd[%d]: %s", i, c)
			e.Report.Report(ctx, phase, where, nil)
			e.Logf("%s", where)
			tail.Reset()
		},
	})
	if err != nil {
		var failed *cloudinit.Failed
		if errors.As(err, &failed) {
			if t := strings.TrimSpace(tail.String()); t != "" {
				failed.Err = fmt.Errorf("%w; its last output:\n%s", failed.Err, t)
			}
		}
		return err
	}
	checkReady()
	if phase != nodeplan.PhaseReady {
		phase = nodeplan.PhaseBooted
	}
	e.Report.Report(ctx, phase, "runcmd done", nil)
	e.Logf("userdata applied: %d files, %d commands", len(u.WriteFiles), len(u.RunCmd))
	return nil
}

// settings is the content of nodeplan.SettingsEnvPath.
func settings(e *agent.Env) settingsFile {
	var pairs [][2]string
	for _, kv := range e.Settings.Env() {
		k, v, _ := strings.Cut(kv, "=")
		pairs = append(pairs, [2]string{k, v})
	}
	return envfile.Encode(pairs)
}

// sameFile reports whether the file at p holds b.
func sameFile(p string, b []byte) bool {
	old, err := os.ReadFile(p)
	return err == nil && bytes.Equal(old, b)
}

// commandEnv is runcmd's environment: boot's own (the bootstrap's
// settings included), with kube-aws-node's folder first on PATH.
func commandEnv(e *agent.Env, self string) []string {
	env := os.Environ()
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	if self != "" {
		path = filepath.Dir(self) + string(os.PathListSeparator) + path
	}
	out := make([]string, 0, len(env)+2)
	for _, kv := range env {
		if !strings.HasPrefix(kv, "PATH=") && !strings.HasPrefix(kv, EnvRoot+"=") {
			out = append(out, kv)
		}
	}
	out = append(out, "PATH="+path)
	if e.Root != "/" {
		out = append(out, EnvRoot+"="+e.Root)
	}
	return out
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) Reset() {
	t.mu.Lock()
	t.b = t.b[:0]
	t.mu.Unlock()
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
