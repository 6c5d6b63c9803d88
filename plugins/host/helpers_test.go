package host_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kube-aws/kube-aws/plugins/host"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/plugins/protocol"
	"github.com/kube-aws/kube-aws/plugins/source"
)

// TestMain doubles as a helper kube-aws: with $KUBE_AWS_TEST_HELPER set the
// test binary launches one plugin, prints its pid and waits to be killed, so
// tests can kill a real host process and watch what happens to its plugin.
func TestMain(m *testing.M) {
	switch os.Getenv("KUBE_AWS_TEST_HELPER") {
	case "":
		plugintest.Main(m)
	case "launch":
		helperLaunch()
	case "raw":
		helperRaw()
	default:
		fmt.Fprintln(os.Stderr, "unknown KUBE_AWS_TEST_HELPER mode")
		os.Exit(3)
	}
}

func helperLaunch() {
	bin := os.Getenv("KUBE_AWS_TEST_HELPER_PLUGIN")
	if os.Getenv("KUBE_AWS_TEST_HELPER_SIGNALS") != "" {
		host.CleanupOnSignal()
	}
	ps, err := host.Launch(context.Background(), []source.Candidate{{Name: filepath.Base(bin), Path: bin, Dir: filepath.Dir(bin), Source: source.User}}, host.Options{})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	fmt.Printf("pid %d\n", ps[0].Pid())
	select {}
}

// helperRaw starts the plugin without kube-aws's host code (so no Pdeathsig):
// only the SDK's own parent polling can end it when this process dies.
func helperRaw() {
	bin := os.Getenv("KUBE_AWS_TEST_HELPER_PLUGIN")
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(),
		protocol.MagicCookieKey+"="+protocol.MagicCookieValue,
		"PLUGIN_PROTOCOL_VERSIONS=1", "PLUGIN_MIN_PORT=10000", "PLUGIN_MAX_PORT=25000")
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Println("error", err)
		os.Exit(3)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	if strings.Count(line, "|") < 3 {
		fmt.Println("error no handshake:", line)
		os.Exit(3)
	}
	fmt.Printf("pid %d\n", cmd.Process.Pid)
	select {}
}

// startHelper runs the test binary as a helper host and returns it with the
// pid of the plugin it launched.
func startHelper(t *testing.T, mode, plugin string, env ...string) (*exec.Cmd, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "KUBE_AWS_TEST_HELPER="+mode, "KUBE_AWS_TEST_HELPER_PLUGIN="+plugin)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("helper host printed nothing: %v", err)
	}
	var pid int
	if _, err := fmt.Sscanf(line, "pid %d", &pid); err != nil || pid <= 0 {
		t.Fatalf("helper host said %q", line)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	return cmd, pid
}

// alive reports whether a process exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// assertGone fails unless the process ends within d.
func assertGone(t *testing.T, pid int, d time.Duration) {
	t.Helper()
	if pid <= 0 {
		t.Fatalf("no pid to check")
	}
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Errorf("plugin process %d is still running %s later", pid, d)
}

// userPlugin copies a built plugin into dir/plugins/<name>/<name>, the layout
// of a user plugin beside cluster.yaml, and returns its candidate.
func userPlugin(t *testing.T, dir, bin, name string) source.Candidate {
	t.Helper()
	pdir := filepath.Join(dir, "plugins", name)
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(pdir, name)
	copyFile(t, bin, path)
	return source.Candidate{Name: name, Path: path, Dir: pdir, Source: source.User}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

func candidate(bin string) source.Candidate {
	return source.Candidate{Name: filepath.Base(bin), Path: bin, Dir: filepath.Dir(bin), Source: source.User}
}

func mustContain(t *testing.T, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("want an error containing %q, got none", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error does not contain %q:\n%v", p, err)
		}
	}
}

func fmtSscan(s string, pid *int) (int, error) { return fmt.Sscan(s, pid) }

func itoa(i int) string { return strconv.Itoa(i) }
