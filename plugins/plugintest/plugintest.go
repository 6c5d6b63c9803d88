// Package plugintest lets a plugin author test the built plugin binary, not
// just its Go methods, in an ordinary Go test: Build compiles the plugin's
// main package, Run launches the binary through kube-aws's own host code
// (handshake, registration, stage calls, events, timeouts) and returns what
// each stage returned.
//
//	func TestMyPlugin(t *testing.T) {
//		bin := plugintest.Build(t, ".")
//		out := plugintest.Run(t, bin, &stage.Input{Config: []byte(`{}`)})
//		if out.Results[stage.Initialise].Diagnostics.HasFatal() { ... }
//	}
//
// Builds are cached for the life of the test binary, so many tests can share
// one build; call Main from TestMain to remove them afterwards.
package plugintest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/host"
	"github.com/kube-aws/kube-aws/plugins/source"
)

type build struct {
	once sync.Once
	path string
	err  error
}

var (
	builds   sync.Map // package key -> *build
	buildDir = sync.OnceValues(func() (string, error) { return os.MkdirTemp("", "kube-aws-plugintest-") })
	buildSeq struct {
		sync.Mutex
		n int
	}
)

// Build compiles the main package pkg (an import path, or a path relative to
// the test's folder such as "." or "./testdata/myplugin") and returns the
// binary's path. The binary is named as kube-aws would find the plugin,
// plugins/<name>/<name>: after the name the plugin gives in its Info, asked
// of the built binary, so a plugin whose source sits in a folder named
// otherwise (plugin/, cmd/) is still the plugin its Info names. A package
// that is not a plugin (it imports neither the SDK nor go-plugin), or one
// that does not start, keeps the package's last path element.
// Plugins are built static (CGO_ENABLED=0) unless the environment sets
// CGO_ENABLED: static plugins start faster (see docs/benchmarks.md).
// Each package is built once per test binary; tests must not modify the
// returned file (copy it first).
func Build(t testing.TB, pkg string) string {
	t.Helper()
	key := pkg
	if strings.HasPrefix(pkg, ".") || filepath.IsAbs(pkg) {
		abs, err := filepath.Abs(pkg)
		if err != nil {
			t.Fatalf("plugintest.Build(%q): %v", pkg, err)
		}
		key = abs
	}
	v, _ := builds.LoadOrStore(key, &build{})
	b := v.(*build)
	b.once.Do(func() {
		dir, err := buildDir()
		if err != nil {
			b.err = err
			return
		}
		buildSeq.Lock()
		buildSeq.n++
		sub := filepath.Join(dir, fmt.Sprint(buildSeq.n))
		buildSeq.Unlock()
		if err := os.MkdirAll(sub, 0o755); err != nil {
			b.err = err
			return
		}
		out := filepath.Join(sub, filepath.Base(key))
		cmd := exec.Command("go", "build", "-o", out, pkg)
		// A static binary starts about 2 ms of CPU faster than one that
		// loads libc through the dynamic linker, which every plugin launch
		// pays; set CGO_ENABLED=1 in the environment for a plugin that
		// really needs cgo.
		cmd.Env = os.Environ()
		if os.Getenv("CGO_ENABLED") == "" {
			cmd.Env = append(cmd.Env, "CGO_ENABLED=0")
		}
		if msg, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", pkg, err, msg)
			return
		}
		if name := pluginName(pkg, out); name != "" && name != filepath.Base(out) {
			named := filepath.Join(sub, name)
			if err := os.Rename(out, named); err != nil {
				b.err = err
				return
			}
			out = named
		}
		b.path = out
	})
	if b.err != nil {
		t.Fatalf("plugintest.Build: %v", b.err)
	}
	return b.path
}

// pluginName is the name the plugin built from pkg at bin gives in its
// Info, or "" when pkg is not a plugin's main package or the binary does
// not answer as one. Only a package that imports the SDK or go-plugin is
// started: any other program is not run at all.
func pluginName(pkg, bin string) string {
	imports, err := exec.Command("go", "list", "-f", `{{join .Imports "\n"}}`, pkg).Output()
	if err != nil {
		return ""
	}
	plugin := false
	for _, imp := range strings.Split(string(imports), "\n") {
		plugin = plugin || imp == "github.com/kube-aws/kube-aws/plugins/sdk" || imp == "github.com/hashicorp/go-plugin"
	}
	if !plugin {
		return ""
	}
	cand := source.Candidate{Name: filepath.Base(bin), Path: bin, Dir: filepath.Dir(bin), Source: source.User}
	ps, err := host.Launch(context.Background(), []source.Candidate{cand}, host.Options{Stderr: io.Discard})
	if err != nil {
		return ""
	}
	defer ps[0].Kill()
	name := ps[0].Info.Name
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return ""
	}
	return name
}

