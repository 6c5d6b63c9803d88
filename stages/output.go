package stages

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"unsafe"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/parallel"
	"github.com/kube-aws/kube-aws/core/stage"
)

// ManifestName is the file in the render output that lists every other file.
const ManifestName = "manifest.json"

// Manifest is rendered/manifest.json.
type Manifest struct {
	Version int                  `json:"version"`
	Files   []stage.ManifestFile `json:"files"`
}

// WriteOutput writes rendered files to dir atomically: everything goes to a
// temporary folder beside dir, manifest.json last, and only then is the
// folder renamed into place; the previous output is removed only after the
// new one is complete, so a failed run leaves it untouched. The same files
// give byte-identical output, and an output that already holds exactly them
// (nothing more, nothing edited) is left as it is. versions maps plugin name
// to plugin version for the manifest; a file holding the plain text of a
// secret is refused.
func WriteOutput(dir string, files []stage.File, versions map[string]string, secrets map[string]string) (*stage.Rendered, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(abs); err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("output %s exists and is not a folder: remove it or pass another --out", abs)
	}
	out, man, err := outputFiles(files, versions, secrets)
	if err != nil {
		return nil, err
	}
	rendered := &stage.Rendered{Dir: abs, Files: man.Files}
	b, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return nil, err
	}
	manifest := outputFile{path: ManifestName, content: append(b, '\n'), mode: 0o644}
	same, whole := compareOutput(abs, out, manifest)
	if whole {
		return rendered, nil
	}

	parent := filepath.Dir(abs)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(abs)+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("creating a temporary folder beside %s: %w", abs, err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	for i, f := range out {
		target := filepath.Join(tmp, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return nil, fmt.Errorf("rendered file %s of plugin %s: %w", f.path, f.plugin, err)
		}
		// A file the previous output holds as it is now is linked, not
		// written: creating a file (a new inode) costs far more than
		// linking one, on ext4 about 0.2 ms of system CPU against 0.01 ms,
		// which at 100 node pools (over 200 files) was a tenth of a
		// render's CPU. Nothing is ever written to a linked file, so the
		// previous output stays as it was until the new one replaces it.
		// Any failure (a file system without hard links) writes the file.
		if same[i] && os.Link(filepath.Join(abs, filepath.FromSlash(f.path)), target) == nil {
			continue
		}
		if err := os.WriteFile(target, f.content, f.mode); err != nil {
			return nil, fmt.Errorf("rendered file %s of plugin %s: %w", f.path, f.plugin, err)
		}
		if err := os.Chmod(target, f.mode); err != nil { // umask must not make output differ between machines
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(tmp, ManifestName), manifest.content, manifest.mode); err != nil {
		return nil, err
	}
	if err := swapDir(tmp, abs); err != nil {
		return nil, err
	}
	done = true
	return rendered, nil
}

// outputFile is one file of the render output as it is to be written.
type outputFile struct {
	path    string // clean, slash-separated, relative to the output folder
	content []byte
	mode    os.FileMode
	plugin  string
}

// outputFiles checks every rendered file (its path, its mode, that it holds
// no plain secret) before anything is written, and returns them sorted by
// path with the manifest that lists them. The files are checked and hashed
// on every CPU (at 100 node pools, 2.5 MB searched for each secret and
// hashed); a failure is the first file's by path, as one by one.
func outputFiles(files []stage.File, versions map[string]string, secrets map[string]string) ([]outputFile, Manifest, error) {
	sorted := append([]stage.File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	man := Manifest{Version: 1, Files: []stage.ManifestFile{}}
	out := make([]outputFile, len(sorted))
	sums := make([][sha256.Size]byte, len(sorted))
	errs := make([]error, len(sorted))
	held := newHeldSecrets(secrets)
	parallel.For(len(sorted), func(i int) {
		out[i], errs[i] = checkFile(sorted[i], held)
		if errs[i] == nil {
			sums[i] = sha256.Sum256(sorted[i].Content)
		}
	})
	for i, f := range sorted {
		if errs[i] != nil {
			return nil, man, errs[i]
		}
		man.Files = append(man.Files, stage.ManifestFile{
			Path: out[i].path, SHA256: hex.EncodeToString(sums[i][:]), Size: int64(len(f.Content)),
			Plugin: f.Plugin, Version: versions[f.Plugin],
		})
	}
	return out, man, nil
}

// checkFile is one rendered file as it is to be written, or why it cannot be.
func checkFile(f stage.File, secrets heldSecrets) (outputFile, error) {
	clean, err := cleanOutputPath(f.Path)
	if err != nil {
		return outputFile{}, fmt.Errorf("rendered file %q of plugin %s: %w", f.Path, f.Plugin, err)
	}
	if marker, ok := secrets.in(f.Content); ok {
		return outputFile{}, fmt.Errorf("rendered file %s of plugin %s holds the plain text of secret %s: plugins must write the marker, never the value", clean, f.Plugin, marker)
	}
	mode := os.FileMode(0o644)
	if f.Mode != "" {
		m, err := strconv.ParseUint(f.Mode, 8, 32)
		if err != nil || m > 0o777 {
			return outputFile{}, fmt.Errorf("rendered file %s of plugin %s: mode %q is not an octal permission like 0644", clean, f.Plugin, f.Mode)
		}
		mode = os.FileMode(m)
	}
	return outputFile{path: clean, content: f.Content, mode: mode, plugin: f.Plugin}, nil
}

// compareOutput reports which files the output folder abs already holds
// exactly (a regular file with the same bytes and mode: compared byte for
// byte, never trusted from the manifest, which may have been edited), and
// whether abs holds exactly the new output: every file and the manifest
// unchanged, abs itself with mode 0755 as WriteOutput makes it, and nothing
// else in it (a file or folder the new output lacks, a symlink). A re-render
// with nothing changed then rewrites nothing, as most re-renders are.
func compareOutput(abs string, files []outputFile, manifest outputFile) (same []bool, whole bool) {
	same = make([]bool, len(files))
	fi, err := os.Lstat(abs)
	if err != nil || !fi.IsDir() {
		return same, false
	}
	whole = fi.Mode().Perm() == 0o755 && holds(abs, manifest)
	parallel.For(len(files), func(i int) { same[i] = holds(abs, files[i]) })
	want := map[string]bool{ManifestName: true}
	for i, f := range files {
		whole = whole && same[i]
		want[f.path] = true
		for d := path.Dir(f.path); d != "."; d = path.Dir(d) {
			want[d] = true
		}
	}
	if !whole {
		return same, false
	}
	err = filepath.WalkDir(abs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(abs, p)
		if err != nil {
			return err
		}
		if rel != "." && !want[filepath.ToSlash(rel)] {
			return errExtra
		}
		return nil
	})
	return same, err == nil
}

// errExtra stops compareOutput's walk at the first entry the new output lacks.
var errExtra = errors.New("not in the new output")

// holds reports whether the folder abs holds f as a regular file with its
// bytes and mode.
func holds(abs string, f outputFile) bool {
	return holdsFile(filepath.Join(abs, filepath.FromSlash(f.path)), f.content, f.mode)
}

// heldSecrets finds the plain text of a secret of 4 bytes or more in a
// rendered file: all of them in one pass over it (config.SecretSearch).
type heldSecrets struct {
	markers []string // sorted: a file holding two names the first
	search  *config.SecretSearch
}

func newHeldSecrets(secrets map[string]string) heldSecrets {
	var h heldSecrets
	for marker, plain := range secrets {
		if len(plain) >= 4 {
			h.markers = append(h.markers, marker)
		}
	}
	sort.Strings(h.markers)
	plains := make([]string, len(h.markers))
	for i, m := range h.markers {
		plains[i] = secrets[m]
	}
	h.search = config.NewSecretSearch(plains)
	return h
}

// in returns the marker of the secret content holds, if it holds one (as
// bytes.Contains would find it, without copying the file).
func (h heldSecrets) in(content []byte) (string, bool) {
	if len(h.markers) == 0 {
		return "", false
	}
	if i := h.search.First(unsafe.String(unsafe.SliceData(content), len(content))); i >= 0 {
		return h.markers[i], true
	}
	return "", false
}

// swapDir puts the complete folder tmp in place of dir. A folder cannot be
// renamed over a non-empty one, so the old output is first moved aside and
// is removed only once the new one is in place (and put back on failure).
func swapDir(tmp, dir string) error {
	old := ""
	if _, err := os.Stat(dir); err == nil {
		old = tmp + ".old"
		if err := os.Rename(dir, old); err != nil {
			return fmt.Errorf("moving the previous output %s aside: %w", dir, err)
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if old != "" {
			if rerr := os.Rename(old, dir); rerr != nil {
				return fmt.Errorf("putting the new output in place failed (%v) and the previous output is at %s (%v)", err, old, rerr)
			}
		}
		return fmt.Errorf("putting the new output in place at %s: %w", dir, err)
	}
	if old != "" {
		if err := os.RemoveAll(old); err != nil {
			return fmt.Errorf("removing the previous output %s: %w", old, err)
		}
	}
	return nil
}

// relToDir returns p relative to base when it is inside base, else p: state
// files then survive a checkout in another folder (another CI job).
func relToDir(base, p string) string {
	r, err := filepath.Rel(base, p)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return p
	}
	return filepath.ToSlash(r)
}
