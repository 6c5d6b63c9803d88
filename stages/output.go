package stages

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

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
// give byte-identical output. versions maps plugin name to plugin version for
// the manifest; a file holding the plain text of a secret is refused.
func WriteOutput(dir string, files []stage.File, versions map[string]string, secrets map[string]string) (*stage.Rendered, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(abs); err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("output %s exists and is not a folder: remove it or pass another --out", abs)
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

	sorted := append([]stage.File(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Path < sorted[j].Path })
	man := Manifest{Version: 1, Files: []stage.ManifestFile{}}
	for _, f := range sorted {
		clean, err := cleanOutputPath(f.Path)
		if err != nil {
			return nil, fmt.Errorf("rendered file %q of plugin %s: %w", f.Path, f.Plugin, err)
		}
		for marker, plain := range secrets {
			if len(plain) >= 4 && holdsSecret(f.Content, plain) {
				return nil, fmt.Errorf("rendered file %s of plugin %s holds the plain text of secret %s: plugins must write the marker, never the value", clean, f.Plugin, marker)
			}
		}
		mode := os.FileMode(0o644)
		if f.Mode != "" {
			m, err := strconv.ParseUint(f.Mode, 8, 32)
			if err != nil || m > 0o777 {
				return nil, fmt.Errorf("rendered file %s of plugin %s: mode %q is not an octal permission like 0644", clean, f.Plugin, f.Mode)
			}
			mode = os.FileMode(m)
		}
		target := filepath.Join(tmp, filepath.FromSlash(clean))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return nil, fmt.Errorf("rendered file %s of plugin %s: %w", clean, f.Plugin, err)
		}
		if !reuse(filepath.Join(abs, filepath.FromSlash(clean)), target, f.Content, mode) {
			if err := os.WriteFile(target, f.Content, mode); err != nil {
				return nil, fmt.Errorf("rendered file %s of plugin %s: %w", clean, f.Plugin, err)
			}
			if err := os.Chmod(target, mode); err != nil { // umask must not make output differ between machines
				return nil, err
			}
		}
		sum := sha256.Sum256(f.Content)
		man.Files = append(man.Files, stage.ManifestFile{
			Path: clean, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(f.Content)),
			Plugin: f.Plugin, Version: versions[f.Plugin],
		})
	}
	b, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, ManifestName), append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	if err := swapDir(tmp, abs); err != nil {
		return nil, err
	}
	done = true
	return &stage.Rendered{Dir: abs, Files: man.Files}, nil
}

// reuse links the previous output's file prev to target when prev is a
// regular file with exactly content and mode, and reports whether it did.
// A re-render mostly writes what the previous one wrote, and creating a
// file (a new inode) costs far more than linking one: on an ext4 volume
// about 0.2 ms of system CPU against 0.01 ms, which at 100 node pools (over
// 200 files) was a tenth of a render's CPU. The previous file is compared
// byte for byte, never trusted from its manifest: it may have been edited.
// Nothing is ever written to a linked file, so the previous output stays as
// it was until the new one replaces it. Any failure (no previous output, a
// file system without hard links) writes the file instead.
func reuse(prev, target string, content []byte, mode os.FileMode) bool {
	fi, err := os.Lstat(prev)
	if err != nil || fi.Mode() != mode || fi.Size() != int64(len(content)) { // a regular file's Mode is its permissions alone
		return false
	}
	b, err := os.ReadFile(prev)
	if err != nil || !bytes.Equal(b, content) {
		return false
	}
	return os.Link(prev, target) == nil
}

// anchorLen is the length of the part of a long secret holdsSecret looks
// for first: short enough for bytes.Index's vector search (at most 63 bytes
// on amd64), long enough that text rarely holds it by chance.
const anchorLen = 32

// holdsSecret reports whether content holds the text plain, as bytes.Contains
// does. A key in PEM starts with "-----BEGIN", which rendered YAML and JSON
// are full of, and is too long for bytes.Index's vector search: every file
// then went through its byte-at-a-time fallback once per secret. So a long
// secret is found by a piece from its middle (random key material), and
// each place that piece occurs is checked for the whole secret.
func holdsSecret(content []byte, plain string) bool {
	if len(plain) < 2*anchorLen {
		return bytes.Contains(content, []byte(plain))
	}
	off := (len(plain) - anchorLen) / 2
	anchor := []byte(plain[off : off+anchorLen])
	for i := off; i+len(plain)-off <= len(content); {
		j := bytes.Index(content[i:len(content)-(len(plain)-off-anchorLen)], anchor)
		if j < 0 {
			return false
		}
		start := i + j - off
		if string(content[start:start+len(plain)]) == plain {
			return true
		}
		i += j + 1
	}
	return false
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
