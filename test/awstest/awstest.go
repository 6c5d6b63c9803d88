// Package awstest starts moto, a real AWS API emulator, in server mode on
// 127.0.0.1 for tests, benchmarks and the demo. kube-aws has no AWS account to
// test against: every AWS call in tests goes over HTTP to a moto server that
// this package started and stops again.
//
// The server is moto with the project's patches (motoaws.py, embedded here):
// where kube-aws's rolls and pod IAM roles depend on AWS, it behaves as AWS
// does (Auto Scaling groups updated in place by CloudFormation, each
// instance's launch template version, termination lifecycle hooks; IAM OIDC
// providers in stacks, and STS verifying web identity tokens). Its python is looked up in
// $KUBE_AWS_VENV/bin, else in <repo root>/.venv/bin (`make venv` creates it).
package awstest

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"

	"github.com/kube-aws/kube-aws/test/localport"
)

// Region is the region tests use; moto accepts any.
const Region = "us-east-1"

// AccessKeyID and SecretAccessKey are fixed test credentials. moto does not
// check signatures; fixed values keep the user's real credentials out of tests.
const (
	AccessKeyID     = "AKIAKUBEAWSTEST00000"
	SecretAccessKey = "kube-aws-test-secret-key-not-real"
)

// Credentials returns a provider of the fixed test credentials.
func Credentials() aws.CredentialsProvider {
	return credentials.NewStaticCredentialsProvider(AccessKeyID, SecretAccessKey, "")
}

// motoaws is the launcher: it patches moto and runs moto's server main with
// moto_server's arguments. It refuses a moto other than the one it was
// written for (requirements-dev.txt), and says why on stderr.
//
//go:embed motoaws.py
var motoaws []byte

// PythonPath finds the python of the project's virtualenv (VenvBin), which
// has moto[server].
func PythonPath() (string, error) {
	p, err := VenvBin("python")
	if err != nil {
		return "", fmt.Errorf("the project's python with moto not found (%v): run `make venv` in the repository root, or set KUBE_AWS_VENV to a virtualenv with requirements-dev.txt installed", err)
	}
	return p, nil
}

// motoCommand runs the launcher with args (moto_server's) by py. The
// launcher is read from stdin: no file is written, and none another user
// of a shared temporary folder could change under a root test.
func motoCommand(py string, args ...string) *exec.Cmd {
	cmd := exec.Command(py, append([]string{"-"}, args...)...)
	cmd.Stdin = bytes.NewReader(motoaws)
	return cmd
}

