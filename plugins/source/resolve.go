package source

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/plugins/oci/cache"
	"github.com/kube-aws/kube-aws/plugins/protocol"
)

// ResolveOptions say what Resolve starts from and how far it may go.
type ResolveOptions struct {
	// ClusterDir is the folder of cluster.yaml, and of plugins.lock.
	ClusterDir string
	// Found are the plugins in the plugin folders (Discover).
	Found []Candidate
	// Plugins are cluster.yaml's plugins.NAME settings: an enabled plugin
	// with a source comes from a registry.
	Plugins map[string]config.PluginConfig
	// Mode is Auto for every command that runs plugins; Install, Upgrade
	// or Offline for `plugins install`, `upgrade` and `verify`.
	Mode Mode
	// Names limits Install and Upgrade to these plugins (all when empty).
	Names []string
	// Log receives a line per download, verification and pin (may be nil).
	Log func(string)
	// Ensure makes the registry plugins available: Ensure, or a fake in
	// tests. nil when this kube-aws cannot install plugins from registries.
	Ensure func(ctx context.Context, ps []RegistryPlugin, opts EnsureOptions) (*Outcome, error)
}

// Resolution is what Resolve decided.
type Resolution struct {
	// All is every plugin, by name: the plugins found in the folders, and
	// the registry plugins in place of shipped plugins of their names.
	All []Candidate
	// Registry is what was done about plugins from registries; nil when
	// cluster.yaml takes none.
	Registry *Outcome
	// Lock is plugins.lock as read, and updated, for plugins from
	// registries; nil when there are none, or there is no plugins.lock (it
	// is then read when plugins start, ReadLockfileIfAny).
	Lock *Lockfile
}

// ConfigError is a mistake the user fixes in cluster.yaml, plugins.lock or
// the plugin folders: a name with two sources, a registry command without
// a registry plugin, an unreadable plugins.lock.
type ConfigError struct{ Msg string }

func (e *ConfigError) Error() string { return e.Msg }

func configError(format string, args ...any) error {
	return &ConfigError{Msg: fmt.Sprintf(format, args...)}
}

// ProblemsError is registry plugins that cannot be used, each about one of
// its settings (Problem.Path), so the caller can point at its line.
type ProblemsError struct{ Problems []Problem }

// Error names the plugins and their settings; each Problem says why and
// what to run, and is shown as a diagnostic of its own.
func (e *ProblemsError) Error() string {
	var at []string
	for _, p := range e.Problems {
		at = append(at, fmt.Sprintf("%s (%s)", p.Name, p.Path()))
	}
	return fmt.Sprintf("%d plugin(s) from registries cannot be used: %s; the diagnostics say why and what to run", len(e.Problems), strings.Join(at, ", "))
}

