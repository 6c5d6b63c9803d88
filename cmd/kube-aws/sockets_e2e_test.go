package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// sockets lists the Unix socket files under dir.
func sockets(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSocket != 0 {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A SIGKILL of kube-aws ends its plugins (Pdeathsig), which then cannot
// remove their go-plugin socket files. They are left in the run's own
// folder, and the next kube-aws removes that folder because its owner is
// dead: after it, no socket file of either run is left.
func TestSocketFilesOfAKilledRunAreRemovedByTheNext(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	l.userPlugin("hang", "github.com/kube-aws/kube-aws/plugins/testdata/hang", "")
	l.userPlugin("hello", "github.com/kube-aws/kube-aws/cmd/kube-aws/testdata/hello", "")
	// Socket paths are short (108 bytes): t.TempDir's are too deep for
	// kube-aws to add a run folder under them.
	tmp, err := os.MkdirTemp("", "ka")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })

	c := l.cmd("render")
	c.Env = append(c.Env, "TMPDIR="+tmp, "KUBE_AWS_TEST_HANG_STAGE=initialise")
	var stderr bytes.Buffer
	c.Stderr = &stderr
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	// Mid-run: three plugins serve their sockets and the hanging one has
	// its stage call, with the host's broker socket for it.
	deadline := time.Now().Add(20 * time.Second) // generous: CI machines are loaded
	for len(sockets(t, tmp)) < 4 {
		if time.Now().After(deadline) {
			c.Process.Kill()
			c.Wait()
			t.Fatalf("kube-aws never got mid-run: sockets %v\n%s", sockets(t, tmp), stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if err := c.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = c.Wait()
	l.assertNoPluginLeft()
	left := sockets(t, tmp)
	t.Logf("socket files left by the killed run: %d", len(left))
	if len(left) == 0 {
		t.Fatal("the killed run left no socket file: the test did not kill it mid-run")
	}
	for _, s := range left {
		if filepath.Dir(s) == tmp {
			t.Fatalf("socket %s is in the temp folder itself, not in a run folder", s)
		}
	}

	// The next run (any command; this one starts every plugin).
	next := l.cmd("plugins", "list")
	next.Env = append(next.Env, "TMPDIR="+tmp)
	if out, err := next.CombinedOutput(); err != nil {
		t.Fatalf("plugins list: %v\n%s", err, out)
	}
	var runs []string
	if left := sockets(t, tmp); len(left) != 0 {
		t.Fatalf("socket files left after the next run: %d %v", len(left), left)
	}
	runs, err = filepath.Glob(filepath.Join(tmp, "kube-aws-*", "*"))
	if err != nil || len(runs) != 0 {
		t.Fatalf("run folders left after the next run: %v %v", runs, err)
	}
	entries, _ := os.ReadDir(tmp)
	if len(entries) != 1 {
		t.Fatalf("the temp folder holds %d entries, want only kube-aws-<uid>", len(entries))
	}
}
