package source

import (
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

// LockfileName is the name of the lock file beside cluster.yaml.
const LockfileName = "plugins.lock"

// lockfileVersion is the format version written into plugins.lock. Version 1
// recorded absolute paths and one hash for a plugin's other files; it is
// refused with a request to lock again.
const lockfileVersion = 2

// Lockfile is plugins.lock: the sha256 of every non-built-in plugin, written
// by `kube-aws plugins lock` and checked before any plugin starts. Built-in
// plugins ship inside kube-aws's own release and are not listed.
//
// A plugin is identified by its source and name, never by where kube-aws
// happens to be installed, so a lock committed on one machine verifies on
// another. On disk it is YAML, so it reads well in a review:
//
//	# plugins.lock: written by `kube-aws plugins lock`; commit it beside cluster.yaml.
//	version: 2
//	plugins:
//	- name: bastion
//	  source: contrib
//	  sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08
//	- name: py
//	  source: user
//	  path: plugins/py/py
//	  sha256: 2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae
//	  files:
//	    plugin.py: fcde2b2edba56bf408601fb721fe9b5c338d10ee429ea04fae5511b68fbf8fb9
//
// A user plugin's path is relative to the folder of plugins.lock (the folder
// of cluster.yaml) and is there for the reader: verifying does not compare
// paths. In memory it is absolute.
type Lockfile struct {
	Version int         `json:"version"`
	Plugins []LockEntry `json:"plugins"`
}

// LockEntry is one locked plugin.
type LockEntry struct {
	Name   string `json:"name"`
	Source Kind   `json:"source"`
	Path   string `json:"path,omitempty"`
	// SHA256 is the executable's; empty for a registry plugin, whose
	// hashes are per platform.
	SHA256 string `json:"sha256,omitempty"`
	// Files is the sha256 of every other file in a user plugin's folder, by
	// its path in the folder (see FolderFiles): a plugin in Python is a
	// small entry script and the code beside it, and locking the entry
	// script alone would let that code change unnoticed.
	Files map[string]string `json:"files,omitempty"`

	// A plugin from an OCI registry (source oci, see lockregistry.go) is pinned
	// by the digest its source resolved to, with every platform's hashes,
	// instead of SHA256 and Files.
	Ref       string                  `json:"ref,omitempty"`
	Digest    string                  `json:"digest,omitempty"`
	Version   string                  `json:"version,omitempty"`
	Key       string                  `json:"key,omitempty"`
	Platforms map[string]PlatformLock `json:"platforms,omitempty"`
}

const lockHeader = "# plugins.lock: written by `kube-aws plugins lock`; commit it beside cluster.yaml.\n" +
	"# kube-aws refuses to start a plugin whose sha256 differs from its entry here.\n"

// LockCandidates hashes every non-built-in candidate that has an executable.
func LockCandidates(cands []Candidate) (*Lockfile, error) {
	l := &Lockfile{Version: lockfileVersion, Plugins: []LockEntry{}}
	var errs []error
	for _, c := range cands {
		// A registry plugin's entry is made when it is installed
		// (KeepRegistryEntries carries it over).
		if c.Source == Builtin || c.Source == OCI || c.Problem != "" {
			continue
		}
		sum, err := fileutil.SHA256(c.Path)
		if err != nil {
			errs = append(errs, fmt.Errorf("locking plugin %s: %w", c.Name, err))
			continue
		}
		files, err := pluginFiles(c)
		if err != nil {
			errs = append(errs, fmt.Errorf("locking plugin %s: %w", c.Name, err))
			continue
		}
		e := LockEntry{Name: c.Name, Source: c.Source, SHA256: sum, Files: files}
		if c.Source == User {
			e.Path = absClean(c.Path)
		}
		l.Plugins = append(l.Plugins, e)
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
	var head struct {
		Version int `json:"version"`
	}
	if err := yaml.Unmarshal(data, &head); err == nil && head.Version != lockfileVersion {
		return nil, fmt.Errorf("%s has format version %d; this kube-aws reads version %d (plugins by source and name, a hash per file): regenerate it with `kube-aws plugins lock` and commit it", path, head.Version, lockfileVersion)
	}
	var l Lockfile
	if err := yaml.UnmarshalStrict(data, &l); err != nil {
		return nil, fmt.Errorf("%s is not a valid plugins.lock: %v; regenerate it with `kube-aws plugins lock`", path, err)
	}
	base := filepath.Dir(absClean(path))
	for i, e := range l.Plugins {
		if e.Source == OCI {
			if err := e.checkRegistry(); err != nil {
				return nil, fmt.Errorf("%s: %v", path, err)
			}
			continue
		}
		if e.Name == "" || e.SHA256 == "" {
			return nil, fmt.Errorf("%s: entry %d lacks a name or sha256; regenerate it with `kube-aws plugins lock`", path, i+1)
		}
		for _, sum := range append([]string{e.SHA256}, sortedValues(e.Files)...) {
			if _, err := hex.DecodeString(sum); (err != nil || len(sum) != 64) && (sum == e.SHA256 || !strings.HasPrefix(sum, "symlink:")) {
				return nil, fmt.Errorf("%s: plugin %s has an invalid sha256 %q; regenerate it with `kube-aws plugins lock`", path, e.Name, sum)
			}
		}
		if e.Path != "" && !filepath.IsAbs(e.Path) {
			l.Plugins[i].Path = filepath.Join(base, filepath.FromSlash(e.Path))
		}
	}
	return &l, nil
}

func sortedValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// Write writes the lock file atomically. A user plugin's path is written
// relative to the lock file's folder, so the cluster folder can be moved or
// cloned; other plugins are recorded by source and name alone.
func (l *Lockfile) Write(path string) error {
	base := filepath.Dir(absClean(path))
	out := Lockfile{Version: lockfileVersion, Plugins: make([]LockEntry, len(l.Plugins))}
	for i, e := range l.Plugins {
		if e.Source != User {
			e.Path = ""
		} else if rel, err := filepath.Rel(base, e.Path); err == nil && filepath.IsAbs(e.Path) {
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
// every difference, one error each: a plugin missing from the lock, one
// found in another source than it was locked from, a changed executable,
// each changed, added or removed file beside a user plugin, and a locked
// plugin that is gone. Where a plugin is installed does not matter: a copy
// of the same binaries elsewhere verifies.
func (l *Lockfile) Verify(cands []Candidate) []error {
	var errs []error
	seen := map[string]bool{}
	for _, c := range cands {
		if c.Source == Builtin {
			continue
		}
		e := l.Entry(c.Name)
		if c.Problem != "" {
			if e != nil {
				seen[c.Name] = true
				errs = append(errs, fmt.Errorf("plugins.lock lists plugin %s, but %s", c.Name, c.Problem))
			}
			continue // an unlocked folder without its executable is not a plugin yet
		}
		seen[c.Name] = true
		if e == nil {
			errs = append(errs, notLockedError(c))
			continue
		}
		pe, err := e.forCandidate(c)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, verifyEntry(c, pe, true)...)
	}
	if l != nil {
		for _, e := range l.Plugins {
			if !seen[e.Name] {
				errs = append(errs, fmt.Errorf("plugins.lock lists plugin %s (%s) but it was not found; run `kube-aws plugins lock` to drop it", e.Name, e.describe()))
			}
		}
	}
	return errs
}

// verifyEntry compares one candidate with its entry: the source, the files
// beside a user plugin, and (with binary) the executable's sha256.
func verifyEntry(c Candidate, e *LockEntry, binary bool) []error {
	if e.Source != "" && e.Source != c.Source {
		return []error{fmt.Errorf("plugin %s was locked as a %s plugin but is now found as a %s plugin (%s); if that is intended run `kube-aws plugins lock`",
			c.Name, e.Source, c.Source, c.Path)}
	}
	var errs []error
	if binary {
		have, err := fileutil.SHA256(c.Path)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("verifying plugin %s: %w", c.Name, err))
		case have != strings.ToLower(e.SHA256):
			errs = append(errs, MismatchError(c, e.SHA256, have))
		}
	}
	return append(errs, checkFiles(c, e)...)
}

// CheckBeforeStart checks a candidate against the lock before it starts:
// its source and the files beside it (a script plugin's code) here, the
// executable by the sha256 it returns, which the plugin host has
// go-plugin check as the process starts (SecureConfig). When the source or
// a file differs, the executable is hashed here as well, so that every
// difference is reported at once. A built-in plugin, or any plugin when
// there is no lock (l is nil), is not checked: the sha256 is nil.
func (l *Lockfile) CheckBeforeStart(c Candidate) ([]byte, error) {
	if l == nil || c.Source == Builtin {
		return nil, nil
	}
	e := l.Entry(c.Name)
	if e == nil {
		return nil, notLockedError(c)
	}
	// A registry plugin is checked against its build for this platform.
	e, err := e.forCandidate(c)
	if err != nil {
		return nil, err
	}
	if errs := verifyEntry(c, e, false); len(errs) > 0 {
		if have, err := fileutil.SHA256(c.Path); err == nil && have != strings.ToLower(e.SHA256) {
			errs = append([]error{MismatchError(c, e.SHA256, have)}, errs...)
		}
		return nil, errors.Join(errs...)
	}
	sum, err := hex.DecodeString(strings.ToLower(e.SHA256))
	if err != nil {
		return nil, fmt.Errorf("plugins.lock has an invalid sha256 for plugin %s: %v; run `kube-aws plugins lock`", c.Name, err)
	}
	return sum, nil
}

func (e LockEntry) describe() string {
	if e.Ref != "" {
		return fmt.Sprintf("%s, %s", e.Source, e.Ref)
	}
	if e.Path != "" {
		return fmt.Sprintf("%s, %s", e.Source, e.Path)
	}
	return string(e.Source)
}

func notLockedError(c Candidate) error {
	return fmt.Errorf("plugin %s (%s) is not in plugins.lock, so kube-aws will not start it; if you trust it run `kube-aws plugins lock`", c.Name, c.Path)
}

// MismatchError is the error for a plugin whose executable's sha256 (have)
// is not the one plugins.lock records (want).
func MismatchError(c Candidate, want, have string) error {
	return fmt.Errorf("plugin %s (%s) does not match plugins.lock (want sha256 %s, have %s); %s", c.Name, c.Path, want, have, remedy(c, "changed it"))
}

// remedy says what to do about a plugin whose files differ from
// plugins.lock. A user or contrib plugin changed on purpose is locked
// again; a registry plugin's files are a copy in the plugin cache that
// nobody should change, and `plugins lock` keeps its pin as it is, so the
// copy is downloaded again by its pinned digest.
func remedy(c Candidate, did string) string {
	if c.Source == OCI {
		return "its copy in the plugin cache was changed on disk: run `kube-aws plugins install` to download it again by its pinned digest"
	}
	return "if you " + did + " on purpose run `kube-aws plugins lock`"
}

// pluginFiles hashes the rest of a user plugin's folder, or of a registry
// plugin's cache entry; built-in and contrib plugins are single
// executables in a shared folder.
func pluginFiles(c Candidate) (map[string]string, error) {
	if (c.Source != User && c.Source != OCI) || c.Dir == "" {
		return nil, nil
	}
	return FolderFiles(c.Dir, c.Path)
}

// checkFiles compares a user plugin's folder with its lock entry and names
// every file that changed, appeared or disappeared.
func checkFiles(c Candidate, e *LockEntry) []error {
	have, err := pluginFiles(c)
	if err != nil {
		return []error{fmt.Errorf("verifying plugin %s: %w", c.Name, err)}
	}
	names := map[string]bool{}
	for n := range have {
		names[n] = true
	}
	for n := range e.Files {
		names[n] = true
	}
	var errs []error
	for _, n := range slices.Sorted(maps.Keys(names)) {
		path := filepath.Join(c.Dir, filepath.FromSlash(n))
		want, locked := e.Files[n]
		got, present := have[n]
		switch {
		case !locked:
			errs = append(errs, fmt.Errorf("plugin %s: %s is not in plugins.lock (a file added beside the plugin); %s", c.Name, path, remedy(c, "added it")))
		case !present:
			errs = append(errs, fmt.Errorf("plugin %s: %s, locked in plugins.lock, is gone; %s", c.Name, path, remedy(c, "removed it")))
		case got != strings.ToLower(want):
			errs = append(errs, fmt.Errorf("plugin %s: %s does not match plugins.lock (want sha256 %s, have %s); %s", c.Name, path, want, got, remedy(c, "changed it")))
		}
	}
	return errs
}

// FolderFiles returns the sha256 of every file under dir except skip (the
// executable, locked on its own) and Python byte-code caches, which the
// interpreter rewrites, by slash-separated path relative to dir; a
// symlink's entry is "symlink:<target>". nil when there is no such file.
func FolderFiles(dir, skip string) (map[string]string, error) {
	files := map[string]string{}
	err := fileutil.WalkPluginFiles(dir, func(path, rel string, d os.DirEntry) error {
		if path == skip {
			return nil
		}
		var sum string
		if d.Type()&os.ModeSymlink != 0 {
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			sum = "symlink:" + target
		} else if s, err := fileutil.SHA256(path); err != nil {
			return err
		} else {
			sum = s
		}
		files[rel] = sum
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("hashing the files of %s: %w", dir, err)
	}
	if len(files) == 0 {
		return nil, nil
	}
	return files, nil
}
