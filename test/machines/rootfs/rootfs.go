// Package rootfs builds and caches the root filesystem every local machine
// boots from: a Debian root made by mmdebstrap, with a few baked files, kept
// as a tar (the portable artifact) and as an unpacked folder that machines
// mount read-only as the lower layer of their overlay.
//
// The cache key is the sha256 of everything that decides the content: the
// suite, the variant, the sorted package list, the apt sources and every
// baked file. A warm run finds the folder and builds nothing.
package rootfs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// File is a file baked into the root filesystem after the packages are
// installed. A Symlink makes a symbolic link instead of a file (how systemd
// units are enabled without running systemctl in the root).
type File struct {
	Path    string
	Mode    os.FileMode
	Content []byte
	Symlink string
}

// Spec says what goes into a root filesystem.
type Spec struct {
	Suite    string   // e.g. bookworm
	Variant  string   // mmdebstrap --variant, e.g. minbase
	Packages []string // --include
	// Sources is the apt sources file (deb822 or one-line) given to
	// mmdebstrap as its mirror, so the machine installs from the same
	// archive as the host. Empty: mmdebstrap's default mirror.
	Sources string
	Files   []File
	// Hooks are mmdebstrap customize hooks: shell commands run after the
	// packages are installed, with the root folder in "$1".
	Hooks []string
}

// Image is a built root filesystem.
type Image struct {
	Key string // sha256 of the spec
	Tar string // the cached tar
	Dir string // the unpacked root, read-only lower layer for overlays
	// Built says whether this call built it (cold) or found it (warm).
	Built bool
	// Size is the tar's size in bytes.
	Size int64
}

// formatVersion changes when the way an image is assembled changes, so that
// old cache entries are not reused for a different recipe.
const formatVersion = "kube-aws-rootfs-1"

// Key returns the cache key of a spec.
func (s Spec) Key() (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00", formatVersion, s.Suite, s.Variant)
	pk := append([]string(nil), s.Packages...)
	sort.Strings(pk)
	fmt.Fprintf(h, "%s\x00", strings.Join(pk, ","))
	if s.Sources != "" {
		b, err := os.ReadFile(s.Sources)
		if err != nil {
			return "", fmt.Errorf("reading apt sources %s: %w", s.Sources, err)
		}
		h.Write(b)
	}
	h.Write([]byte{0})
	for _, k := range s.Hooks {
		fmt.Fprintf(h, "hook\x00%s\x00", k)
	}
	fs := append([]File(nil), s.Files...)
	sort.Slice(fs, func(i, j int) bool { return fs[i].Path < fs[j].Path })
	for _, f := range fs {
		fmt.Fprintf(h, "%s\x00%o\x00%s\x00%d\x00", f.Path, f.Mode, f.Symlink, len(f.Content))
		h.Write(f.Content)
	}
	return hex.EncodeToString(h.Sum(nil))[:32], nil
}

// DefaultCacheDir is $KUBE_AWS_E2E_CACHE, else $XDG_CACHE_HOME/kube-aws/e2e,
// else ~/.cache/kube-aws/e2e.
func DefaultCacheDir() (string, error) {
	if d := os.Getenv("KUBE_AWS_E2E_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache folder: set KUBE_AWS_E2E_CACHE (%w)", err)
	}
	return filepath.Join(d, "kube-aws", "e2e"), nil
}

