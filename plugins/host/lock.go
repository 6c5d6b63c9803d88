package host

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/kube-aws/kube-aws/internal/fileutil"
)

// LockfileName is the name of the lock file beside cluster.yaml.
const LockfileName = "plugins.lock"

// lockfileVersion is the format version written into plugins.lock.
const lockfileVersion = 1

// Lockfile is plugins.lock: the sha256 of every non-built-in plugin, written
// by `kube-aws plugins lock` and checked before any plugin starts. Built-in
// plugins ship inside kube-aws's own release and are not listed.
//
// On disk it is YAML, so it reads well in a review:
//
//	# plugins.lock: written by `kube-aws plugins lock`; commit it beside cluster.yaml.
//	version: 1
//	plugins:
//	- name: dex
//	  source: user
//	  path: plugins/dex/dex
//	  sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
//
// Paths are relative to the folder holding plugins.lock when the plugin is
// inside it, absolute otherwise; in memory they are always absolute.
type Lockfile struct {
	Version int         `json:"version"`
	Plugins []LockEntry `json:"plugins"`
}

// LockEntry is one locked plugin.
type LockEntry struct {
	Name   string `json:"name"`
	Source Source `json:"source"`
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	// Files is the sha256 of every other file in a user plugin's folder
	// (see FolderSHA256): a plugin in Python is a small entry script and
	// the code beside it, and locking the entry script alone would let that
	// code change unnoticed. Empty when the folder holds nothing else.
	Files string `json:"files,omitempty"`
}

const lockHeader = "# plugins.lock: written by `kube-aws plugins lock`; commit it beside cluster.yaml.\n" +
	"# kube-aws refuses to start a plugin whose sha256 differs from its entry here.\n"

// LockCandidates hashes every non-built-in candidate.
func LockCandidates(cands []Candidate) (*Lockfile, error) {
	l := &Lockfile{Version: lockfileVersion, Plugins: []LockEntry{}}
	var errs []error
	for _, c := range cands {
		if c.Source == SourceBuiltin {
			continue
		}
		sum, err := fileutil.SHA256(c.Path)
		if err != nil {
			errs = append(errs, fmt.Errorf("locking plugin %s: %w", c.Name, err))
			continue
		}
		files, err := pluginFilesSHA256(c)
		if err != nil {
			errs = append(errs, fmt.Errorf("locking plugin %s: %w", c.Name, err))
			continue
		}
		l.Plugins = append(l.Plugins, LockEntry{Name: c.Name, Source: c.Source, Path: absClean(c.Path), SHA256: sum, Files: files})
	}
	sort.Slice(l.Plugins, func(i, j int) bool { return l.Plugins[i].Name < l.Plugins[j].Name })
	return l, errors.Join(errs...)
}

// ReadLockfile reads plugins.lock. A missing file is reported with an error
// wrapping fs.ErrNotExist, so callers can treat "no lock" as "no check".
func ReadLockfile(path string) (*Lockfile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	var l Lockfile
	if err := yaml.UnmarshalStrict(data, &l); err != nil {
		return nil, fmt.Errorf("%s is not a valid plugins.lock: %v; regenerate it with `kube-aws plugins lock`", path, err)
	}
	if l.Version != lockfileVersion {
		return nil, fmt.Errorf("%s has format version %d; this kube-aws reads version %d: regenerate it with `kube-aws plugins lock`", path, l.Version, lockfileVersion)
	}
	base := filepath.Dir(absClean(path))
	for i, e := range l.Plugins {
		if e.Name == "" || e.SHA256 == "" {
			return nil, fmt.Errorf("%s: entry %d lacks a name or sha256; regenerate it with `kube-aws plugins lock`", path, i+1)
		}
		if _, err := hex.DecodeString(e.SHA256); err != nil || len(e.SHA256) != 64 {
			return nil, fmt.Errorf("%s: plugin %s has an invalid sha256 %q; regenerate it with `kube-aws plugins lock`", path, e.Name, e.SHA256)
		}
		if e.Path != "" && !filepath.IsAbs(e.Path) {
			l.Plugins[i].Path = filepath.Join(base, filepath.FromSlash(e.Path))
		}
	}
	return &l, nil
}

