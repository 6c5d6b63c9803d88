//go:build linux || darwin || freebsd || openbsd || netbsd || dragonfly

package host

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// ownerFile is the file in a run folder that its kube-aws holds locked
// (flock) for as long as it lives. The kernel drops the lock however the
// process ends, SIGKILL included, so a lock that can be taken means the
// owner is dead; no pid is trusted, so a reused pid cannot keep a folder.
const ownerFile = "owner"

// maxSocketPath is the longest Unix socket path every supported system
// takes (sun_path: 108 bytes on Linux, 104 on the BSDs and macOS, with the
// terminating NUL). go-plugin names its sockets <dir>/plugin<up to 10
// digits>; a run folder too deep for that is not used.
const maxSocketPath = 103

// staleStaging is how old a folder still being set up ("tmp-*", or "run-*"
// without its owner file) must be before a sweep takes it for a leftover.
const staleStaging = time.Minute

// UseRunDir gives this kube-aws process a folder of its own for the files of
// the run, <temp dir>/kube-aws-<uid>/run-*, and points TMPDIR at it. Every
// go-plugin socket lands there: the plugins' own (they inherit TMPDIR) and
// the host's broker sockets (go-plugin makes them in os.TempDir). A plugin
// killed with kube-aws (a SIGKILL of kube-aws ends its plugins through
// Pdeathsig) cannot remove its socket; instead of leaving it in /tmp, the
// next kube-aws removes every run folder whose owner is dead. release
// removes this run's folder and restores TMPDIR; call it once every plugin
// is stopped. When the folder cannot be made (no writable temp dir, a base
// folder that is not this user's own, a temp dir so deep that a socket path
// in it would be too long), nothing changes and release does nothing.
func UseRunDir() (release func()) {
	nothing := func() {}
	tmp := os.TempDir()
	base := filepath.Join(tmp, fmt.Sprintf("kube-aws-%d", os.Getuid()))
	if err := os.Mkdir(base, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return nothing
	}
	if !ownedPrivateDir(base) {
		return nothing // another user's folder under a shared /tmp: not ours to use
	}
	sweepRunDirs(base)

	staging, err := os.MkdirTemp(base, "tmp-")
	if err != nil {
		return nothing
	}
	owner, err := os.OpenFile(filepath.Join(staging, ownerFile), os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o600)
	if err == nil {
		err = syscall.Flock(int(owner.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if err != nil {
		if owner != nil {
			owner.Close()
		}
		os.RemoveAll(staging)
		return nothing
	}
	fmt.Fprintf(owner, "pid %d\n", os.Getpid()) // for a human looking; the lock decides
	// Locked first, published second: a sweep never sees a run folder whose
	// owner is alive but has not locked it yet.
	dir := filepath.Join(base, "run-"+strings.TrimPrefix(filepath.Base(staging), "tmp-"))
	if len(dir)+len("/plugin")+10 > maxSocketPath {
		// A deep temp dir: the sockets stay where go-plugin puts them.
		owner.Close()
		os.RemoveAll(staging)
		return nothing
	}
	if err := os.Rename(staging, dir); err != nil {
		owner.Close()
		os.RemoveAll(staging)
		return nothing
	}
	prev, had := os.LookupEnv("TMPDIR")
	if err := os.Setenv("TMPDIR", dir); err != nil {
		owner.Close()
		os.RemoveAll(dir)
		return nothing
	}
	return func() {
		if had {
			os.Setenv("TMPDIR", prev)
		} else {
			os.Unsetenv("TMPDIR")
		}
		os.RemoveAll(dir)
		owner.Close()
	}
}

// ownedPrivateDir reports whether dir is a real folder (not a symlink)
// owned by this user and writable by no one else.
func ownedPrivateDir(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid() && fi.Mode().Perm()&0o022 == 0
}

// sweepRunDirs removes the run folders of kube-aws processes that are gone,
// and staging folders a kube-aws died while setting up.
func sweepRunDirs(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(base, e.Name())
		switch {
		case strings.HasPrefix(e.Name(), "run-"):
			if ownerGone(dir) {
				os.RemoveAll(dir)
			}
		case strings.HasPrefix(e.Name(), "tmp-"):
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > staleStaging {
				os.RemoveAll(dir)
			}
		}
	}
}

// ownerGone reports whether the kube-aws that made a run folder has ended:
// its owner file's lock can be taken. A folder without the file is a run
// that died while setting up, once it is old enough.
func ownerGone(dir string) bool {
	f, err := os.OpenFile(filepath.Join(dir, ownerFile), os.O_RDWR, 0)
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			return false
		}
		fi, err := os.Stat(dir)
		return err == nil && time.Since(fi.ModTime()) > staleStaging
	}
	defer f.Close() // drops the lock taken to test: the owner is dead, no one else wants it
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}
