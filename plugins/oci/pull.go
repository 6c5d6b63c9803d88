package oci

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/registry/remote"

	"github.com/kube-aws/kube-aws/plugins/oci/cache"
	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

// LayerMismatchError is a layer whose bytes do not match its digest: the
// registry (or something between it and us) served other content.
type LayerMismatchError struct {
	Ref, Registry, File string
	Digest              string
	Err                 error
}

func (e *LayerMismatchError) Error() string {
	return fmt.Sprintf("%s: the file %s (layer %s) that registry %s served does not match its digest (%v): nothing was installed; the registry's copy is corrupt or was tampered with, ask its operator or the plugin's author to push it again",
		e.Ref, e.File, e.Digest, e.Registry, e.Err)
}

func (e *LayerMismatchError) Unwrap() error { return e.Err }

// files lists a platform's layers by their path in the plugin folder, the
// executable included.
func (p *Platform) files() map[string]ocispec.Descriptor {
	out := make(map[string]ocispec.Descriptor, len(p.Files)+1)
	for k, v := range p.Files {
		out[k] = v
	}
	out[p.Executable.Annotations[ocispec.AnnotationTitle]] = p.Executable
	return out
}

// CheckEntry hashes every file of a cache entry and compares it with the
// manifest: it names the first file that differs, was added or is gone.
// Python byte-code caches, which the interpreter writes beside a script
// plugin's code as it runs, are not part of the plugin.
func CheckEntry(dir string, p *Platform) error {
	want := p.files()
	seen := 0
	err := fileutil.WalkPluginFiles(dir, func(path, name string, _ fs.DirEntry) error {
		l, ok := want[name]
		if !ok {
			return fmt.Errorf("%s is not part of the plugin (added after it was downloaded)", path)
		}
		sum, err := fileutil.SHA256(path)
		if err != nil {
			return err
		}
		if "sha256:"+sum != l.Digest.String() {
			return fmt.Errorf("%s was changed after it was downloaded (want %s, have sha256:%s)", path, l.Digest, sum)
		}
		seen++
		return nil
	})
	if err != nil {
		return err
	}
	if seen != len(want) {
		var missing []string
		for name := range want {
			if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(name))); err != nil {
				missing = append(missing, name)
			}
		}
		sort.Strings(missing)
		return fmt.Errorf("files of the plugin are gone from %s: %v", dir, missing)
	}
	return nil
}

// Download puts one platform's files into the cache and returns the
// entry's folder. Each layer is streamed to disk and checked against its
// digest as it arrives; on any error nothing is left in the cache.
func Download(ctx context.Context, repo *remote.Repository, c cache.Cache, a *Artifact, p *Platform) (string, error) {
	staged, err := c.Stage()
	if err != nil {
		return "", err
	}
	keep := false
	defer func() {
		if !keep {
			os.RemoveAll(staged)
		}
	}()
	files := p.files()
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := fetchFile(ctx, repo, a.Ref, files[name], name, staged); err != nil {
			return "", err
		}
	}
	dir, err := c.Commit(staged, p.Manifest.Digest.String())
	if err != nil {
		return "", err
	}
	keep = true // Commit moved or removed it
	return dir, nil
}

func fetchFile(ctx context.Context, repo *remote.Repository, ref Reference, l ocispec.Descriptor, name, dir string) error {
	mode := os.FileMode(0o644)
	if l.MediaType == MediaTypeExecutable {
		mode = 0o755
	}
	if m, ok := l.Annotations[AnnotationMode]; ok {
		n, err := strconv.ParseUint(m, 8, 32)
		if err != nil || n&^0o777 != 0 {
			return fmt.Errorf("%s: file %s has mode %q, not an octal permission such as 0644", ref.Source, name, m)
		}
		mode = os.FileMode(n)
		if l.MediaType == MediaTypeExecutable {
			mode |= 0o500 // the owner must be able to run it
		}
	}
	path := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	rc, err := repo.Fetch(ctx, l)
	if err != nil {
		if strings.Contains(err.Error(), "mismatch Content-Length") {
			// oras's only signal that the registry serves a blob of
			// another size than the manifest says.
			return &LayerMismatchError{Ref: ref.Source, Registry: ref.Registry, File: name, Digest: l.Digest.String(), Err: content.ErrMismatchedDigest}
		}
		return explain(ref, "file "+name+" ("+l.Digest.String()+")", err)
	}
	defer rc.Close()
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	if err != nil {
		return err
	}
	vr := content.NewVerifyReader(rc, l)
	if _, err := io.Copy(f, vr); err != nil {
		f.Close()
		if errors.Is(err, content.ErrMismatchedDigest) || errors.Is(err, content.ErrTrailingData) || errors.Is(err, io.ErrUnexpectedEOF) {
			return &LayerMismatchError{Ref: ref.Source, Registry: ref.Registry, File: name, Digest: l.Digest.String(), Err: err}
		}
		return explain(ref, "file "+name, err)
	}
	if err := vr.Verify(); err != nil {
		f.Close()
		return &LayerMismatchError{Ref: ref.Source, Registry: ref.Registry, File: name, Digest: l.Digest.String(), Err: err}
	}
	if err := f.Chmod(mode); err != nil { // the umask must not take the exec bit
		f.Close()
		return err
	}
	return f.Close()
}
