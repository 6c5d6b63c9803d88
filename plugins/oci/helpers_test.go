package oci

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kube-aws/kube-aws/plugins/oci/cache"
	"github.com/kube-aws/kube-aws/plugins/oci/helper"
	"github.com/kube-aws/kube-aws/test/registrytest"
)

// The trivial test plugin takes its name from its executable, so one build
// copied under several names is several plugins.
const trivialPkg = "github.com/kube-aws/kube-aws/plugins/testdata/trivial"

var (
	buildsMu sync.Mutex
	builds   = map[string]string{}
	buildDir string
)

// trivialBuild compiles the trivial plugin for os/arch once per test
// binary.
func trivialBuild(t testing.TB, platform string) string {
	t.Helper()
	buildsMu.Lock()
	defer buildsMu.Unlock()
	if p, ok := builds[platform]; ok {
		return p
	}
	if buildDir == "" {
		d, err := os.MkdirTemp("", "kube-aws-oci-test-")
		if err != nil {
			t.Fatal(err)
		}
		buildDir = d
	}
	goos, goarch, _ := strings.Cut(platform, "/")
	out := filepath.Join(buildDir, goos+"-"+goarch, "trivial")
	cmd := exec.Command("go", "build", "-o", out, trivialPkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the trivial plugin for %s: %v\n%s", platform, err, b)
	}
	builds[platform] = out
	return out
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// copyFile copies src to dst with mode.
func copyFile(t testing.TB, src, dst string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, mode); err != nil {
		t.Fatal(err)
	}
}

// pluginDir makes a plugin folder <tmp>/<name> holding the host build of
// the trivial plugin as <name> and the given extra files.
func pluginDir(t testing.TB, name string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	copyFile(t, trivialBuild(t, HostPlatform()), filepath.Join(dir, name), 0o755)
	for f, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// isolate keeps the user's Docker and Helm logins out of a test.
func isolate(t testing.TB) {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	t.Setenv("HELM_REGISTRY_CONFIG", filepath.Join(t.TempDir(), "none.json"))
}

type fixture struct {
	reg   *registrytest.Registry
	h     *Helper
	cache cache.Cache
	logs  *logLines
}

type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, s)
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func newFixture(t *testing.T, opts registrytest.Options) *fixture {
	t.Helper()
	isolate(t)
	logs := &logLines{}
	return &fixture{
		reg:   registrytest.Start(t, opts),
		h:     &Helper{Remote: &Remote{}, Log: logs.add},
		cache: cache.Cache{Root: filepath.Join(t.TempDir(), "cache")},
		logs:  logs,
	}
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// push pushes dir to the registry as repoAndTag.
func (f *fixture) push(t *testing.T, dir, repoAndTag string, platforms ...string) *helper.PushResult {
	t.Helper()
	res, err := f.h.Push(ctxT(t), helper.PushRequest{Dir: dir, Target: f.reg.Ref(repoAndTag), Platforms: platforms})
	if err != nil {
		t.Fatalf("push %s: %v", repoAndTag, err)
	}
	return res
}

// install installs for the host platform.
func (f *fixture) install(t *testing.T, r helper.InstallRequest) (helper.Installed, error) {
	t.Helper()
	return f.h.Install(ctxT(t), f.cache, HostPlatform(), []int{1}, r)
}

func hostPlatform() string { return runtime.GOOS + "/" + runtime.GOARCH }
