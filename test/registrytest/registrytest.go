// Package registrytest runs the real OCI tools that plugin distribution is
// tested against: the CNCF distribution registry, served on a free port of
// 127.0.0.1 with its storage in a test folder, and the cosign CLI, which
// makes the signing keys and the signatures kube-aws must verify. Both are
// built from the Go module proxy at pinned versions the first time they are
// needed (`go install`), into a folder shared by every test binary and
// checkout on the machine; `make test-tools` builds them ahead of the tests.
package registrytest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/kube-aws/kube-aws/test/localport"
)

// The tools and their versions.
var (
	Distribution = Tool{Name: "registry", Package: "github.com/distribution/distribution/v3/cmd/registry", Version: "v3.1.2"}
	Cosign       = Tool{Name: "cosign", Package: "github.com/sigstore/cosign/v3/cmd/cosign", Version: "v3.1.3"}
)

// Tool is a command built from a module at a version.
type Tool struct {
	Name, Package, Version string
}

// EnvToolsDir overrides where built tools are kept.
const EnvToolsDir = "KUBE_AWS_TEST_TOOLS"

// ToolsDir is where built tools are kept: $KUBE_AWS_TEST_TOOLS, else
// <user cache folder>/kube-aws/test-tools.
func ToolsDir() (string, error) {
	if d := os.Getenv(EnvToolsDir); d != "" {
		return filepath.Abs(d)
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache folder for test tools: %w; set %s", err, EnvToolsDir)
	}
	return filepath.Join(d, "kube-aws", "test-tools"), nil
}

var buildMu sync.Mutex