// VenvBin finds a program of the project's Python virtualenv (python with
// moto and grpcio, cfn-lint): $KUBE_AWS_VENV/bin/<name>, else <repo root>/.venv/bin/<name>,
// where the repo root is the nearest folder above the working directory
// holding go.mod (`make venv` creates it).
func VenvBin(name string) (string, error) {
	var tried []string
	if v := os.Getenv("KUBE_AWS_VENV"); v != "" {
		p := filepath.Join(v, "bin", name)
		if isExec(p) {
			return p, nil
		}
		tried = append(tried, p)
	}
	if root, err := RepoRoot(); err == nil {
		p := filepath.Join(root, ".venv", "bin", name)
		if isExec(p) {
			return p, nil
		}
		tried = append(tried, p)
	}
	return "", fmt.Errorf("looked at %v", tried)
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// RepoRoot is the folder of go.mod above the working directory: a test runs
// from its package folder (go test) or the repository (a built test binary).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// StartServer starts the patched moto (motoaws.py) on 127.0.0.1 on a free
// port and waits until it answers. stop kills its whole process group (moto
// may fork) and is safe to call more than once.
func StartServer() (url string, stop func(), err error) {
	return StartServerEnv(nil)
}

// StartServerEnv is StartServer with env (KEY=value) added to moto's
// environment: a test runs moto under a faked wall clock this way.
func StartServerEnv(env []string) (url string, stop func(), err error) {
	py, err := PythonPath()
	if err != nil {
		return "", nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		url, stop, err := startOnce(py, env)
		if err == nil {
			return url, stop, nil
		}
		lastErr = err
	}
	return "", nil, lastErr
}

func startOnce(py string, env []string) (string, func(), error) {
	port, err := localport.Free()
	if err != nil {
		return "", nil, fmt.Errorf("finding a free port for moto: %w", err)
	}
	cmd := motoCommand(py, "-H", "127.0.0.1", "-p", strconv.Itoa(port))
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	// Its own process group, so that stop reaches every child, and so that a
	// Ctrl-C meant for the test is not what kills moto half way.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	logf, err := os.CreateTemp("", "moto-*.log")
	if err != nil {
		return "", nil, err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		os.Remove(logf.Name())
		return "", nil, fmt.Errorf("starting moto (%s, test/awstest/motoaws.py): %w", py, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()

	var once sync.Once
	stop := func() {
		once.Do(func() {
			pids.Delete(fmt.Sprintf("http://127.0.0.1:%d", port))
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-exited:
			case <-time.After(3 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-exited
			}
			logf.Close()
			os.Remove(logf.Name())
		})
	}

	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	pids.Store(url, cmd.Process.Pid)
	deadline := time.Now().Add(30 * time.Second)
	client := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			out, _ := os.ReadFile(logf.Name())
			stop()
			return "", nil, fmt.Errorf("moto (test/awstest/motoaws.py) exited before it was ready:\n%s", out)
		default:
		}
		// /moto-api/ is moto's own dashboard: a 200 there means the server
		// and every backend are loaded.
		resp, err := client.Get(url + "/moto-api/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode < 500 {
				return url, stop, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	return "", nil, fmt.Errorf("moto on %s did not answer within 30s", url)
}

// pids maps the URL of each running moto to its process id, for CPUTime.
var pids sync.Map

// PID returns the process id of the moto serving url, if this process
// started it (teardown tests check that it is gone).
func PID(url string) (int, bool) {
	v, ok := pids.Load(url)
	if !ok {
		return 0, false
	}
	return v.(int), true
}

// CPUTime returns the CPU time (user + system) the moto serving url has
// used so far. moto is one Python process: benchmarks use it to tell the
// emulator's own cost from kube-aws's.
func CPUTime(url string) (time.Duration, error) {
	v, ok := pids.Load(url)
	if !ok {
		return 0, fmt.Errorf("no moto started by this process serves %s", url)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", v.(int)))
	if err != nil {
		return 0, fmt.Errorf("reading moto's CPU time: %w", err)
	}
	// Fields after the parenthesised command name; utime and stime are
	// the 14th and 15th fields of the whole line, in clock ticks (100/s).
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0, fmt.Errorf("unexpected /proc stat line %q", s)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("unexpected /proc stat line %q", s)
	}
	return time.Duration(ut+st) * 10 * time.Millisecond, nil
}

// Start starts moto for one test and stops it at the end of the test. It
// fails the test (never skips it) when moto is not installed.
func Start(t testing.TB) string {
	t.Helper()
	url, stop, err := StartServer()
	if err != nil {
		t.Fatalf("starting moto: %v", err)
	}
	t.Cleanup(stop)
	return url
}

// Reset drops every resource moto holds, so that one server can serve
// several independent tests in sequence.
func Reset(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/moto-api/reset", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("resetting moto at %s: %w", url, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("resetting moto at %s: HTTP %d", url, resp.StatusCode)
	}
	return nil
}

// WarmUp makes moto load its CloudFormation backend, which imports every
// other backend and takes seconds on first use. Tests and benchmarks call it
// once after StartServer so that no single measured call pays for it.
func WarmUp(ctx context.Context, url string) error {
	cfg := aws.Config{Region: Region, Credentials: Credentials()}
	c := cloudformation.NewFromConfig(cfg, func(o *cloudformation.Options) { o.BaseEndpoint = aws.String(url) })
	if _, err := c.ListStacks(ctx, &cloudformation.ListStacksInput{}); err != nil {
		return fmt.Errorf("warming up moto at %s: %w", url, err)
	}
	return nil
}

// CLIEnv is the environment a test runs the kube-aws binary in against moto:
// the test's own without any AWS_ or KUBE_AWS_ setting (neither the user's
// AWS settings nor another test's overrides), with CI set, the fixed test
// credentials, no AWS config files and no instance metadata lookup.
func CLIEnv() []string {
	var env []string
	for _, e := range os.Environ() {
		k, _, _ := strings.Cut(e, "=")
		if strings.HasPrefix(k, "AWS_") || strings.HasPrefix(k, "KUBE_AWS_") {
			continue
		}
		env = append(env, e)
	}
	return append(env, "CI=1",
		"AWS_ACCESS_KEY_ID="+AccessKeyID, "AWS_SECRET_ACCESS_KEY="+SecretAccessKey,
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null", "AWS_EC2_METADATA_DISABLED=true")
}
