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

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/status"

	"github.com/kube-aws/kube-aws/plugins/protocol"
	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
	"github.com/kube-aws/kube-aws/plugins/source"
)

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
