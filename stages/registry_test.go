package stages

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/plugins/source"
)

// registryPlan plans the example with plugins.dex taken from a registry;
// discovery finds the shipped dex and a built-in, and ensure is a fake.
// extra are more candidates found, and a lock, when not "", is written
// as plugins.lock first.
func registryPlan(t *testing.T, dexEntry string, user bool, fake func(ps []source.RegistryPlugin, o source.EnsureOptions) (*source.Outcome, error), lock string, extra ...source.Candidate) (*Plan, error, string) {
	t.Helper()
	t.Setenv("KUBE_AWS_CACHE_DIR", t.TempDir())
	dir := t.TempDir()
	if lock != "" {
		if err := os.WriteFile(filepath.Join(dir, source.LockfileName), []byte(lock), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	example, err := os.ReadFile(filepath.Join("..", "cluster.yaml.example"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(example), "\nplugins:\n", "\nplugins:\n"+dexEntry, 1)
	path := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	deps := DefaultDeps()
	deps.Discover = func(string, []string) ([]source.Candidate, error) {
		var cands []source.Candidate
		for _, b := range []string{"apiserver", "cloudformation", "deploy", "helm", "iam", "userdata"} {
			cands = append(cands, source.Candidate{Name: b, Path: "/b/" + b, Dir: "/b", Source: source.Builtin})
		}
		cands = append(cands, source.Candidate{Name: "dex", Path: "/c/dex", Dir: "/c", Source: source.Contrib})
		if user {
			cands = append(cands, source.Candidate{Name: "dex", Path: dir + "/plugins/dex/dex", Dir: dir + "/plugins/dex", Source: source.User})
		}
		return append(cands, extra...), nil
	}
	calls := 0
	deps.Ensure = func(_ context.Context, ps []source.RegistryPlugin, o source.EnsureOptions) (*source.Outcome, error) {
		calls++
		return fake(ps, o)
	}
	p, err := NewPlan(Options{ConfigPath: path, Deps: &deps})
	if user && calls > 0 {
		t.Error("ensure ran although the name was found twice")
	}
	return p, err, dir
}

const dexFromRegistry = "  dex:\n    source: oci://r.example/acme/dex:2.0.0\n    verify: {key: keys/acme.pub}\n    values:\n      issuerURL: https://dex.example.com\n"

func TestRegistryPluginReplacesTheShippedOne(t *testing.T) {
	var got []source.RegistryPlugin
	p, err, dir := registryPlan(t, dexFromRegistry, false, func(ps []source.RegistryPlugin, o source.EnsureOptions) (*source.Outcome, error) {
		got = ps
		l := &source.Lockfile{Version: 2}
		l.Set(source.LockEntry{Name: "dex", Source: source.OCI, Ref: ps[0].Source, Digest: "sha256:" + strings.Repeat("d", 64),
			Platforms: map[string]source.PlatformLock{"linux/amd64": {Manifest: "sha256:" + strings.Repeat("e", 64), SHA256: strings.Repeat("a", 64)}}})
		return &source.Outcome{Lock: l, Candidates: []source.Candidate{{Name: "dex", Path: "/cache/e/dex", Dir: "/cache/e", Source: source.OCI}}}, nil
	}, "")
	if err != nil {
		t.Fatalf("%v\n%v", err, diagsOf(err))
	}
	if len(got) != 1 || got[0].Name != "dex" || got[0].Key != filepath.Join(dir, "keys", "acme.pub") {
		t.Errorf("ensure got %+v", got)
	}
	var dex []source.Candidate
	for _, c := range p.All {
		if c.Name == "dex" {
			dex = append(dex, c)
		}
	}
	if len(dex) != 1 || dex[0].Source != source.OCI {
		t.Errorf("dex candidates %+v, want only the registry's", dex)
	}
	on := false
	for _, c := range p.Enabled {
		on = on || (c.Name == "dex" && c.Source == source.OCI)
	}
	if !on {
		t.Error("a plugin with a source is not enabled by default")
	}
	if l, err := source.ReadLockfile(filepath.Join(dir, source.LockfileName)); err != nil || l.Entry("dex") == nil {
		t.Errorf("plugins.lock not written: %v", err)
	}
}

func TestRegistryProblemsAreDiagnosticsAtTheSetting(t *testing.T) {
	_, err, dir := registryPlan(t, dexFromRegistry, false, func(ps []source.RegistryPlugin, o source.EnsureOptions) (*source.Outcome, error) {
		return &source.Outcome{Problems: []source.Problem{
			{Name: "dex", Field: "verify", Err: errors.New("it has no cosign signature")},
		}}, nil
	}, "")
	ds := diagsOf(err)
	if err == nil || ExitCode(err) != ExitFatal || len(ds) != 1 || ds[0].Path != "plugins.dex.verify" || ds[0].Line == 0 || ds[0].Message != "it has no cosign signature" {
		t.Fatalf("err %v, diagnostics %+v", err, ds)
	}
	if _, err := os.Stat(filepath.Join(dir, source.LockfileName)); err == nil {
		t.Error("plugins.lock written although nothing was pinned")
	}
}

func TestRegistryPluginAndUserFolderOfOneName(t *testing.T) {
	_, err, _ := registryPlan(t, dexFromRegistry, true, func([]source.RegistryPlugin, source.EnsureOptions) (*source.Outcome, error) {
		return &source.Outcome{}, nil
	}, "")
	if err == nil || ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "plugin dex is found twice: plugins.dex.source (oci://r.example/acme/dex:2.0.0) and the user plugin") {
		t.Fatalf("err = %v", err)
	}
}

func TestDisabledRegistryPluginIsNotInstalled(t *testing.T) {
	p, err, _ := registryPlan(t, "  dex:\n    source: oci://r.example/acme/dex:2.0.0\n    enabled: false\n", false, func([]source.RegistryPlugin, source.EnsureOptions) (*source.Outcome, error) {
		t.Error("ensure ran for a disabled plugin")
		return &source.Outcome{}, nil
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Enabled {
		if c.Name == "dex" {
			t.Error("dex is enabled")
		}
	}
}

// pinDex is an ensure that pins dex from the registry.
func pinDex(ps []source.RegistryPlugin, _ source.EnsureOptions, lock *source.Lockfile) (*source.Outcome, error) {
	if lock == nil {
		lock = &source.Lockfile{Version: 2}
	}
	lock.Set(source.LockEntry{Name: "dex", Source: source.OCI, Ref: ps[0].Source, Digest: "sha256:" + strings.Repeat("d", 64),
		Platforms: map[string]source.PlatformLock{"linux/amd64": {Manifest: "sha256:" + strings.Repeat("e", 64), SHA256: strings.Repeat("a", 64)}}})
	return &source.Outcome{Lock: lock, Candidates: []source.Candidate{{Name: "dex", Path: "/cache/e/dex", Dir: "/cache/e", Source: source.OCI}}}, nil
}

// When pinning a registry plugin creates plugins.lock, the contrib and
// user plugins found are locked in it too, as `plugins lock` would: the
// host checks every plugin that is not built in once the file exists, and
// an enabled user plugin must keep starting. An existing plugins.lock is
// left to `plugins lock`.
func TestFirstPinLocksTheOtherPlugins(t *testing.T) {
	files := t.TempDir()
	write := func(rel, body string) string {
		path := filepath.Join(files, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	bastion := write("contrib/bastion", "#!/bin/sh\necho bastion\n")
	greet := write("greet/greet", "#!/bin/sh\necho greet\n")
	write("greet/lib.py", "X = 1\n")
	extra := []source.Candidate{
		{Name: "bastion", Path: bastion, Dir: filepath.Dir(bastion), Source: source.Contrib},
		{Name: "greet", Path: greet, Dir: filepath.Dir(greet), Source: source.User},
		{Name: "broken", Dir: filepath.Join(files, "broken"), Source: source.User, Problem: "no executable"},
	}
	sum := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.Sum256(b)
		return hex.EncodeToString(h[:])
	}

	_, err, dir := registryPlan(t, dexFromRegistry, false, func(ps []source.RegistryPlugin, o source.EnsureOptions) (*source.Outcome, error) {
		return pinDex(ps, o, o.Lock)
	}, "", extra...)
	if err != nil {
		t.Fatalf("%v\n%v", err, diagsOf(err))
	}
	l, err := source.ReadLockfile(filepath.Join(dir, source.LockfileName))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range l.Plugins {
		names = append(names, e.Name+":"+string(e.Source))
	}
	if strings.Join(names, " ") != "bastion:contrib dex:oci greet:user" {
		t.Fatalf("plugins.lock holds %v, want bastion, dex and greet", names)
	}
	if e := l.Entry("bastion"); e.SHA256 != sum(bastion) {
		t.Errorf("bastion locked as %+v", e)
	}
	if e := l.Entry("greet"); e.SHA256 != sum(greet) || e.Files["lib.py"] != sum(filepath.Join(files, "greet", "lib.py")) {
		t.Errorf("greet locked as %+v", e)
	}
	if errs := l.Verify(extra); len(errs) != 1 || !strings.Contains(errs[0].Error(), "plugin dex") {
		t.Errorf("the contrib and user plugins do not verify against the lock: %v", errs)
	}

	// An existing plugins.lock: only the pin is added.
	existing := "version: 2\nplugins:\n- name: bastion\n  source: contrib\n  sha256: " + sum(bastion) + "\n"
	_, err, dir = registryPlan(t, dexFromRegistry, false, func(ps []source.RegistryPlugin, o source.EnsureOptions) (*source.Outcome, error) {
		if o.Lock == nil || o.Lock.Entry("bastion") == nil {
			t.Errorf("ensure did not get the existing plugins.lock: %+v", o.Lock)
		}
		return pinDex(ps, o, o.Lock)
	}, existing, extra...)
	if err != nil {
		t.Fatalf("%v\n%v", err, diagsOf(err))
	}
	l, err = source.ReadLockfile(filepath.Join(dir, source.LockfileName))
	if err != nil {
		t.Fatal(err)
	}
	if l.Entry("greet") != nil || l.Entry("dex") == nil || l.Entry("bastion") == nil {
		t.Errorf("an existing plugins.lock was changed beyond the pin: %+v", l.Plugins)
	}
}
