package source_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kube-aws/kube-aws/plugins/oci"
	"github.com/kube-aws/kube-aws/plugins/oci/cache"
	"github.com/kube-aws/kube-aws/plugins/oci/helper"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/plugins/source"
	"github.com/kube-aws/kube-aws/test/registrytest"
)

func TestMain(m *testing.M) { plugintest.Main(m) }

type env struct {
	reg   *registrytest.Registry
	cache cache.Cache
	runs  int
}

func newEnv(t *testing.T) *env {
	t.Setenv("DOCKER_CONFIG", t.TempDir())
	t.Setenv("HELM_REGISTRY_CONFIG", filepath.Join(t.TempDir(), "none.json"))
	return &env{reg: registrytest.Start(t, registrytest.Options{}), cache: cache.Cache{Root: t.TempDir()}}
}

// push pushes the trivial plugin, named name, with extra files.
func (e *env) push(t *testing.T, name, repoAndTag string, files map[string]string) *helper.PushResult {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(plugintest.Build(t, "github.com/kube-aws/kube-aws/plugins/testdata/trivial"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
		t.Fatal(err)
	}
	for f, body := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := &oci.Helper{Remote: &oci.Remote{}}
	res, err := h.Push(context.Background(), helper.PushRequest{Dir: dir, Target: e.reg.Ref(repoAndTag)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// run is Ensure with the helper run in this process.
func (e *env) run(t *testing.T, ps []source.RegistryPlugin, lock *source.Lockfile, mode source.Mode, names ...string) *source.Outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := source.Ensure(ctx, ps, source.EnsureOptions{
		Mode: mode, Names: names, Lock: lock, Cache: e.cache, ProtocolVersions: []int{1},
		Helper: func(ctx context.Context, req helper.Request, progress func(string)) (*helper.Result, error) {
			e.runs++
			return (&oci.Helper{Remote: &oci.Remote{}, Log: progress}).Do(ctx, req)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func problems(o *source.Outcome) string {
	var s []string
	for _, p := range o.Problems {
		s = append(s, p.Path()+": "+p.Error())
	}
	return strings.Join(s, "\n")
}

func wantProblem(t *testing.T, o *source.Outcome, path string, parts ...string) {
	t.Helper()
	if len(o.Problems) != 1 || o.Problems[0].Path() != path {
		t.Fatalf("problems:\n%s\nwant one at %s", problems(o), path)
	}
	for _, p := range parts {
		if !strings.Contains(o.Problems[0].Error(), p) {
			t.Errorf("%s\ndoes not say %q", o.Problems[0].Error(), p)
		}
	}
	t.Logf("%s: %s", path, o.Problems[0].Error())
}

// The first run pins and downloads; the next ones use the cache without the
// helper, even with the registry down.
func TestPinThenCache(t *testing.T) {
	e := newEnv(t)
	pushed := e.push(t, "hello", "plugins/hello:0.0.1", nil)
	ps := []source.RegistryPlugin{{Name: "hello", Source: e.reg.Ref("plugins/hello:0.0.1")}}
	first := e.run(t, ps, nil, source.Auto)
	if len(first.Problems) > 0 || first.Lock == nil || len(first.Candidates) != 1 || !first.HelperRan {
		t.Fatalf("first run: %+v\n%s", first, problems(first))
	}
	pin := first.Lock.Entry("hello")
	if pin.Digest != pushed.Digest || pin.Version != "0.0.1" || pin.Ref != ps[0].Source || len(pin.Platforms) != 1 {
		t.Fatalf("pinned %+v", pin)
	}
	if c := first.Changes[0]; c.From != nil || c.To.Digest != pushed.Digest || !c.Downloaded {
		t.Errorf("change %+v", c)
	}
	if errs := first.Lock.Verify(first.Candidates); len(errs) > 0 {
		t.Fatalf("the lock does not verify its own plugin: %v", errs)
	}
	e.reg.Stop()
	runs := e.runs
	warm := e.run(t, ps, first.Lock, source.Auto)
	if warm.HelperRan || e.runs != runs || warm.Lock != nil || len(warm.Candidates) != 1 || warm.Candidates[0] != first.Candidates[0] {
		t.Errorf("warm run: %+v (%s)", warm, problems(warm))
	}
	// A cold cache with the registry down is a clear problem.
	cold := &env{reg: e.reg, cache: cache.Cache{Root: t.TempDir()}}
	o := cold.run(t, ps, first.Lock, source.Auto)
	wantProblem(t, o, "plugins.hello.source", "registry "+e.reg.Host+" is unreachable")
	if len(o.Candidates) != 0 {
		t.Errorf("candidates %+v", o.Candidates)
	}
}

// A pinned plugin missing from the cache (another machine, a CI job) is
// fetched by its digest; the lock stays as it is.
func TestPinnedFetchedByDigest(t *testing.T) {
	e := newEnv(t)
	e.push(t, "hello", "plugins/hello:stable", nil)
	ps := []source.RegistryPlugin{{Name: "hello", Source: e.reg.Ref("plugins/hello:stable")}}
	lock := e.run(t, ps, nil, source.Auto).Lock
	pinned := lock.Entry("hello").Digest
	moved := e.push(t, "hello", "plugins/hello:stable", map[string]string{"new": "x"})

	ci := &env{reg: e.reg, cache: cache.Cache{Root: t.TempDir()}}
	o := ci.run(t, ps, lock, source.Auto)
	if len(o.Problems) > 0 || o.Lock != nil || len(o.Candidates) != 1 {
		t.Fatalf("%+v %s", o, problems(o))
	}
	if o.Changes[0].To.Digest != pinned || !o.Changes[0].Downloaded {
		t.Errorf("fetched %+v; want the pinned %s, not the moved tag's %s", o.Changes[0].To, pinned, moved.Digest)
	}

	// plugins install notices the moved tag and refuses it.
	o = ci.run(t, ps, lock, source.Install)
	wantProblem(t, o, "plugins.hello.source", "the tag of "+ps[0].Source+" has moved", "plugins.lock pins plugin hello 0.0.1 ("+pinned+")",
		"now points at 0.0.1 ("+moved.Digest+")", "kube-aws plugins upgrade hello")
	// plugins upgrade moves the pin.
	o = ci.run(t, ps, lock, source.Upgrade, "hello")
	if len(o.Problems) > 0 || o.Lock == nil || o.Lock.Entry("hello").Digest != moved.Digest {
		t.Fatalf("upgrade: %+v %s", o, problems(o))
	}
	if c := o.Changes[0]; c.From.Digest != pinned || c.To.Digest != moved.Digest {
		t.Errorf("upgrade change %+v -> %+v", c.From, c.To)
	}
	if o = ci.run(t, ps, o.Lock, source.Install); len(o.Problems) > 0 {
		t.Errorf("install after upgrade: %s", problems(o))
	}
}

// A source changed in cluster.yaml is not installed silently.
func TestSourceChanged(t *testing.T) {
	e := newEnv(t)
	e.push(t, "hello", "plugins/hello:1", nil)
	e.push(t, "hello", "plugins/hello:2", map[string]string{"x": "y"})
	lock := e.run(t, []source.RegistryPlugin{{Name: "hello", Source: e.reg.Ref("plugins/hello:1")}}, nil, source.Auto).Lock
	o := e.run(t, []source.RegistryPlugin{{Name: "hello", Source: e.reg.Ref("plugins/hello:2")}}, lock, source.Auto)
	wantProblem(t, o, "plugins.hello.source", "plugins.hello.source is "+e.reg.Ref("plugins/hello:2")+", but plugins.lock pins plugin hello 0.0.1 (sha256:", "from "+e.reg.Ref("plugins/hello:1")+": run `kube-aws plugins upgrade hello`")
	o = e.run(t, []source.RegistryPlugin{{Name: "hello", Source: e.reg.Ref("plugins/hello:2")}}, lock, source.Upgrade)
	if len(o.Problems) > 0 || o.Lock.Entry("hello").Ref != e.reg.Ref("plugins/hello:2") {
		t.Errorf("upgrade to the new source: %s %+v", problems(o), o.Lock.Entry("hello"))
	}
}

// Verification is recorded in the lock by the key's fingerprint; another
// key makes kube-aws check again, and a signature that does not verify
// with it is a problem about plugins.NAME.verify.
func TestKeyChange(t *testing.T) {
	e := newEnv(t)
	cli := registrytest.NewCosign(t)
	k1, k2 := t.TempDir(), t.TempDir()
	priv1, pub1 := cli.GenerateKeyPair(t, k1)
	_, pub2 := cli.GenerateKeyPair(t, k2)
	pushed := e.push(t, "hello", "plugins/hello:1", nil)
	cli.Sign(t, priv1, pushed.Repository+"@"+pushed.Digest, registrytest.Bundle)
	ps := []source.RegistryPlugin{{Name: "hello", Source: e.reg.Ref("plugins/hello:1"), Key: pub1}}
	o := e.run(t, ps, nil, source.Auto)
	if len(o.Problems) > 0 || !strings.HasPrefix(o.Lock.Entry("hello").Key, "sha256:") {
		t.Fatalf("%s %+v", problems(o), o.Lock)
	}
	lock := o.Lock
	runs := e.runs
	if o := e.run(t, ps, lock, source.Auto); e.runs != runs || len(o.Candidates) != 1 {
		t.Errorf("a verified pin with the same key ran the helper again: %s", problems(o))
	}
	ps[0].Key = pub2
	o = e.run(t, ps, lock, source.Auto)
	wantProblem(t, o, "plugins.hello.verify", "plugin hello from "+ps[0].Source, "is refused", "verifies with the key "+pub2)
	o = e.run(t, ps, lock, source.Offline)
	wantProblem(t, o, "plugins.hello.verify", "has not been checked with the key "+pub2)
	ps[0].Key = filepath.Join(k2, "missing.pub")
	o = e.run(t, ps, lock, source.Auto)
	wantProblem(t, o, "plugins.hello.verify", "plugins.hello.verify.key: open "+ps[0].Key)
}

// Offline mode (plugins verify) never installs; names that are not
// registry plugins are refused by install and upgrade.
func TestOfflineAndNames(t *testing.T) {
	e := newEnv(t)
	e.push(t, "hello", "plugins/hello:1", nil)
	ps := []source.RegistryPlugin{{Name: "hello", Source: e.reg.Ref("plugins/hello:1")}}
	o := e.run(t, ps, nil, source.Offline)
	wantProblem(t, o, "plugins.hello.source", "is not installed: run `kube-aws plugins install`")
	if e.runs != 0 {
		t.Error("offline ran the helper")
	}
	lock := e.run(t, ps, nil, source.Auto).Lock
	other := &env{reg: e.reg, cache: cache.Cache{Root: t.TempDir()}}
	o = other.run(t, ps, lock, source.Offline)
	wantProblem(t, o, "plugins.hello.source", "is not in the plugin cache")
	o = e.run(t, ps, lock, source.Upgrade, "dex")
	wantProblem(t, o, "plugins.dex.source", "plugin dex has no plugins.dex.source in cluster.yaml")
}

// A cache entry changed on disk is noticed by its stamp and downloaded
// again by the pinned digest.
func TestTamperedEntryRepaired(t *testing.T) {
	e := newEnv(t)
	e.push(t, "hello", "plugins/hello:1", nil)
	ps := []source.RegistryPlugin{{Name: "hello", Source: e.reg.Ref("plugins/hello:1")}}
	first := e.run(t, ps, nil, source.Auto)
	exe := first.Candidates[0].Path
	good, _ := os.ReadFile(exe)
	if err := os.WriteFile(exe, []byte("#!/bin/sh\necho pwned\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	o := e.run(t, ps, first.Lock, source.Auto)
	if len(o.Problems) > 0 || len(o.Changes) != 1 || o.Changes[0].Repaired == "" || o.Lock != nil {
		t.Fatalf("%+v %s", o, problems(o))
	}
	if b, _ := os.ReadFile(exe); string(b) != string(good) {
		t.Error("not restored")
	}
	// The restored file is the Go plugin again (it refuses to run by hand).
	if out, err := exec.Command(exe).CombinedOutput(); err == nil || !strings.Contains(string(out), "This binary is a plugin") {
		t.Errorf("running the restored plugin by hand: %v %s", err, out)
	}

	// With the registry down, a changed or missing copy is refused with
	// why the registry was needed at all.
	e.reg.Stop()
	if err := os.WriteFile(exe, []byte("#!/bin/sh\necho pwned\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"because its cached copy " + filepath.Dir(exe) + " was changed on disk and is never run so",
		"because it is not in the plugin cache",
	} {
		o = e.run(t, ps, first.Lock, source.Auto)
		if len(o.Problems) != 1 || len(o.Candidates) != 0 || !strings.Contains(problems(o), "is unreachable") || !strings.Contains(problems(o), want) {
			t.Errorf("registry down: %s; want %q", problems(o), want)
		}
		if err := os.RemoveAll(filepath.Dir(exe)); err != nil {
			t.Fatal(err)
		}
	}
}

// editLock returns a copy of lock whose entry for name takes the digest,
// version and platforms of from: a plugins.lock edited to name another
// artifact while keeping its source and key.
func editLock(lock *source.Lockfile, name string, from *source.LockEntry) *source.Lockfile {
	out := &source.Lockfile{Version: lock.Version}
	for _, e := range lock.Plugins {
		if e.Name == name {
			e.Digest, e.Version, e.Platforms = from.Digest, from.Version, from.Platforms
		}
		out.Plugins = append(out.Plugins, e)
	}
	return out
}

// plugins.lock is not a way around signatures. One cluster takes an
// unsigned build of hello without a key, which puts it in the plugin cache
// every cluster on the machine shares; another cluster requires hello's
// signature. Its plugins.lock, edited to pin the unsigned digest (with that
// digest's own hashes, and the key it recorded before), must neither start
// the unsigned plugin nor pass plugins verify: whenever cluster.yaml sets a
// key, the lock's digest is checked against a signature with it, whatever
// the cache holds.
func TestEditedLockCannotSkipTheSignature(t *testing.T) {
	e := newEnv(t)
	cli := registrytest.NewCosign(t)
	priv, pub := cli.GenerateKeyPair(t, t.TempDir())
	signed := e.push(t, "hello", "plugins/hello:1.0.0", nil)
	cli.Sign(t, priv, signed.Repository+"@"+signed.Digest, registrytest.Bundle)
	unsigned := e.push(t, "hello", "plugins/hello:dev", map[string]string{"payload": "not signed"})

	// The cluster without a key fills the shared cache.
	noKey := []source.RegistryPlugin{{Name: "hello", Source: e.reg.Ref("plugins/hello:dev")}}
	other := e.run(t, noKey, nil, source.Auto)
	if len(other.Problems) > 0 || other.Lock.Entry("hello").Digest != unsigned.Digest {
		t.Fatalf("the cluster without a key: %s %+v", problems(other), other.Lock)
	}
	// The cluster with a key pins the signed build.
	keyed := []source.RegistryPlugin{{Name: "hello", Source: e.reg.Ref("plugins/hello:1.0.0"), Key: pub}}
	first := e.run(t, keyed, nil, source.Auto)
	if len(first.Problems) > 0 || first.Lock.Entry("hello").Digest != signed.Digest || first.Lock.Entry("hello").Key == "" {
		t.Fatalf("the cluster with a key: %s %+v", problems(first), first.Lock)
	}
	good := first.Lock

	for _, tc := range []struct {
		name string
		lock *source.Lockfile
		// want are the parts of the problem in Auto mode (render and the
		// stages), at plugins.hello.<field>.
		field string
		want  []string
		// offline are the parts of plugins verify's problem.
		offline []string
	}{
		{
			name:  "the unsigned digest with its own hashes",
			lock:  editLock(good, "hello", other.Lock.Entry("hello")),
			field: "verify",
			want: []string{"plugin hello from " + e.reg.Ref("plugins/hello:1.0.0") + " (" + unsigned.Digest + ") is refused: plugins.lock pins it to that digest, and it has no cosign signature",
				"with the key " + pub, "restore plugins.lock", "kube-aws plugins upgrade hello"},
			offline: []string{"plugins.lock pins plugin hello to " + unsigned.Digest, "records no check of its cosign signature with the key " + pub,
				"run `kube-aws plugins install`, which checks it", "restore plugins.lock", "kube-aws plugins upgrade hello"},
		},
		{
			name: "the signed digest with the unsigned build's hashes",
			lock: editLock(good, "hello", &source.LockEntry{Digest: signed.Digest, Version: "1.0.0",
				Platforms: other.Lock.Entry("hello").Platforms}),
			field: "source",
			want:  []string{"plugins.lock's hashes for plugin hello differ from what its pinned digest " + signed.Digest + " holds"},
			offline: []string{"plugins.lock pins plugin hello to " + signed.Digest + ", whose cosign signature verifies with the key " + pub,
				"are not what that digest holds", "restore plugins.lock", "kube-aws plugins upgrade hello"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := e.run(t, keyed, tc.lock, source.Auto)
			if len(o.Candidates) > 0 {
				t.Errorf("render would start %s, which plugins.lock names but no signature with %s covers", o.Candidates[0].Path, pub)
			}
			wantProblem(t, o, "plugins.hello."+tc.field, tc.want...)
			// plugins verify: offline, from the cache alone.
			o = e.run(t, keyed, tc.lock, source.Offline)
			if len(o.Candidates) > 0 {
				t.Errorf("plugins verify accepts %s", o.Candidates[0].Path)
			}
			wantProblem(t, o, "plugins.hello.verify", tc.offline...)
		})
	}

	// The genuine lock still runs from the cache without the helper, and
	// verifies offline.
	runs := e.runs
	if o := e.run(t, keyed, good, source.Auto); len(o.Problems) > 0 || len(o.Candidates) != 1 || e.runs != runs {
		t.Errorf("the genuine lock: %s (helper runs %d -> %d)", problems(o), runs, e.runs)
	}
	if o := e.run(t, keyed, good, source.Offline); len(o.Problems) > 0 || len(o.Candidates) != 1 {
		t.Errorf("plugins verify with the genuine lock: %s", problems(o))
	}

	// The signed build, cached by a cluster without a key on another
	// machine's cache, is checked with the key once before it runs there.
	fresh := &env{reg: e.reg, cache: cache.Cache{Root: t.TempDir()}}
	fresh.run(t, []source.RegistryPlugin{{Name: "hello", Source: e.reg.Ref("plugins/hello:1.0.0")}}, nil, source.Auto)
	if o := fresh.run(t, keyed, good, source.Offline); len(o.Problems) != 1 || o.Problems[0].Field != "verify" {
		t.Errorf("plugins verify before the key's check is recorded: %s", problems(o))
	}
	if o := fresh.run(t, keyed, good, source.Auto); len(o.Problems) > 0 || fresh.runs != 2 {
		t.Errorf("first keyed run on a cache filled without the key: %s (helper runs %d, want 2)", problems(o), fresh.runs)
	}
	if o := fresh.run(t, keyed, good, source.Auto); len(o.Problems) > 0 || fresh.runs != 2 {
		t.Errorf("the check is not remembered: %s (helper runs %d, want 2)", problems(o), fresh.runs)
	}
	if o := fresh.run(t, keyed, good, source.Offline); len(o.Problems) > 0 {
		t.Errorf("plugins verify after the check: %s", problems(o))
	}
}
