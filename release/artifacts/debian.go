package artifacts

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

// defaultDebianSources is the apt source list mmdebstrap reads when the
// caller names none: the machine's own (a Debian host), so that packages come
// from the mirror the machine image is built from.
const defaultDebianSources = "/etc/apt/sources.list.d/debian.sources"

// buildDebian extracts a Debian set for the run's architecture with
// mmdebstrap's extract variant (packages and their dependencies unpacked, no
// maintainer script run, so a foreign architecture needs no emulator) and
// turns it into a layer (layer.tar.zst) or a CA bundle (ca-certificates.crt).
func (r *run) buildDebian(ctx context.Context, name string) (string, *stamp, error) {
	set := debianSets[name]
	outDir := filepath.Join(r.stateDir, "debian", name, r.platform)
	out := filepath.Join(outDir, "layer.tar.zst")
	if set.bundle {
		out = filepath.Join(outDir, "ca-certificates.crt")
	}
	id := "debian-" + name + "-" + r.platform
	sources, err := r.debianSourcesID()
	if err != nil {
		return "", nil, err
	}
	inputs := inputHash(map[string]any{
		"builder": r.builderHash, "packages": set.packages, "keep": set.keep, "drop": debianDrop,
		"links": set.links, "suite": debianSuite, "sources": sources, "arch": r.arch,
	})
	if s, ok := readStamp(r.stateDir, id, inputs); ok {
		r.step(id, true, time.Duration(s.Seconds*float64(time.Second)))
		return out, s, nil
	}
	mmdebstrap, err := exec.LookPath("mmdebstrap")
	if err != nil {
		return "", nil, fmt.Errorf("debian set %s: mmdebstrap is not installed: `apt-get install mmdebstrap` (make artifacts does it)", name)
	}

	start := time.Now()
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", nil, err
	}
	root, err := os.MkdirTemp(outDir, "root-")
	if err != nil {
		return "", nil, err
	}
	defer os.RemoveAll(root)
	fmt.Fprintf(r.log, "%s: mmdebstrap %s %s (%s)\n", id, debianSuite, strings.Join(set.packages, ","), r.arch)
	args := []string{
		"--quiet", "--variant=extract", "--architectures=" + r.arch,
		"--include=" + strings.Join(set.packages, ","),
		// Keep the downloaded .deb files: their names are the record of
		// which package versions the layer holds.
		"--skip=cleanup/apt/cache",
		debianSuite, root, r.debianSources,
	}
	cmd := exec.CommandContext(ctx, mmdebstrap, args...)
	var outBuf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &outBuf, &outBuf
	if err := cmd.Run(); err != nil {
		return "", nil, fmt.Errorf("debian set %s for %s: mmdebstrap %s failed: %w\n%s\nIt needs root and the Debian mirror of %s",
			name, r.platform, strings.Join(args, " "), err, tail(outBuf.String(), 30), r.debianSources)
	}
	packages, err := debPackages(filepath.Join(root, "var/cache/apt/archives"))
	if err != nil {
		return "", nil, fmt.Errorf("debian set %s: %w", name, err)
	}
	if err := pruneTree(root, set.keep); err != nil {
		return "", nil, fmt.Errorf("debian set %s: %w", name, err)
	}
	if set.bundle {
		err = writeBundle(root, out)
	} else {
		err = writeDebianLayer(root, set, out)
	}
	if err != nil {
		return "", nil, fmt.Errorf("debian set %s: %w", name, err)
	}
	took := time.Since(start)
	s, err := writeStamp(r.stateDir, id, inputs, []string{out}, packages, took)
	if err != nil {
		return "", nil, err
	}
	r.step(id, false, took)
	return out, s, nil
}

// debianSourcesID identifies the apt sources: the file's hash when it is a
// file (its content decides the packages), else the mirror URL itself.
func (r *run) debianSourcesID() (string, error) {
	if _, err := os.Stat(r.debianSources); err != nil {
		if strings.Contains(r.debianSources, "://") {
			return r.debianSources, nil
		}
		return "", fmt.Errorf("debian sources %s: %w (give a sources file or a mirror URL with -debian-sources)", r.debianSources, err)
	}
	return fileutil.SHA256(r.debianSources)
}

// debPackages lists the .deb files apt downloaded as name_version_arch.
func debPackages(archives string) ([]string, error) {
	des, err := os.ReadDir(archives)
	if err != nil {
		return nil, fmt.Errorf("read the downloaded packages: %w", err)
	}
	var out []string
	for _, d := range des {
		n := d.Name()
		if !strings.HasSuffix(n, ".deb") {
			continue
		}
		if u, err := url.PathUnescape(strings.TrimSuffix(n, ".deb")); err == nil {
			n = u
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, errors.New("mmdebstrap downloaded no package")
	}
	sort.Strings(out)
	return out, nil
}

// pruneTree removes what no image needs (debianDrop) and, when keep is not
// empty, everything outside keep.
func pruneTree(root string, keep []string) error {
	for _, d := range debianDrop {
		if err := os.RemoveAll(filepath.Join(root, d)); err != nil {
			return err
		}
	}
	if len(keep) == 0 {
		return nil
	}
	var remove []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if rel == "." {
			return nil
		}
		for _, k := range keep {
			if rel == k || strings.HasPrefix(rel, k+"/") {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if strings.HasPrefix(k, rel+"/") && d.IsDir() {
				return nil // a parent of something kept
			}
		}
		remove = append(remove, p)
		if d.IsDir() {
			return filepath.SkipDir
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range remove {
		if err := os.RemoveAll(p); err != nil {
			return err
		}
	}
	for _, k := range keep {
		if _, err := os.Lstat(filepath.Join(root, k)); err != nil {
			return fmt.Errorf("the packages hold no %s: %w", k, err)
		}
	}
	return nil
}

// writeDebianLayer writes the pruned tree and the set's symlinks as a layer.
func writeDebianLayer(root string, set debianSet, out string) error {
	entries, err := treeEntries(root)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for _, e := range entries {
		have[e.path] = true
	}
	var links []string
	for l := range set.links {
		links = append(links, l)
	}
	sort.Strings(links)
	for _, l := range links {
		target := set.links[l]
		p := "/" + l
		if have[p] {
			return fmt.Errorf("link %s: the packages already hold that path", p)
		}
		// A relative target must exist beside the link, or the link would
		// dangle in every image.
		if _, err := os.Lstat(filepath.Join(root, path.Dir(l), target)); err != nil {
			return fmt.Errorf("link %s -> %s: the packages hold no %s", p, target, target)
		}
		entries = append(entries, entry{path: p, typ: tar.TypeSymlink, mode: 0o777, link: target})
	}
	return writeLayer(out, entries)
}

// writeBundle concatenates the Mozilla CA certificates of the ca-certificates
// package in name order: what update-ca-certificates writes to
// /etc/ssl/certs/ca-certificates.crt with the package's default selection.
func writeBundle(root, out string) error {
	dir := filepath.Join(root, "usr/share/ca-certificates/mozilla")
	names, err := filepath.Glob(filepath.Join(dir, "*.crt"))
	if err != nil {
		return err
	}
	if len(names) == 0 {
		return fmt.Errorf("no certificate in %s", dir)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return err
		}
		buf.Write(b)
		if len(b) > 0 && b[len(b)-1] != '\n' {
			buf.WriteByte('\n')
		}
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}
