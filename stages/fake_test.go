package stages

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/merge"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/host"
	"github.com/kube-aws/kube-aws/plugins/source"
)

// fakePlugin stands in for a plugin process: it records what it received and
// answers with its run function.
type fakePlugin struct {
	cand  source.Candidate
	info  stage.PluginInfo
	proto int
	run   func(ctx context.Context, in *stage.Input, emit func(stage.Event)) (*stage.Result, error)

	mu     sync.Mutex
	inputs map[stage.Name][]byte
	calls  []stage.Name
	reg    *stage.Registration
	killed atomic.Int32
}

func (f *fakePlugin) Candidate() source.Candidate { return f.cand }
func (f *fakePlugin) Info() stage.PluginInfo      { return f.info }
func (f *fakePlugin) ProtocolVersion() int        { return f.proto }
func (f *fakePlugin) Kill()                       { f.killed.Add(1) }
func (f *fakePlugin) Register(_ context.Context, reg stage.Registration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reg = &reg
	return nil
}

func (f *fakePlugin) Run(ctx context.Context, in *stage.Input, emit func(stage.Event)) (*stage.Result, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	if f.inputs == nil {
		f.inputs = map[stage.Name][]byte{}
	}
	f.inputs[in.Stage] = b
	f.calls = append(f.calls, in.Stage)
	f.mu.Unlock()
	if f.run == nil {
		return &stage.Result{}, nil
	}
	return f.run(ctx, in, emit)
}

func (f *fakePlugin) called() []stage.Name {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]stage.Name(nil), f.calls...)
}

func (f *fakePlugin) input(n stage.Name) []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inputs[n]
}

// harness is a cluster folder with fake plugins behind Deps.
type harness struct {
	t           *testing.T
	dir         string
	cluster     *config.Cluster
	plugins     []*fakePlugin
	secrets     map[string]string
	opts        Options
	schemaCheck func(plugin string, schema json.RawMessage, v stage.PluginValues) diag.List
	launched    atomic.Int32
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	dir := t.TempDir()
	h := &harness{t: t, dir: dir, cluster: &config.Cluster{ClusterName: "test", Region: "eu-west-1"}}
	h.writeConfig("clusterName: test\n")
	h.opts = Options{
		ConfigPath: filepath.Join(dir, "cluster.yaml"),
		OutDir:     filepath.Join(dir, "rendered"),
	}
	return h
}

