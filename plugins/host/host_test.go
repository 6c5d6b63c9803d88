package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/host"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/plugins/source"
)

func launchOne(t *testing.T, c source.Candidate, opts host.Options) (*host.Plugin, error) {
	t.Helper()
	ps, err := host.Launch(context.Background(), []source.Candidate{c}, opts)
	if err != nil {
		return nil, err
	}
	t.Cleanup(ps[0].Kill)
	return ps[0], nil
}

func input(s stage.Name) *stage.Input {
	return &stage.Input{Stage: s, Config: json.RawMessage(`{}`)}
}

// A panic in any stage is reported naming the plugin, the stage and the
// panic's first line, and the plugin process does not outlive the run.
func TestPanicInEachStage(t *testing.T) {
	bin := plugintest.Build(t, "../testdata/panic")
	for _, s := range stage.All {
		t.Run(string(s), func(t *testing.T) {
			out := &plugintest.Buffer{}
			p, err := launchOne(t, candidate(bin), host.Options{Stderr: out, Env: []string{"KUBE_AWS_TEST_PANIC_STAGE=" + string(s)}})
			if err != nil {
				t.Fatal(err)
			}
			for _, before := range stage.All[:s.Index()] {
				if _, err := p.Run(context.Background(), input(before), nil); err != nil {
					t.Fatalf("stage %s before the panicking one failed: %v", before, err)
				}
			}
			_, err = p.Run(context.Background(), input(s), nil)
			mustContain(t, err, "plugin panic", "stage "+string(s), "panic: boom in "+string(s))
			if strings.Contains(err.Error(), "second line") {
				t.Errorf("error quotes more than the panic's first line: %v", err)
			}
			var se *host.StageError
			if !errors.As(err, &se) || se.Plugin != "panic" || se.Stage != s {
				t.Errorf("want a *host.StageError for panic/%s, got %#v", s, err)
			}
			if d := se.Diagnostic(); d.Severity != diag.Fatal || d.Plugin != "panic" || d.Stage != string(s) {
				t.Errorf("diagnostic: %+v", d)
			}
			// The stack goes to kube-aws's log under the plugin's name; it
			// travels on go-plugin's stdio stream, so it may trail the error.
			want := "[panic] panic in stage " + string(s)
			for deadline := time.Now().Add(3 * time.Second); !strings.Contains(out.String(), want) && time.Now().Before(deadline); {
				time.Sleep(10 * time.Millisecond)
			}
			if !strings.Contains(out.String(), want) {
				t.Errorf("panic stack not forwarded; output:\n%s", out)
			}
			pid := p.Pid()
			p.Kill()
			assertGone(t, pid, 3*time.Second)
		})
	}
}

// A panic the SDK cannot recover (on the plugin's own goroutine) crashes the
// process; kube-aws still names plugin, stage and the panic's first line.
func TestCrashOnGoroutine(t *testing.T) {
	bin := plugintest.Build(t, "../testdata/panic")
	p, err := launchOne(t, candidate(bin), host.Options{Stderr: &plugintest.Buffer{},
		Env: []string{"KUBE_AWS_TEST_PANIC_STAGE=render", "KUBE_AWS_TEST_PANIC_MODE=goroutine"}})
	if err != nil {
		t.Fatal(err)
	}
	pid := p.Pid()
	_, err = p.Run(context.Background(), input(stage.Render), nil)
	mustContain(t, err, "plugin panic crashed in stage render", "panic: boom on a goroutine in render")
	assertGone(t, pid, 3*time.Second)
	// A dead plugin says so instead of hanging.
	_, err = p.Run(context.Background(), input(stage.Deploy), nil)
	mustContain(t, err, "plugin panic")
}

