// Package chartcache puts a Helm chart that a built-in or contrib plugin embeds in its
// binary (go:embed) on disk, where the helm built-in plugin can load it: the
// construct.Chart a plugin contributes names a folder by absolute path, and
// the helm plugin runs in another process.
//
// The folder is <workDir>/.kube-aws/cache/plugins/<plugin>/<hash>/<chart>,
// where hash is the sha256 of the chart's files (names and contents). So:
//   - the path changes exactly when the chart does, and an unchanged chart is
//     not written again on the next run;
//   - extraction is deterministic (sorted files, fixed modes), so the render
//     output, which holds the packaged chart, is byte-identical run to run;
//   - concurrent runs are safe: each writes a temporary folder and renames it
//     into place, and a rename that loses the race finds the same content.
//
// It uses only the standard library, so plugin binaries stay lean.
package chartcache

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
)

// CacheDir is the cache folder relative to the folder holding cluster.yaml.
const CacheDir = ".kube-aws/cache/plugins"

// Hash returns the content hash of the tree under root in fsys: the sha256
// of every regular file's slash path (relative to root), length and bytes, in
// path order. It is the name of the cache folder.
func Hash(fsys fs.FS, root string) (string, error) {
	files, err := list(fsys, root)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	for _, f := range files {
		b, err := fs.ReadFile(fsys, path.Join(root, f))
		if err != nil {
			return "", err
		}
		// Length-prefixed so that moving bytes between a name and a
		// content can never give the same hash.
		fmt.Fprintf(h, "%d:%s\n%d:", len(f), f, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Extract writes the chart under root in fsys (a folder with Chart.yaml) to
// the cache of plugin beside cluster.yaml (workDir) and returns the chart
// folder's absolute path, for construct.Chart.Path. The last element of root
// names the chart folder.
func Extract(fsys fs.FS, root, workDir, plugin string) (string, error) {
	if workDir == "" {
		return "", errors.New("kube-aws did not say where cluster.yaml is (stage input WorkDir is empty), so the chart has nowhere to go")
	}
	if _, err := fs.Stat(fsys, path.Join(root, "Chart.yaml")); err != nil {
		return "", fmt.Errorf("embedded chart %s has no Chart.yaml: %w", root, err)
	}
	sum, err := Hash(fsys, root)
	if err != nil {
		return "", fmt.Errorf("reading embedded chart %s: %w", root, err)
	}
	abs, err := filepath.Abs(workDir)
	if err != nil {
		return "", err
	}
	parent := filepath.Join(abs, filepath.FromSlash(CacheDir), plugin)
	// 16 bytes of the hash keep paths short; collisions would need a
	// deliberate attack on one plugin's own embedded files.
	final := filepath.Join(parent, sum[:32])
	chartDir := filepath.Join(final, path.Base(root))
	if ok, err := complete(fsys, root, chartDir); err != nil {
		return "", err
	} else if ok {
		return chartDir, nil
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return "", fmt.Errorf("creating chart cache: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, ".tmp-")
	if err != nil {
		return "", fmt.Errorf("creating chart cache: %w", err)
	}
	defer os.RemoveAll(tmp) // a no-op once renamed
	if err := write(fsys, root, filepath.Join(tmp, path.Base(root))); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		// Another run (or a leftover from a crash) got there first. What
		// it holds is checked, not trusted: a half-written folder is
		// replaced.
		if ok, cerr := complete(fsys, root, chartDir); cerr == nil && ok {
			return chartDir, nil
		}
		if rerr := os.RemoveAll(final); rerr != nil {
			return "", fmt.Errorf("replacing stale chart cache %s: %w", final, rerr)
		}
		if err := os.Rename(tmp, final); err != nil {
			return "", fmt.Errorf("moving chart into cache: %w", err)
		}
	}
	return chartDir, nil
}

// complete reports whether dir holds exactly the chart's files with their
// contents, so a cache folder that was tampered with or half written is
// rewritten rather than used.
func complete(fsys fs.FS, root, dir string) (bool, error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	files, err := list(fsys, root)
	if err != nil {
		return false, err
	}
	onDisk, err := list(os.DirFS(dir), ".")
	if err != nil || len(onDisk) != len(files) {
		return false, nil
	}
	for i, f := range files {
		if onDisk[i] != f {
			return false, nil
		}
		want, err := fs.ReadFile(fsys, path.Join(root, f))
		if err != nil {
			return false, err
		}
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil || string(got) != string(want) {
			return false, nil
		}
	}
	return true, nil
}

func write(fsys fs.FS, root, dst string) error {
	files, err := list(fsys, root)
	if err != nil {
		return err
	}
	for _, f := range files {
		b, err := fs.ReadFile(fsys, path.Join(root, f))
		if err != nil {
			return err
		}
		out := filepath.Join(dst, filepath.FromSlash(f))
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(out, b, 0o644); err != nil {
			return fmt.Errorf("writing chart file: %w", err)
		}
	}
	return nil
}

// list returns the regular files under root, relative, slash-separated and
// sorted.
func list(fsys fs.FS, root string) ([]string, error) {
	var out []string
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			rel := p
			if root != "." {
				rel = p[len(root)+1:]
			}
			out = append(out, rel)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}