func (h *harness) writeConfig(content string) {
	h.t.Helper()
	if err := os.WriteFile(filepath.Join(h.dir, "cluster.yaml"), []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// add makes a plugin with an executable file (its content is what state
// hashes) implementing the given stages.
func (h *harness) add(name string, src source.Kind, stages ...stage.Name) *fakePlugin {
	h.t.Helper()
	pdir := filepath.Join(h.dir, "plugins", name)
	if err := os.MkdirAll(pdir, 0o755); err != nil {
		h.t.Fatal(err)
	}
	path := filepath.Join(pdir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n# "+name+"\n"), 0o755); err != nil {
		h.t.Fatal(err)
	}
	if len(stages) == 0 {
		stages = stage.All
	}
	p := &fakePlugin{
		cand:  source.Candidate{Name: name, Path: path, Dir: pdir, Source: src},
		info:  stage.PluginInfo{Name: name, Version: "1.0.0", ProtocolVersions: []int{1}, Stages: stages},
		proto: 1,
	}
	h.plugins = append(h.plugins, p)
	return p
}

func (h *harness) enable(name string, on bool) {
	if h.cluster.Plugins == nil {
		h.cluster.Plugins = map[string]config.PluginConfig{}
	}
	pc := h.cluster.Plugins[name]
	pc.Enabled = &on
	h.cluster.Plugins[name] = pc
}

func redactFake(s string, secrets map[string]string) string {
	keys := make([]string, 0, len(secrets))
	for k := range secrets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if secrets[k] != "" {
			s = strings.ReplaceAll(s, secrets[k], k)
		}
	}
	return s
}

func (h *harness) deps() *Deps {
	return &Deps{
		LoadConfig: func(path string) (*Loaded, diag.List, error) {
			b, err := json.Marshal(h.cluster)
			if err != nil {
				return nil, nil, err
			}
			hash, err := ConfigHash(path, h.cluster)
			if err != nil {
				return nil, nil, err
			}
			values := map[string]stage.PluginValues{}
			for n, pc := range h.cluster.Plugins {
				values[n] = stage.PluginValues{Values: pc.Values}
			}
			return &Loaded{Path: path, Dir: filepath.Dir(path), Cluster: h.cluster, JSON: b, Values: values, Hash: hash}, nil, nil
		},
		ResolveSecrets: func(l *Loaded, schemas map[string]json.RawMessage) (*Resolved, diag.List) {
			return &Resolved{JSON: l.JSON, Values: l.Values, Plain: l.Values, Secrets: h.secrets}, nil
		},
		Discover: func(string, []string) ([]source.Candidate, error) {
			var out []source.Candidate
			for _, p := range h.plugins {
				out = append(out, p.cand)
			}
			return out, nil
		},
		Launch: func(_ context.Context, cands []source.Candidate, _ host.Options) ([]Plugin, error) {
			h.launched.Add(1)
			var out []Plugin
			// Reverse: the host launches concurrently, so the pipeline must
			// not rely on the order plugins come back in.
			for i := len(cands) - 1; i >= 0; i-- {
				for _, p := range h.plugins {
					if p.cand.Name == cands[i].Name {
						out = append(out, p)
					}
				}
			}
			return out, nil
		},
		ValidateValues: func(_ *Loaded, plugin string, schema json.RawMessage, v stage.PluginValues) diag.List {
			if h.schemaCheck != nil {
				return h.schemaCheck(plugin, schema, v)
			}
			return nil
		},
		ChooseProviders: func(pref map[string]string, providers map[string][]string) (map[string]string, diag.List) {
			out := map[string]string{}
			var diags diag.List
			for c, ps := range providers {
				switch {
				case pref[c] != "":
					out[c] = pref[c]
				case len(ps) == 1:
					out[c] = ps[0]
				default:
					diags = append(diags, diag.Fatalf("capability %s has providers %s and no preference", c, strings.Join(ps, ", ")))
				}
			}
			return out, diags
		},
		Merge:  fakeMerge,
		Redact: redactFake,
	}
}

// fakeMerge concatenates units in contribution order and fails on a unit
// name seen twice: enough to observe merge order and merge diagnostics.
func fakeMerge(cs []merge.Contribution, _ merge.Options) (*construct.Set, diag.List) {
	out := &construct.Set{}
	seen := map[string]string{}
	var diags diag.List
	for _, c := range cs {
		for _, u := range c.Set.Units {
			if prev, ok := seen[u.Name]; ok {
				diags = append(diags, diag.Fatalf("unit %s defined by %s and %s", u.Name, prev, c.Plugin))
				continue
			}
			seen[u.Name] = c.Plugin
			out.Units = append(out.Units, u)
		}
	}
	return out, diags
}

// session plans and launches, failing the test on error, and closes the
// session when the test ends.
func (h *harness) session() *Session {
	h.t.Helper()
	s, err := h.open()
	if err != nil {
		h.t.Fatalf("opening session: %v\n%v", err, diagsOf(err))
	}
	return s
}

func (h *harness) open() (*Session, error) {
	opts := h.opts
	opts.Deps = h.deps()
	p, err := NewPlan(opts)
	if err != nil {
		return nil, err
	}
	s, err := p.Launch(context.Background())
	if s != nil {
		h.t.Cleanup(s.Close)
	}
	return s, err
}

func diagsOf(err error) diag.List {
	if e, ok := err.(*Error); ok {
		return e.Diagnostics
	}
	return nil
}

// fileResult renders one file.
func fileResult(path, content string) *stage.Result {
	return &stage.Result{Files: []stage.File{{Path: path, Content: []byte(content)}}}
}

// readTree returns every file under dir, by relative path, with its content
// and mode, and every folder under it (its path with a trailing slash) with
// its mode.
func readTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if fi.IsDir() {
			if rel != "." {
				out[rel+"/"] = fi.Mode().String()
			}
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[rel] = fmt.Sprintf("%s|%v", b, fi.Mode())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// logReporter records each log event a plugin sends as "[plugin] message",
// leaving out debug lines, as the CLI's text view does.
type logReporter struct {
	mu sync.Mutex
	W  io.Writer
}

func (r *logReporter) Event(plugin string, _ stage.Name, ev stage.Event) {
	if ev.Kind != stage.EventLog || ev.Level == "debug" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.W, "[%s] %s\n", plugin, ev.Message)
}