// A plugin that never returns is killed at the stage timeout and named.
func TestHangKilledAtStageTimeout(t *testing.T) {
	bin := plugintest.Build(t, "../testdata/hang")
	p, err := launchOne(t, candidate(bin), host.Options{StageTimeout: 300 * time.Millisecond, Stderr: &plugintest.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	pid := p.Pid()
	start := time.Now()
	_, err = p.Run(context.Background(), input(stage.Initialise), nil)
	mustContain(t, err, "plugin hang did not finish stage initialise within 300ms; killed")
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("timing out took %s", took)
	}
	var se *host.StageError
	if !errors.As(err, &se) || !se.Killed {
		t.Errorf("want a StageError with Killed, got %#v", err)
	}
	assertGone(t, pid, 3*time.Second)
}

// Cancelling the caller's context (Ctrl-C in kube-aws) ends the call and the
// plugin at once.
func TestCancelKillsPlugin(t *testing.T) {
	bin := plugintest.Build(t, "../testdata/hang")
	p, err := launchOne(t, candidate(bin), host.Options{Stderr: &plugintest.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	pid := p.Pid()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = p.Run(ctx, input(stage.Render), nil)
	mustContain(t, err, "plugin hang", "stage render", "killed")
	assertGone(t, pid, 3*time.Second)
}

// Output on stdout before the handshake is rejected naming the plugin and
// what it printed.
func TestStdoutBeforeHandshake(t *testing.T) {
	bin := plugintest.Build(t, "../testdata/stdoutgarbage")
	_, err := launchOne(t, candidate(bin), host.Options{Stderr: &plugintest.Buffer{}})
	mustContain(t, err, "plugin stdoutgarbage", bin, `wrote "starting up, hello!" to stdout before the go-plugin handshake`)
}

// A plugin that speaks only an unknown protocol version is rejected saying
// which versions each side speaks.
func TestUnsupportedProtocolVersion(t *testing.T) {
	bin := plugintest.Build(t, "../testdata/badproto")
	_, err := launchOne(t, candidate(bin), host.Options{Stderr: &plugintest.Buffer{}})
	mustContain(t, err, "plugin badproto", bin, "speaks plugin protocol version 99", "this kube-aws speaks [1]")
}

// A file that is not a plugin (a script that exits 1) is rejected clearly,
// quoting what it said.
func TestNotAPlugin(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "notaplugin")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho 'I am a shell script' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := launchOne(t, candidate(script), host.Options{Stderr: &plugintest.Buffer{}})
	mustContain(t, err, "plugin notaplugin", script, "exited before the go-plugin handshake", "not a kube-aws plugin", "I am a shell script")

	// One that prints something else is also rejected.
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho usage: foo\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = launchOne(t, candidate(script), host.Options{Stderr: &plugintest.Buffer{}})
	mustContain(t, err, "plugin notaplugin", `wrote "usage: foo" to stdout`)
}

// Launching several plugins where some fail reports every failure and
// leaves no process running.
func TestLaunchFailureKillsTheRest(t *testing.T) {
	good := plugintest.Build(t, "../testdata/trivial")
	bad := plugintest.Build(t, "../testdata/stdoutgarbage")
	proto := plugintest.Build(t, "../testdata/badproto")
	_, err := host.Launch(context.Background(), []source.Candidate{candidate(good), candidate(bad), candidate(proto)}, host.Options{Stderr: &plugintest.Buffer{}})
	mustContain(t, err, "plugin stdoutgarbage", "plugin badproto")
	if strings.Contains(err.Error(), "plugin trivial") {
		t.Errorf("the good plugin is blamed: %v", err)
	}
	// Every plugin process this test started is gone.
	for _, pid := range childPids(t) {
		assertGone(t, pid, 3*time.Second)
	}
}

// childPids lists the live children of this test process.
func childPids(t *testing.T) []int {
	t.Helper()
	var pids []int
	entries, _ := os.ReadDir("/proc")
	self := os.Getpid()
	for _, e := range entries {
		var pid int
		if _, err := fmtSscan(e.Name(), &pid); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		fields := strings.Fields(s[i+1:])
		if len(fields) > 1 && fields[1] == itoa(self) && fields[0] != "Z" {
			pids = append(pids, pid)
		}
	}
	return pids
}

// A fatal diagnostic comes back stamped with the plugin and stage; a plugin
// with only warnings returns no fatal.
func TestFatalAndWarningDiagnostics(t *testing.T) {
	fatal := plugintest.Run(t, plugintest.Build(t, "../testdata/fatal"), nil)
	ds := fatal.Results[stage.Initialise].Diagnostics
	if !ds.HasFatal() || len(ds) != 2 {
		t.Fatalf("fatal plugin: %v", ds)
	}
	if d := ds[0]; d.Plugin != "fatal" || d.Stage != "initialise" || d.Path != "plugins.fatal.values.issuer" || d.Hint == "" {
		t.Errorf("fatal diagnostic not stamped: %+v", d)
	}

	warn := plugintest.Run(t, plugintest.Build(t, "../testdata/warnonly"), nil)
	for _, s := range []stage.Name{stage.Initialise, stage.Validate} {
		ds := warn.Results[s].Diagnostics
		if ds.HasFatal() || len(ds) != 1 || ds[0].Severity != diag.Warning || ds[0].Plugin != "warnonly" || ds[0].Stage != string(s) {
			t.Errorf("warnonly %s: %v", s, ds)
		}
	}
	if string(warn.Results[stage.Initialise].Values) != `{"ok":true}` {
		t.Errorf("a warning must not drop the result: %s", warn.Results[stage.Initialise].Values)
	}
}

// Calling a stage a plugin does not implement is refused without a call.
func TestStageNotImplemented(t *testing.T) {
	p, err := launchOne(t, candidate(plugintest.Build(t, "../testdata/fatal")), host.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Run(context.Background(), input(stage.Deploy), nil)
	mustContain(t, err, "plugin fatal does not implement stage deploy")
}

// The key-value store is persisted per plugin and survives a restart.
func TestStorePersistsBetweenRuns(t *testing.T) {
	bin := plugintest.Build(t, "../testdata/echo")
	storeDir := t.TempDir()
	for run := 1; run <= 2; run++ {
		out, err := plugintest.RunWith(t, bin, host.Options{StoreDir: storeDir}, nil, stage.Initialise)
		if err != nil {
			t.Fatal(err)
		}
		var v struct{ Runs int }
		_ = json.Unmarshal(out.Results[stage.Initialise].Values, &v)
		if v.Runs != run {
			t.Errorf("run %d: plugin counted %d runs", run, v.Runs)
		}
	}
	b, err := os.ReadFile(filepath.Join(storeDir, "echo.json"))
	if err != nil || !strings.Contains(string(b), `"runs"`) {
		t.Errorf("store file: %s (%v)", b, err)
	}
}

// A SIGKILL of kube-aws takes its plugins with it (Pdeathsig).
func TestHostSIGKILLEndsPlugin(t *testing.T) {
	helper, pid := startHelper(t, "launch", plugintest.Build(t, "../testdata/trivial"))
	if !alive(pid) {
		t.Fatalf("plugin %d not running before the host is killed", pid)
	}
	_ = helper.Process.Signal(syscall.SIGKILL)
	_ = helper.Wait()
	assertGone(t, pid, 3*time.Second)
}

// Without Pdeathsig (another OS, or a plugin started by other means) the SDK
// notices that its parent died and exits.
func TestSDKExitsWhenParentDies(t *testing.T) {
	helper, pid := startHelper(t, "raw", plugintest.Build(t, "../testdata/trivial"))
	if !alive(pid) {
		t.Fatalf("plugin %d not running before the host is killed", pid)
	}
	_ = helper.Process.Signal(syscall.SIGKILL)
	_ = helper.Wait()
	assertGone(t, pid, 3*time.Second)
}

// Ctrl-C and SIGTERM kill every plugin and exit 130 and 143.
func TestCleanupOnSignal(t *testing.T) {
	bin := plugintest.Build(t, "../testdata/trivial")
	for sig, code := range map[syscall.Signal]int{syscall.SIGINT: 130, syscall.SIGTERM: 143} {
		t.Run(sig.String(), func(t *testing.T) {
			helper, pid := startHelper(t, "launch", bin, "KUBE_AWS_TEST_HELPER_SIGNALS=1")
			_ = helper.Process.Signal(sig)
			err := helper.Wait()
			var ee interface{ ExitCode() int }
			if !errors.As(err, &ee) || ee.ExitCode() != code {
				t.Errorf("host exited with %v, want code %d", err, code)
			}
			assertGone(t, pid, 3*time.Second)
		})
	}
}

// A program that never completes the handshake is killed at the start
// timeout and named.
func TestStartTimeout(t *testing.T) {
	script := filepath.Join(t.TempDir(), "sleeper")
	if err := os.WriteFile(script, []byte("#!/bin/sh\nexec sleep 30\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := launchOne(t, candidate(script), host.Options{StartTimeout: 300 * time.Millisecond, Stderr: &plugintest.Buffer{}})
	mustContain(t, err, "plugin sleeper", script, "did not complete the go-plugin handshake within 300ms; killed")
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("start timeout took %s", took)
	}
	for _, pid := range childPids(t) {
		assertGone(t, pid, 3*time.Second)
	}
}

// Launch returns the plugins in the order given, each with its info and the
// negotiated protocol version; an error a plugin returns from a stage names
// the plugin and the stage and leaves the plugin usable.
func TestLaunchOrderAndPluginError(t *testing.T) {
	echo := plugintest.Build(t, "../testdata/echo")
	trivial := plugintest.Build(t, "../testdata/trivial")
	fatal := plugintest.Build(t, "../testdata/fatal")
	ps, err := host.Launch(context.Background(), []source.Candidate{candidate(echo), candidate(trivial), candidate(fatal)}, host.Options{Stderr: &plugintest.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	defer host.KillAll(ps)
	for i, want := range []string{"echo", "trivial", "fatal"} {
		if ps[i].Name != want || ps[i].Info.Name != want || ps[i].ProtocolVersion != 1 {
			t.Errorf("plugin %d: %s, info %s, protocol %d", i, ps[i].Name, ps[i].Info.Name, ps[i].ProtocolVersion)
		}
	}
	if got := ps[1].Info.Stages; len(got) != 4 {
		t.Errorf("trivial implements every stage, says %v", got)
	}

	in := input(stage.Initialise)
	in.Values = map[string]stage.PluginValues{"echo": {Values: json.RawMessage(`"not an object"`)}}
	_, err = ps[0].Run(context.Background(), in, nil)
	mustContain(t, err, "plugin echo failed in stage initialise: decoding values of plugin echo")
	var se *host.StageError
	if !errors.As(err, &se) || se.Killed {
		t.Errorf("a returned error does not kill the plugin: %#v", err)
	}
	in.Values = nil
	if _, err := ps[0].Run(context.Background(), in, nil); err != nil {
		t.Errorf("the plugin is still usable after returning an error: %v", err)
	}
}

// A plugin that reaches AWS is not cut off when kube-aws is interrupted: it
// is asked to stop, and its call ends with its own result (the deploy
// plugin releases its lock on the way out). One that does not stop within
// the grace period is killed.
func TestInterruptLetsAPluginThatReachesAWSFinish(t *testing.T) {
	bin := plugintest.Build(t, "../testdata/graceful")
	p, err := launchOne(t, candidate(bin), host.Options{Stderr: &plugintest.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, err := p.Run(ctx, input(stage.Deploy), nil)
	if err != nil || len(res.Diagnostics) != 1 || !strings.Contains(res.Diagnostics[0].Message, "context canceled; released the lock") {
		t.Fatalf("an interrupted plugin that reaches AWS: %v %v", res, err)
	}

	var out plugintest.Buffer
	p, err = launchOne(t, candidate(bin), host.Options{Stderr: &out, Env: []string{"KUBE_AWS_TEST_IGNORE_CANCEL=1"}, CancelGrace: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	pid := p.Pid()
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = p.Run(ctx, input(stage.Deploy), nil)
	mustContain(t, err, "plugin graceful", "stage deploy", "killed")
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Errorf("killed after %s, before its grace period was over", d)
	}
	assertGone(t, pid, 3*time.Second)
	if !strings.Contains(out.String(), "did not stop within 300ms of being interrupted; killed") {
		t.Errorf("the kill is not logged: %s", out.String())
	}
}