// Main runs the tests and then removes the binaries Build made. Use it as
//
//	func TestMain(m *testing.M) { plugintest.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// Cleanup removes the binaries Build made.
func Cleanup() {
	if dir, err := buildDir(); err == nil {
		_ = os.RemoveAll(dir)
	}
}

// Outcome is what a plugin did across a Run.
type Outcome struct {
	Plugin *host.Plugin
	// Results holds each stage's result.
	Results map[stage.Name]*stage.Result
	// Events holds the events each stage streamed, in order.
	Events map[stage.Name][]stage.Event
	// Output is the plugin's stdout and stderr, each line prefixed
	// "[<name>] " as kube-aws would log it.
	Output *Buffer
}

// Buffer is a concurrency-safe bytes buffer for plugin output.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Run launches the plugin binary, registers it and runs the given stages in
// order (every stage the plugin implements when none are given), failing the
// test on any error. See RunWith.
func Run(t testing.TB, binaryPath string, in *stage.Input, stages ...stage.Name) *Outcome {
	t.Helper()
	out, err := RunWith(t, binaryPath, host.Options{}, in, stages...)
	if err != nil {
		t.Fatalf("plugintest.Run %s: %v\nplugin output:\n%s", binaryPath, err, out.Output)
	}
	return out
}

// RunWith is Run with launch options (timeouts, environment, store folder)
// that returns the first error instead of failing the test, for tests of
// plugins that are meant to fail. The Outcome holds everything up to the
// failure. The plugin is killed before RunWith returns.
//
// Later stages see the earlier ones' output the way kube-aws passes it on:
// unless in says otherwise, render and later get initialise's constructs, and
// the plugin's values become what initialise returned.
func RunWith(t testing.TB, binaryPath string, opts host.Options, in *stage.Input, stages ...stage.Name) (*Outcome, error) {
	t.Helper()
	out := &Outcome{Results: map[stage.Name]*stage.Result{}, Events: map[stage.Name][]stage.Event{}, Output: &Buffer{}}
	if opts.Stderr == nil {
		opts.Stderr = out.Output
	}
	if opts.StoreDir == "" {
		opts.StoreDir = t.TempDir()
	}
	abs, err := filepath.Abs(binaryPath)
	if err != nil {
		return out, err
	}
	cand := source.Candidate{Name: filepath.Base(abs), Path: abs, Dir: filepath.Dir(abs), Source: source.User}
	ctx := context.Background()
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := d.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, dl)
			defer cancel()
		}
	}
	ps, err := host.Launch(ctx, []source.Candidate{cand}, opts)
	if err != nil {
		return out, err
	}
	p := ps[0]
	out.Plugin = p
	defer p.Kill()
	if p.Info.Name != cand.Name {
		// kube-aws refuses such a plugin at registration: the test would
		// pass values to one name and the plugin read another's.
		return out, fmt.Errorf("plugin %s says its name is %q, but its executable is named %q: kube-aws runs a plugin only from an executable of its own name (plugins/<name>/<name>), and refuses this one; name the file %q (plugintest.Build does)",
			binaryPath, p.Info.Name, cand.Name, p.Info.Name)
	}
	if err := p.Register(ctx, stage.Registration{Accepted: true}); err != nil {
		return out, err
	}
	if len(stages) == 0 {
		stages = p.Info.Stages
	}
	if in == nil {
		in = &stage.Input{}
	}
	cur := *in
	if len(cur.Config) == 0 {
		cur.Config = json.RawMessage(`{}`)
	}
	for _, s := range stages {
		stageIn := cur
		stageIn.Stage = s
		var mu sync.Mutex
		res, err := p.Run(ctx, &stageIn, func(ev stage.Event) {
			mu.Lock()
			out.Events[s] = append(out.Events[s], ev)
			mu.Unlock()
		})
		if err != nil {
			return out, err
		}
		out.Results[s] = res
		if s == stage.Initialise {
			if in.Constructs == nil && res.Constructs != nil {
				cur.Constructs = res.Constructs
			}
			if len(res.Values) > 0 {
				vals := make(map[string]stage.PluginValues, len(cur.Values)+1)
				for k, v := range cur.Values {
					vals[k] = v
				}
				pv := vals[p.Info.Name]
				pv.Values = res.Values
				vals[p.Info.Name] = pv
				cur.Values = vals
			}
		}
		if s == stage.Deploy && in.Deploy == nil && res.Deploy != nil {
			cur.Deploy = res.Deploy
		}
	}
	return out, nil
}