// Ensure returns the image of spec from cacheDir, building it first when it
// is not there. Concurrent callers (two test runs) wait for each other on a
// lock file, so one builds and the other reuses. log receives mmdebstrap's
// output while it builds.
func Ensure(ctx context.Context, cacheDir string, spec Spec, log io.Writer) (*Image, error) {
	if log == nil {
		log = io.Discard
	}
	key, err := spec.Key()
	if err != nil {
		return nil, err
	}
	root := filepath.Join(cacheDir, "rootfs")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("creating the root filesystem cache %s: %w", root, err)
	}
	img := &Image{Key: key, Tar: filepath.Join(root, key+".tar"), Dir: filepath.Join(root, key)}

	lock, err := os.OpenFile(filepath.Join(root, key+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if err := flock(ctx, lock); err != nil {
		return nil, err
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN)

	done := filepath.Join(img.Dir, ".kube-aws-rootfs-complete")
	if _, err := os.Stat(done); err == nil {
		prune(root, key)
		return img, img.stat()
	}
	// A folder without the marker is a build or unpack that was cut short.
	if err := os.RemoveAll(img.Dir); err != nil {
		return nil, fmt.Errorf("removing the incomplete root %s: %w", img.Dir, err)
	}
	if _, err := os.Stat(img.Tar); err != nil {
		if err := build(ctx, spec, img, log); err != nil {
			return nil, err
		}
		img.Built = true
	}
	if err := unpack(ctx, img.Tar, img.Dir); err != nil {
		os.RemoveAll(img.Dir)
		return nil, err
	}
	if err := os.WriteFile(done, []byte(key+"\n"), 0o644); err != nil {
		return nil, err
	}
	prune(root, key)
	return img, img.stat()
}

// prune removes the images of other keys (an older package list or image
// recipe), so the cache holds one image, about 0.9 GB, not one per change.
// An image another run is building (its lock held) is left alone; one that
// a running machine still mounts can be removed safely: its overlay keeps
// the files it uses.
func prune(root, keep string) {
	locks, _ := filepath.Glob(filepath.Join(root, "*.lock"))
	for _, l := range locks {
		k := strings.TrimSuffix(filepath.Base(l), ".lock")
		if k == keep {
			continue
		}
		f, err := os.OpenFile(l, os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil {
			for _, p := range []string{k, k + ".tar", k + ".build", k + ".unpack", k + ".tar.tmp"} {
				os.RemoveAll(filepath.Join(root, p))
			}
			os.Remove(l)
		}
		f.Close()
	}
}

func (img *Image) stat() error {
	st, err := os.Stat(img.Tar)
	if err != nil {
		return err
	}
	img.Size = st.Size()
	return nil
}

func flock(ctx context.Context, f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			return fmt.Errorf("locking %s: %w", f.Name(), err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for another build of %s: %w", f.Name(), ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// build runs mmdebstrap into a scratch folder, bakes the files, and tars
// the result; the tar appears under its final name only when complete.
func build(ctx context.Context, spec Spec, img *Image, log io.Writer) error {
	if _, err := exec.LookPath("mmdebstrap"); err != nil {
		return errors.New("mmdebstrap is not installed: run `apt-get install mmdebstrap` (make e2e-cluster does)")
	}
	scratch := img.Dir + ".build"
	if err := os.RemoveAll(scratch); err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	args := []string{"--mode=root", "--variant=" + spec.Variant, "--include=" + strings.Join(spec.Packages, ","),
		// No documentation or man pages: a third less to unpack.
		"--dpkgopt=path-exclude=/usr/share/man/*", "--dpkgopt=path-exclude=/usr/share/doc/*",
		"--dpkgopt=path-exclude=/usr/share/locale/*", "--dpkgopt=path-include=/usr/share/locale/locale.alias",
	}
	for _, k := range spec.Hooks {
		args = append(args, "--customize-hook="+k)
	}
	args = append(args, spec.Suite, scratch)
	if spec.Sources != "" {
		args = append(args, spec.Sources)
	}
	cmd := exec.CommandContext(ctx, "mmdebstrap", args...)
	var tail bytes.Buffer
	w := io.MultiWriter(&tail, log)
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("mmdebstrap %s: %w\n%s", strings.Join(args, " "), err, lastLines(tail.String(), 30))
	}
	if err := Bake(scratch, spec.Files); err != nil {
		return err
	}
	tmp := img.Tar + ".tmp"
	tarCmd := exec.CommandContext(ctx, "tar", "--numeric-owner", "--xattrs", "--xattrs-include=*", "-C", scratch, "-cf", tmp, ".")
	if out, err := tarCmd.CombinedOutput(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w\n%s", tmp, err, out)
	}
	return os.Rename(tmp, img.Tar)
}

// Bake writes files into the root folder dir.
func Bake(dir string, files []File) error {
	for _, f := range files {
		p := filepath.Join(dir, f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		os.Remove(p)
		if f.Symlink != "" {
			if err := os.Symlink(f.Symlink, p); err != nil {
				return fmt.Errorf("baking %s: %w", f.Path, err)
			}
			continue
		}
		if err := os.WriteFile(p, f.Content, f.Mode); err != nil {
			return fmt.Errorf("baking %s: %w", f.Path, err)
		}
		if err := os.Chmod(p, f.Mode); err != nil {
			return err
		}
	}
	return nil
}

func unpack(ctx context.Context, tarPath, dir string) error {
	tmp := dir + ".unpack"
	os.RemoveAll(tmp)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, "tar", "--numeric-owner", "--xattrs", "--xattrs-include=*", "-C", tmp, "-xpf", tarPath)
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(tmp)
		return fmt.Errorf("unpacking %s: %w\n%s", tarPath, err, out)
	}
	return os.Rename(tmp, dir)
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > n {
		l = l[len(l)-n:]
	}
	return strings.Join(l, "\n")
}
