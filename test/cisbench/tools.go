// Package cisbench runs the CIS Kubernetes Benchmark on the booted cluster
// (test/e2e/cluster): it builds kube-bench, and the kubectl and jq its policy
// checks call, at the versions the scratch modules under tools/ pin (every
// module's hash in their go.sum); stages them with kube-bench's checks,
// told where kube-aws keeps the files the checks read, into a machine's
// filesystem; reads kube-bench's JSON report; and compares its results with
// the table of docs/security.md that lists every FAIL and WARN left and why.
package cisbench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/kube-aws/kube-aws/test/registrytest"
)

// Benchmark is the CIS benchmark kube-bench runs, passed explicitly: the
// cluster runs Kubernetes 1.34, and kube-bench v0.10.4's version_mapping
// (cfg/config.yaml) stops at 1.31 -> cis-1.10, its newest CIS Kubernetes
// benchmark; without --benchmark it would pick by the detected version and
// find no mapping.
const Benchmark = "cis-1.10"

// The machines the benchmark runs on are linux/amd64 (test/machines).
const goos, goarch = "linux", "amd64"

// tool is a command built from a package of a scratch module under tools/.
type tool struct {
	name    string // the executable's name in a machine
	module  string // its folder under tools/
	pkg     string // the package to build
	version string // the module whose version names the cached build
}

var (
	kubeBenchTool = tool{"kube-bench", "kube-bench", "github.com/aquasecurity/kube-bench", "github.com/aquasecurity/kube-bench"}
	kubectlTool   = tool{"kubectl", "kubectl", ".", "k8s.io/kubectl"}
	jqTool        = tool{"jq", "kubectl", "github.com/itchyny/gojq/cmd/gojq", "github.com/itchyny/gojq"}
)

// Tools are the built executables and kube-bench's checks, on the host.
type Tools struct {
	KubeBench, Kubectl, JQ string
	// Config is kube-bench's cfg folder in the Go module cache (read only;
	// Stage copies it).
	Config string
	// Version is kube-bench's version.
	Version string
}

var buildMu sync.Mutex

// Build builds the tools for linux/amd64, statically, once per machine:
// they are kept in registrytest.ToolsDir() under their versions, as the
// other test tools are.
func Build() (*Tools, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	dir, err := registrytest.ToolsDir()
	if err != nil {
		return nil, err
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// Test binaries of several packages may ask at once: one builds while
	// the others wait (the lock file registrytest uses too).
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return nil, err
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)

	t := &Tools{}
	for _, b := range []struct {
		tool tool
		out  *string
	}{{kubeBenchTool, &t.KubeBench}, {kubectlTool, &t.Kubectl}, {jqTool, &t.JQ}} {
		if *b.out, err = b.tool.build(root, dir); err != nil {
			return nil, err
		}
	}
	m, err := download(filepath.Join(root, toolsFolder, kubeBenchTool.module), kubeBenchTool.version)
	if err != nil {
		return nil, err
	}
	t.Config, t.Version = filepath.Join(m.Dir, "cfg"), m.Version
	if _, err := os.Stat(filepath.Join(t.Config, Benchmark)); err != nil {
		return nil, fmt.Errorf("kube-bench %s has no checks for %s: %w", m.Version, Benchmark, err)
	}
	return t, nil
}

// toolsFolder holds the scratch modules, from the repository's root.
const toolsFolder = "test/cisbench/tools"

func (t tool) build(root, dir string) (string, error) {
	mod := filepath.Join(root, toolsFolder, t.module)
	m, err := download(mod, t.version)
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, fmt.Sprintf("%s-%s-%s-%s", t.name, m.Version, goos, goarch))
	if isExec(bin) {
		return bin, nil
	}
	tmp := bin + ".tmp"
	cmd := exec.Command("go", "build", "-trimpath", "-o", tmp, t.pkg)
	cmd.Dir = mod
	cmd.Env = goEnv("CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch)
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building %s (%s %s) from the Go module proxy in %s: %v\n%s", t.name, t.version, m.Version, mod, err, out)
	}
	return bin, os.Rename(tmp, bin)
}

// goEnv is the environment of the go commands run in a scratch module:
// go.sum as it is (readonly: a missing hash is an error, never looked up
// and added), outside any workspace.
func goEnv(extra ...string) []string {
	return append(os.Environ(), append([]string{"GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false"}, extra...)...)
}

type module struct{ Version, Dir, Error string }

// download fetches a module the scratch module in dir requires, at the
// version its go.mod pins, checked against its go.sum, and says where the
// module cache holds it.
func download(dir, path string) (*module, error) {
	cmd := exec.Command("go", "mod", "download", "-json", path)
	cmd.Dir = dir
	cmd.Env = goEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var m module
	if err := json.Unmarshal(stdout.Bytes(), &m); err != nil || m.Error != "" || runErr != nil || m.Dir == "" {
		return nil, fmt.Errorf("go mod download %s in %s: %v %s%s", path, dir, runErr, m.Error, stderr.String())
	}
	return &m, nil
}

func isExec(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// repoRoot is the kube-aws checkout the working directory is in (a test
// runs in its package's folder, make e2e-cluster's test binary in the
// checkout's root).
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(b), "module github.com/kube-aws/kube-aws\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("the working directory is not in a kube-aws checkout (no go.mod of module github.com/kube-aws/kube-aws above it)")
		}
		dir = parent
	}
}