// Resolve decides which plugins there are: the ones found in the folders
// and the ones cluster.yaml takes from registries, made available by Ensure
// (without the network when they are pinned and cached). A registry plugin
// replaces a shipped (built-in or contrib) plugin of its name, since
// cluster.yaml asked for it by name; a user plugin folder of the same name
// is a ConfigError, as for any name found twice, checked before anything is
// downloaded. plugins.lock is written when a pin was added or moved (not by
// Offline), and when that creates it, it locks the contrib and user plugins
// found too (lockTheOthers).
//
// The error is a *ConfigError, a *ProblemsError, ctx's error when
// installing was interrupted, or any other error for what failed on the
// way (writing plugins.lock, starting the kube-aws-oci helper).
func Resolve(ctx context.Context, o ResolveOptions) (*Resolution, error) {
	res := &Resolution{All: append([]Candidate(nil), o.Found...)}
	sort.Slice(res.All, func(i, j int) bool { return res.All[i].Name < res.All[j].Name })

	var ps []RegistryPlugin
	for _, name := range slices.Sorted(maps.Keys(o.Plugins)) {
		pc := o.Plugins[name]
		if pc.Source == "" || (pc.Enabled != nil && !*pc.Enabled) {
			continue
		}
		pl := RegistryPlugin{Name: name, Source: pc.Source}
		if pc.Verify != nil {
			pl.Key = pc.Verify.Key
			if !filepath.IsAbs(pl.Key) {
				pl.Key = filepath.Join(o.ClusterDir, pl.Key)
			}
		}
		ps = append(ps, pl)
	}
	if len(ps) == 0 {
		if len(o.Names) > 0 || o.Mode == Install || o.Mode == Upgrade {
			return nil, configError("cluster.yaml takes no plugin from a registry: give one a source (plugins.NAME.source: oci://REGISTRY/REPOSITORY:TAG, docs/plugins.md section 12)")
		}
		return res, nil
	}
	// One name, one place: checked before anything is downloaded.
	for _, c := range res.All {
		for _, pl := range ps {
			if c.Name == pl.Name && c.Source == User {
				return nil, configError("plugin %s is found twice: plugins.%s.source (%s) and the user plugin %s; remove the folder or the source",
					c.Name, c.Name, pl.Source, c.Dir)
			}
		}
	}
	if o.Ensure == nil {
		return nil, configError("this kube-aws cannot install plugins from registries")
	}
	lockPath := filepath.Join(o.ClusterDir, LockfileName)
	lock, err := ReadLockfileIfAny(lockPath)
	if err != nil {
		return nil, configError("%v", err)
	}
	cch, err := cache.Open()
	if err != nil {
		return nil, configError("%v", err)
	}
	log := o.Log
	if log == nil {
		log = func(string) {}
	}
	out, err := o.Ensure(ctx, ps, EnsureOptions{
		Mode: o.Mode, Names: o.Names, Lock: lock, Cache: cch,
		ProtocolVersions: protocol.SupportedVersions, Log: log,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("installing plugins from registries: %v", err)
	}
	res.Registry = out
	res.Lock = lock
	if out.Lock != nil && o.Mode != Offline {
		if lock == nil {
			locked, err := lockTheOthers(out.Lock, res.All, ps)
			if err != nil {
				return nil, fmt.Errorf("creating %s: %v", lockPath, err)
			}
			if len(locked) > 0 {
				log(fmt.Sprintf("%s did not exist: it now also locks the contrib and user plugins found (%s), as `kube-aws plugins lock` does; check them and commit it",
					lockPath, strings.Join(locked, ", ")))
			}
		}
		if err := out.Lock.Write(lockPath); err != nil {
			return nil, err
		}
		res.Lock = out.Lock
	}
	if o.Mode == Auto {
		// install and upgrade print their own report; any other command
		// says what it changed on the way.
		for _, ch := range out.Changes {
			switch {
			case ch.From == nil:
				log(fmt.Sprintf("pinned plugin %s %s from %s in %s: commit it", ch.Name, ch.To, ch.Source, lockPath))
			case ch.Repaired != "":
				log(fmt.Sprintf("plugin %s: its cached copy had been changed on disk and was downloaded again", ch.Name))
			case ch.Verified:
				log(fmt.Sprintf("plugin %s: its signature verifies with the key now configured; recorded in %s", ch.Name, lockPath))
			}
		}
	}
	if len(out.Problems) > 0 {
		return nil, &ProblemsError{Problems: out.Problems}
	}
	// Each registry plugin replaces a shipped plugin of its name (user
	// plugins of those names were refused above).
	from := map[string]bool{}
	for _, c := range out.Candidates {
		from[c.Name] = true
	}
	res.All = append(allBut(res.All, from), out.Candidates...)
	sort.Slice(res.All, func(i, j int) bool { return res.All[i].Name < res.All[j].Name })
	return res, nil
}

// lockTheOthers adds to a plugins.lock that pinning registry plugins is
// about to create the entries `kube-aws plugins lock` would make for every
// other plugin that is not built in, and returns their names. Once the file
// exists the host checks every such plugin against it, so a lock holding
// only the registry's pins would stop an enabled user or contrib plugin
// from starting ("not in plugins.lock") and fail `plugins verify` right
// after `plugins install`. Without plugins.lock those plugins ran
// unchecked; locking them as they are now is no less safe, and the log
// line names them. Shipped plugins that a registry plugin replaces are
// left out.
func lockTheOthers(l *Lockfile, found []Candidate, registry []RegistryPlugin) ([]string, error) {
	replaced := map[string]bool{}
	for _, r := range registry {
		replaced[r.Name] = true
	}
	fresh, err := LockCandidates(allBut(found, replaced))
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range fresh.Plugins {
		l.Set(e)
		names = append(names, e.Name)
	}
	return names, nil
}

// allBut is cands without the candidates of the given names.
func allBut(cands []Candidate, names map[string]bool) []Candidate {
	var out []Candidate
	for _, c := range cands {
		if !names[c.Name] {
			out = append(out, c)
		}
	}
	return out
}

// WriteLock is `kube-aws plugins lock`: it writes plugins.lock at path with
// the sha256 of every plugin among cands that is not built in and can
// start, keeping the pins that installing the registry plugins made, and
// returns the plugins it locked.
func WriteLock(cands []Candidate, path string) ([]Candidate, error) {
	l, err := LockCandidates(cands)
	if err != nil {
		return nil, err
	}
	// A registry plugin's entry comes from installing it: keep it.
	prev, err := ReadLockfileIfAny(path)
	if err != nil {
		return nil, err
	}
	if err := l.KeepRegistryEntries(prev, cands); err != nil {
		return nil, err
	}
	if err := l.Write(path); err != nil {
		return nil, err
	}
	var locked []Candidate
	for _, c := range cands {
		if c.Source != Builtin && c.Problem == "" {
			locked = append(locked, c)
		}
	}
	return locked, nil
}

// VerifyLock is `kube-aws plugins verify`: every difference between cands
// and plugins.lock at path (Lockfile.Verify), or that there is no lock.
func VerifyLock(cands []Candidate, path string) []error {
	l, err := ReadLockfileIfAny(path)
	switch {
	case err != nil:
		return []error{err}
	case l == nil:
		return []error{fmt.Errorf("%s does not exist: run `kube-aws plugins lock` to write it", path)}
	}
	return l.Verify(cands)
}

// ReadLockfileIfAny is ReadLockfile, with nil and no error when there is
// no plugins.lock: without one no plugin is checked.
func ReadLockfileIfAny(path string) (*Lockfile, error) {
	l, err := ReadLockfile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return l, err
}