// Path returns the tool's executable, building it first if needed. Test
// binaries of several packages may ask at once: a lock file makes one of
// them build while the others wait.
func (t Tool) Path() (string, error) {
	dir, err := ToolsDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, t.Name+"-"+t.Version)
	if isExec(bin) {
		return bin, nil
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if isExec(bin) {
		return bin, nil
	}
	gobin, err := os.MkdirTemp(dir, ".build-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(gobin)
	// Outside any module, so the tool's own go.mod decides its
	// dependencies and kube-aws's go.mod is left alone.
	cmd := exec.Command("go", "install", t.Package+"@"+t.Version)
	cmd.Dir = gobin
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "CGO_ENABLED=0", "GOFLAGS=-trimpath", "GOWORK=off")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("building %s %s from the Go module proxy: %v\n%s", t.Name, t.Version, err, out)
	}
	if err := os.Rename(filepath.Join(gobin, t.Name), bin); err != nil {
		return "", err
	}
	return bin, nil
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// MustPath is Path for tests: it fails the test when the tool cannot be
// built (never skips it).
func (t Tool) MustPath(tb testing.TB) string {
	tb.Helper()
	p, err := t.Path()
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// Registry is a running distribution registry.
type Registry struct {
	// Host is 127.0.0.1:PORT, the registry part of a reference.
	Host string
	// Root is its storage folder.
	Root string

	bin, config string
	mu          sync.Mutex
	cmd         *exec.Cmd
	exited      chan struct{}
	log         *bytes.Buffer
}

// Options configure a registry.
type Options struct {
	// Users, when set, turns on basic authentication (htpasswd) with
	// these user names and passwords.
	Users map[string]string
}

// Start starts a registry for one test and stops it at the end of the
// test.
func Start(tb testing.TB, opts Options) *Registry {
	tb.Helper()
	bin := Distribution.MustPath(tb)
	dir := tb.TempDir()
	r, err := start(bin, dir, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(r.Stop)
	return r
}

func start(bin, dir string, opts Options) (*Registry, error) {
	port, err := localport.Free()
	if err != nil {
		return nil, err
	}
	r := &Registry{Host: fmt.Sprintf("127.0.0.1:%d", port), Root: filepath.Join(dir, "storage"), bin: bin, config: filepath.Join(dir, "config.yml")}
	auth := ""
	if len(opts.Users) > 0 {
		var lines []string
		for u, p := range opts.Users {
			h, err := bcrypt.GenerateFromPassword([]byte(p), bcrypt.MinCost)
			if err != nil {
				return nil, err
			}
			lines = append(lines, u+":"+string(h))
		}
		pw := filepath.Join(dir, "htpasswd")
		if err := os.WriteFile(pw, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			return nil, err
		}
		auth = fmt.Sprintf("auth:\n  htpasswd:\n    realm: kube-aws-test\n    path: %s\n", pw)
	}
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: true
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: %s
  secret: kube-aws-test-registry
%s`, r.Root, r.Host, auth)
	if err := os.WriteFile(r.config, []byte(cfg), 0o644); err != nil {
		return nil, err
	}
	return r, r.Restart()
}

// Restart starts the registry again on the same port and storage after
// Stop (a registry that was down and came back).
func (r *Registry) Restart() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil {
		return errors.New("registry is running")
	}
	cmd := exec.Command(r.bin, "serve", r.config)
	// Its own process group, so a Ctrl-C meant for the test does not kill
	// it half way and Stop reaches it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r.log = &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = &lockedWriter{w: r.log}, &lockedWriter{w: r.log}
	cmd.Env = append(os.Environ(), "OTEL_TRACES_EXPORTER=none", "OTEL_SDK_DISABLED=true")
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the registry: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	r.cmd, r.exited = cmd, exited
	deadline := time.Now().Add(30 * time.Second)
	client := &http.Client{Timeout: time.Second}
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			r.cmd = nil
			return fmt.Errorf("the registry exited before it was ready:\n%s", r.log.String())
		default:
		}
		resp, err := client.Get("http://" + r.Host + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.stopLocked()
	return fmt.Errorf("the registry on %s did not answer within 30s:\n%s", r.Host, r.log.String())
}

// Stop stops the registry (a registry that is down); its storage stays.
// It is safe to call more than once.
func (r *Registry) Stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopLocked()
}

func (r *Registry) stopLocked() {
	if r.cmd == nil {
		return
	}
	_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-r.exited:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-r.cmd.Process.Pid, syscall.SIGKILL)
		<-r.exited
	}
	r.cmd = nil
}

// BlobPath is where the registry stores a blob's bytes, for tests that
// corrupt its storage behind its back.
func (r *Registry) BlobPath(digest string) string {
	h := strings.TrimPrefix(digest, "sha256:")
	return filepath.Join(r.Root, "docker", "registry", "v2", "blobs", "sha256", h[:2], h, "data")
}

// Ref is oci://<host>/<repoAndTag>.
func (r *Registry) Ref(repoAndTag string) string {
	return "oci://" + r.Host + "/" + repoAndTag
}

type lockedWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// CosignCLI runs the cosign CLI with a private environment: no network
// service but the registry, and its own home so no user configuration leaks
// in.
type CosignCLI struct {
	Bin  string
	Home string
}

// NewCosign returns the cosign CLI for a test.
func NewCosign(tb testing.TB) *CosignCLI {
	tb.Helper()
	return &CosignCLI{Bin: Cosign.MustPath(tb), Home: tb.TempDir()}
}

// KeyPassword protects the private keys tests generate.
const KeyPassword = "kube-aws-test"

func (c *CosignCLI) run(ctx context.Context, dir string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, c.Bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+c.Home, "COSIGN_PASSWORD="+KeyPassword, "COSIGN_YES=true",
		"TUF_ROOT="+filepath.Join(c.Home, "tuf"), "SIGSTORE_NO_CACHE=true", "DOCKER_CONFIG="+filepath.Join(c.Home, "docker"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("cosign %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out, nil
}

// Run runs cosign with args in dir, as Sign does (with the test's keys'
// password, no prompt, no user configuration), and fails the test when it
// fails: for a cosign command a test did not write itself, the one
// `kube-aws plugins push` prints, say.
func (c *CosignCLI) Run(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out, err := c.run(ctx, dir, args...)
	if err != nil {
		tb.Fatal(err)
	}
	return string(out)
}

// GenerateKeyPair writes cosign.key and cosign.pub into dir with `cosign
// generate-key-pair` and returns their paths.
func (c *CosignCLI) GenerateKeyPair(tb testing.TB, dir string) (key, pub string) {
	tb.Helper()
	if _, err := c.run(context.Background(), dir, "generate-key-pair"); err != nil {
		tb.Fatal(err)
	}
	return filepath.Join(dir, "cosign.key"), filepath.Join(dir, "cosign.pub")
}

// SignFormat is which of cosign's signature formats to write.
type SignFormat int

const (
	// Bundle is cosign 3's default: a sigstore bundle as an OCI referrer.
	Bundle SignFormat = iota
	// SimpleSigning is cosign 2's format, the sha256-<hex>.sig tag.
	SimpleSigning
)

// Sign signs image (REGISTRY/REPOSITORY@sha256:...) with `cosign sign
// --key`, offline: no transparency log upload, no signing config fetched.
func (c *CosignCLI) Sign(tb testing.TB, key, image string, format SignFormat) {
	tb.Helper()
	args := []string{"sign", "--key", key, "--tlog-upload=false", "--use-signing-config=false", "--allow-http-registry"}
	if format == SimpleSigning {
		args = append(args, "--new-bundle-format=false")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := c.run(ctx, filepath.Dir(key), append(args, image)...); err != nil {
		tb.Fatal(err)
	}
}
