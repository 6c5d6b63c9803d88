// Package boot is `kube-aws-node boot`, what the launch template's
// bootstrap execs: it keeps the bootstrap's settings for later steps,
// fetches the role's rendered userdata from S3, checks it against the
// sha256 its key names, and applies it with cloud-init's semantics
// (package cloudinit): write_files, then runcmd in order, stopping at the
// first failing command. Every step is a console line and a status object.
package boot

import (
	"context"
	"errors"
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
	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

// maxUserdata bounds the userdata object: far above any rendered one.
const maxUserdata = 16 << 20

// EnvRoot passes a --root other than / on to the steps runcmd starts.
const EnvRoot = "KUBE_AWS_ROOT"

// Options tune boot.
type Options struct {
	// Self is kube-aws-node's own path: its folder goes first on runcmd's
	// PATH, so "kube-aws-node <step>" runs this very program.
	Self string
	// FetchTimeout bounds fetching the userdata (S3 may not answer at once
	// while the network comes up).
	FetchTimeout time.Duration
	// CommandTimeout bounds each runcmd command.
	CommandTimeout time.Duration
}

// Run is the step.
func Run(ctx context.Context, e *agent.Env, o Options) error {
	err := run(ctx, e, o)
	if err != nil {
		var failed *cloudinit.Failed
		step := "boot"
		if errors.As(err, &failed) {
			step = fmt.Sprintf("runcmd[%d]: %s", failed.Index, failed.Command)
		}
		e.Report.Report(ctx, nodeplan.PhaseFailed, step, err)
	}
	return err
}

func run(ctx context.Context, e *agent.Env, o Options) error {
	s := e.Settings
	// Steps run later by systemd have no bootstrap environment.
	if err := keepSettings(e); err != nil {
		return fmt.Errorf("keeping the settings in %s: %w", nodeplan.SettingsEnvPath, err)
	}
	if s.UserDataKey == "" {
		return agent.BadInput(fmt.Errorf("%s is not set: the bootstrap must say where the role's userdata is", nodeplan.EnvUserDataKey))
	}
	sum, ok := nodeplan.KeyDigest(s.UserDataKey)
	if !ok {
		return agent.BadInput(fmt.Errorf("%s=%s is not content-addressed (roles/<role>/userdata/<sha256>): kube-aws-node runs only userdata whose sha256 it can check", nodeplan.EnvUserDataKey, s.UserDataKey))
	}
	e.Report.Report(ctx, nodeplan.PhaseBooting, "fetching the userdata", nil)
	fctx, cancel := context.WithTimeout(ctx, o.FetchTimeout)
	defer cancel()
	var data []byte
	err := retry.Do(fctx, retry.Boot, func(ctx context.Context) error {
		var err error
		data, err = e.Store.GetVerified(ctx, s.UserDataKey, sum, maxUserdata)
		return err
	}, e.Retrying("fetching the userdata"))
	if err != nil {
		return fmt.Errorf("fetching the userdata: %w", err)
	}
	e.Logf("userdata s3://%s/%s: %d bytes, sha256 checked", s.Bucket, s.UserDataKey, len(data))
	u, err := cloudinit.Parse(data)
	if err != nil {
		return agent.BadInput(fmt.Errorf("userdata s3://%s/%s: %w", s.Bucket, s.UserDataKey, err))
	}
	for _, w := range u.Warnings {
		e.Logf("warning: %s", w)
	}

	e.Report.Report(ctx, nodeplan.PhaseBooting, "write_files", nil)
	if err := u.Write(e.Root, func(s string) { e.Logf("%s", s) }); err != nil {
		return err
	}
	tail := &tailBuffer{max: 2048}
	// The goal step (`wait`) may report the machine ready from inside
	// runcmd; from then on the phase stays ready.
	phase := nodeplan.PhaseBooting
	checkReady := func() {
		if last, ok := e.Report.Last(); ok && last.Phase == nodeplan.PhaseReady {
			phase = nodeplan.PhaseReady
		}
	}
	err = u.Run(ctx, cloudinit.RunOptions{
		Env: commandEnv(e, o.Self), Out: io.MultiWriter(e.Stderr, tail), Timeout: o.CommandTimeout,
		Started: func(i int, c cloudinit.Command) {
			checkReady()
			step := fmt.Sprintf("runcmd[%d]: %s", i, c)
			e.Report.Report(ctx, phase, step, nil)
			e.Logf("%s", step)
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

// keepSettings writes the settings to SettingsEnvPath.
func keepSettings(e *agent.Env) error {
	var pairs [][2]string
	for _, kv := range e.Settings.Env() {
		k, v, _ := strings.Cut(kv, "=")
		pairs = append(pairs, [2]string{k, v})
	}
	return fileutil.WriteAtomic(e.Path(nodeplan.SettingsEnvPath), envfile.Encode(pairs), 0o644)
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
