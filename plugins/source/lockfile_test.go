package source_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/plugins/source"
)

func TestLockfileRoundTripAndVerify(t *testing.T) {
	cluster := t.TempDir()
	outside := t.TempDir()
	a := filepath.Join(cluster, "plugins", "a", "a")
	b := filepath.Join(outside, "b", "b")
	builtin := filepath.Join(outside, "builtin", "iam")
	writeExe(t, a, 0o755)
	writeExe(t, b, 0o755)
	writeExe(t, builtin, 0o755)
	cands := []source.Candidate{
		{Name: "iam", Path: builtin, Source: source.Builtin},
		{Name: "a", Path: a, Source: source.User},
		{Name: "b", Path: b, Source: source.Contrib},
	}
	lock, err := source.LockCandidates(cands)
	if err != nil {
		t.Fatal(err)
	}
	if len(lock.Plugins) != 2 || lock.Entry("iam") != nil {
		t.Fatalf("built-ins are not locked, the rest are: %+v", lock.Plugins)
	}
	path := filepath.Join(cluster, source.LockfileName)
	if err := lock.Write(path); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if !strings.Contains(string(raw), "path: plugins/a/a") || strings.Contains(string(raw), outside) || !strings.HasPrefix(string(raw), "# plugins.lock") {
		t.Errorf("a user plugin's path is relative to cluster.yaml, a contrib plugin has none:\n%s", raw)
	}
	back, err := source.ReadLockfile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, lock) {
		t.Errorf("read back %+v, wrote %+v", back, lock)
	}
	if errs := back.Verify(cands); len(errs) != 0 {
		t.Errorf("fresh lock does not verify: %v", errs)
	}

	// Change a, add c, remove b: every problem is reported.
	if err := os.WriteFile(a, []byte("#!/bin/sh\necho changed\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	c := filepath.Join(cluster, "plugins", "c", "c")
	writeExe(t, c, 0o755)
	errs := back.Verify([]source.Candidate{cands[0], cands[1], {Name: "c", Path: c, Source: source.User}})
	all := ""
	for _, e := range errs {
		all += e.Error() + "\n"
	}
	for _, want := range []string{
		"plugin a (" + a + ") does not match plugins.lock (want sha256 " + lock.Entry("a").SHA256 + ", have ",
		"if you changed it on purpose run `kube-aws plugins lock`",
		"plugin c (" + c + ") is not in plugins.lock",
		"plugins.lock lists plugin b (contrib) but it was not found",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("verify errors lack %q:\n%s", want, all)
		}
	}
}

func TestReadLockfileBad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, source.LockfileName)
	for name, content := range map[string]string{
		"unknown field": "version: 2\nplugins: []\nextra: 1\n",
		"version":       "version: 7\nplugins: []\n",
		"version 1":     "version: 1\nplugins:\n- name: a\n  path: /opt/kube-aws/contrib/a\n  sha256: " + strings.Repeat("0", 64) + "\n",
		"sha":           "version: 2\nplugins:\n- name: a\n  sha256: xyz\n",
		"file sha":      "version: 2\nplugins:\n- name: a\n  sha256: " + strings.Repeat("0", 64) + "\n  files: {x.py: xyz}\n",
	} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := source.ReadLockfile(path)
		if l := lacks(err, path, "kube-aws plugins lock"); len(l) > 0 {
			t.Errorf("%s: error %v does not say %q", name, err, l)
		}
	}
	_, err := source.ReadLockfile(filepath.Join(dir, "absent"))
	if !os.IsNotExist(unwrapAll(err)) {
		t.Errorf("a missing lock file must be recognisable: %v", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}