// Write writes the lock file atomically, with paths relative to its folder
// where possible so that the cluster folder can be moved or cloned.
func (l *Lockfile) Write(path string) error {
	base := filepath.Dir(absClean(path))
	out := Lockfile{Version: lockfileVersion, Plugins: make([]LockEntry, len(l.Plugins))}
	for i, e := range l.Plugins {
		if rel, err := filepath.Rel(base, e.Path); err == nil && filepath.IsAbs(e.Path) && !strings.HasPrefix(rel, "..") {
			e.Path = filepath.ToSlash(rel)
		}
		out.Plugins[i] = e
	}
	data, err := yaml.Marshal(out)
	if err != nil {
		return err
	}
	if err := fileutil.WriteAtomic(path, append([]byte(lockHeader), data...), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// Entry returns the entry of the named plugin, or nil.
func (l *Lockfile) Entry(name string) *LockEntry {
	if l == nil {
		return nil
	}
	for i := range l.Plugins {
		if l.Plugins[i].Name == name {
			return &l.Plugins[i]
		}
	}
	return nil
}

// Verify checks every non-built-in candidate against the lock and reports
// every difference: a plugin missing from the lock, a changed binary, a
// plugin found elsewhere than where it was locked, and a locked plugin that
// is gone.
func (l *Lockfile) Verify(cands []Candidate) []error {
	var errs []error
	seen := map[string]bool{}
	for _, c := range cands {
		if c.Source == SourceBuiltin {
			continue
		}
		seen[c.Name] = true
		e := l.Entry(c.Name)
		if e == nil {
			errs = append(errs, notLockedError(c))
			continue
		}
		if e.Path != "" && absClean(e.Path) != absClean(c.Path) {
			errs = append(errs, fmt.Errorf("plugin %s was locked at %s but is now at %s; if you moved it on purpose run `kube-aws plugins lock`", c.Name, e.Path, c.Path))
			continue
		}
		have, err := fileutil.SHA256(c.Path)
		if err != nil {
			errs = append(errs, fmt.Errorf("verifying plugin %s: %w", c.Name, err))
			continue
		}
		if have != strings.ToLower(e.SHA256) {
			errs = append(errs, mismatchError(c, e.SHA256, have))
			continue
		}
		if err := checkFiles(c, e); err != nil {
			errs = append(errs, err)
		}
	}
	if l != nil {
		for _, e := range l.Plugins {
			if !seen[e.Name] {
				errs = append(errs, fmt.Errorf("plugins.lock lists plugin %s (%s) but it was not found; run `kube-aws plugins lock` to drop it", e.Name, e.Path))
			}
		}
	}
	return errs
}

func notLockedError(c Candidate) error {
	return fmt.Errorf("plugin %s (%s) is not in plugins.lock, so kube-aws will not start it; if you trust it run `kube-aws plugins lock`", c.Name, c.Path)
}

func mismatchError(c Candidate, want, have string) error {
	return fmt.Errorf("plugin %s (%s) does not match plugins.lock (want sha256 %s, have %s); if you changed it on purpose run `kube-aws plugins lock`", c.Name, c.Path, want, have)
}

// pluginFilesSHA256 hashes the rest of a user plugin's folder; built-in and
// contrib plugins are single executables in a shared folder.
func pluginFilesSHA256(c Candidate) (string, error) {
	if c.Source != SourceUser || c.Dir == "" {
		return "", nil
	}
	return FolderSHA256(c.Dir, c.Path)
}

// checkFiles compares a user plugin's folder with its lock entry. An entry
// written without Files (an older lock, or a folder that held only the
// executable) still catches files added since.
func checkFiles(c Candidate, e *LockEntry) error {
	have, err := pluginFilesSHA256(c)
	if err != nil {
		return fmt.Errorf("verifying plugin %s: %w", c.Name, err)
	}
	if have != strings.ToLower(e.Files) {
		return fmt.Errorf("plugin %s: the files beside its executable in %s do not match plugins.lock; if you changed them on purpose run `kube-aws plugins lock`", c.Name, c.Dir)
	}
	return nil
}

// FolderSHA256 returns one sha256 over every file under dir except skip
// (the executable, locked on its own) and Python byte-code caches, which the
// interpreter rewrites: the sorted list of "path NUL sha256" lines, with a
// symlink's target in place of a hash. "" when there is no such file.
func FolderSHA256(dir, skip string) (string, error) {
	var lines []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "__pycache__" {
				return filepath.SkipDir
			}
			return nil
		}
		if path == skip || strings.HasSuffix(path, ".pyc") {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		var sum string
		if d.Type()&os.ModeSymlink != 0 {
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			sum = "symlink:" + target
		} else if sum, err = fileutil.SHA256(path); err != nil {
			return err
		}
		lines = append(lines, filepath.ToSlash(rel)+"\x00"+sum)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hashing the files of %s: %w", dir, err)
	}
	if len(lines) == 0 {
		return "", nil
	}
	sort.Strings(lines)
	h := sha256.New()
	for _, l := range lines {
		io.WriteString(h, l+"\n")
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
