package source_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
	"github.com/kube-aws/kube-aws/plugins/source"
)

func hex64(c string) string { return strings.Repeat(c, 64) }

// A registry plugin's entry pins a digest with every platform's hashes; a
// cache entry is verified against this machine's platform, file by file.
func TestRegistryLockEntries(t *testing.T) {
	cluster := t.TempDir()
	entry := filepath.Join(t.TempDir(), "sha256", hex64("e"))
	if err := os.MkdirAll(filepath.Join(entry, "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(entry, "hello")
	for path, body := range map[string]string{exe: "#!/bin/sh\n", filepath.Join(entry, "lib", "a.py"): "A = 1\n"} {
		if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	exeSum, _ := fileutil.SHA256(exe)
	libSum, _ := fileutil.SHA256(filepath.Join(entry, "lib", "a.py"))
	other := "plan9/arm"
	e := source.LockEntry{
		Name: "hello", Source: source.OCI, Ref: "oci://127.0.0.1:5000/plugins/hello:0.1.0",
		Digest: "sha256:" + hex64("d"), Version: "0.1.0", Key: "sha256:" + hex64("k"),
		Platforms: map[string]source.PlatformLock{
			source.HostPlatform(): {Manifest: "sha256:" + hex64("e"), SHA256: exeSum, Files: map[string]string{"lib/a.py": libSum}},
			other:                 {Manifest: "sha256:" + hex64("f"), SHA256: hex64("0")},
		},
	}
	lock := &source.Lockfile{Version: 2}
	lock.Set(e)
	path := filepath.Join(cluster, source.LockfileName)
	if err := lock.Write(path); err != nil {
		t.Fatal(err)
	}
	back, err := source.ReadLockfile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*back.Entry("hello"), e) {
		t.Fatalf("round trip:\n%+v\n%+v", *back.Entry("hello"), e)
	}
	cand := source.Candidate{Name: "hello", Path: exe, Dir: entry, Source: source.OCI}
	if errs := back.Verify([]source.Candidate{cand}); len(errs) != 0 {
		t.Fatalf("an intact cache entry: %v", errs)
	}
	// Python's byte code beside the code is not a change.
	if err := os.MkdirAll(filepath.Join(entry, "lib", "__pycache__"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(entry, "lib", "__pycache__", "a.pyc"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if errs := back.Verify([]source.Candidate{cand}); len(errs) != 0 {
		t.Fatalf("__pycache__: %v", errs)
	}

	if err := os.WriteFile(filepath.Join(entry, "lib", "a.py"), []byte("A = 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	errs := back.Verify([]source.Candidate{cand})
	// The remedy for a cached copy is downloading it again: plugins lock
	// keeps a registry plugin's pin as it is.
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), filepath.Join(entry, "lib", "a.py")+" does not match plugins.lock") ||
		!strings.Contains(errs[0].Error(), "its copy in the plugin cache was changed on disk: run `kube-aws plugins install`") ||
		strings.Contains(errs[0].Error(), "kube-aws plugins lock") {
		t.Errorf("a changed file in the cache entry: %v", errs)
	}
	if err := os.WriteFile(exe, []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(entry, "lib", "a.py")); err != nil {
		t.Fatal(err)
	}
	errs = back.Verify([]source.Candidate{cand})
	if len(errs) != 2 {
		t.Fatalf("a changed executable and a removed file: %v", errs)
	}
	for _, err := range errs {
		if !strings.Contains(err.Error(), "run `kube-aws plugins install` to download it again by its pinned digest") {
			t.Errorf("no remedy for a cached copy in: %v", err)
		}
	}

	// The same name found elsewhere than in a registry.
	errs = back.Verify([]source.Candidate{{Name: "hello", Path: "/x/hello", Dir: "/x", Source: source.Contrib}})
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "was locked from a registry (oci://127.0.0.1:5000/plugins/hello:0.1.0) but is now found as a contrib plugin") {
		t.Errorf("registry entry, contrib plugin: %v", errs)
	}

	// A lock without a build for this machine.
	onlyOther := e
	onlyOther.Platforms = map[string]source.PlatformLock{other: e.Platforms[other]}
	l2 := &source.Lockfile{Version: 2}
	l2.Set(onlyOther)
	errs = l2.Verify([]source.Candidate{cand})
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "which has no build for "+source.HostPlatform()+", only for "+other) {
		t.Errorf("no build here: %v", errs)
	}

	// plugins lock keeps registry entries, which come from installing.
	fresh, err := source.LockCandidates([]source.Candidate{cand})
	if err != nil || len(fresh.Plugins) != 0 {
		t.Fatalf("LockCandidates hashed a registry plugin: %+v %v", fresh, err)
	}
	if err := fresh.KeepRegistryEntries(back, []source.Candidate{cand}); err != nil || fresh.Entry("hello").Digest != e.Digest {
		t.Errorf("KeepRegistryEntries: %v %+v", err, fresh.Entry("hello"))
	}
	if err := fresh.KeepRegistryEntries(&source.Lockfile{}, []source.Candidate{cand}); err == nil || !strings.Contains(err.Error(), "run `kube-aws plugins install`") {
		t.Errorf("KeepRegistryEntries without an entry: %v", err)
	}
}

// Hand-edited registry entries are refused with what to run.
func TestRegistryLockEntryValidation(t *testing.T) {
	good := "  ref: oci://r/p:1\n  digest: sha256:" + hex64("d") + "\n  platforms:\n    linux/amd64:\n      manifest: sha256:" + hex64("e") + "\n      sha256: " + hex64("a") + "\n"
	for name, tc := range map[string]struct{ body, want string }{
		"good":        {good, ""},
		"bad ref":     {strings.Replace(good, "oci://r/p:1", "https://r/p:1", 1), `ref "https://r/p:1" is not an oci:// reference`},
		"bad digest":  {strings.Replace(good, "digest: sha256:", "digest: md5:", 1), "is not a sha256 digest"},
		"top sha256":  {good + "  sha256: " + hex64("a") + "\n", "has sha256 or files at its top level"},
		"no platform": {"  ref: oci://r/p:1\n  digest: sha256:" + hex64("d") + "\n", "no platforms"},
		"bad hash":    {strings.Replace(good, "sha256: "+hex64("a"), "sha256: xyz", 1), "platform linux/amd64: invalid manifest digest or sha256"},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "plugins.lock")
			if err := os.WriteFile(path, []byte("version: 2\nplugins:\n- name: hello\n  source: oci\n"+tc.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := source.ReadLockfile(path)
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "kube-aws plugins upgrade hello") {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
