package stages

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

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/plugins/host"
	"github.com/kube-aws/kube-aws/plugins/oci/cache"
	"github.com/kube-aws/kube-aws/plugins/oci/ensure"
	"github.com/kube-aws/kube-aws/plugins/protocol"
)

// RegistryOptions say what planning does about plugins from registries.
type RegistryOptions struct {
	// Mode is ensure.Auto for every command that runs plugins, Install,
	// Upgrade or Offline for `plugins install`, `upgrade` and `verify`.
	Mode ensure.Mode
	// Names limits Install and Upgrade to these plugins.
	Names []string
	// Log receives a line per download, verification and pin (may be nil).
	Log func(string)
}

// registryPlugins makes the plugins cluster.yaml takes from registries
// available (plugins/oci/ensure: without the network when they are pinned
// and cached), writes plugins.lock when a pin was added or moved, and puts
// them among p.All. A registry plugin replaces a shipped (built-in or
// contrib) plugin of its name: cluster.yaml asked for it by name. A user
// plugin folder of the same name is an error, as for any name found twice.
func (p *Plan) registryPlugins(ctx context.Context) error {
	c := p.Cluster()
	var ps []ensure.Plugin
	for _, name := range slices.Sorted(maps.Keys(c.Plugins)) {
		pc := c.Plugins[name]
		if pc.Source == "" || (pc.Enabled != nil && !*pc.Enabled) {
			continue
		}
		pl := ensure.Plugin{Name: name, Source: pc.Source}
		if pc.Verify != nil {
			pl.Key = pc.Verify.Key
			if !filepath.IsAbs(pl.Key) {
				pl.Key = filepath.Join(p.ClusterDir, pl.Key)
			}
		}
		ps = append(ps, pl)
	}
	ro := p.Options.Registry
	if len(ps) == 0 {
		if len(ro.Names) > 0 || ro.Mode == ensure.Install || ro.Mode == ensure.Upgrade {
			return ConfigError("cluster.yaml takes no plugin from a registry: give one a source (plugins.NAME.source: oci://REGISTRY/REPOSITORY:TAG, docs/plugins.md section 12)")
		}
		return nil
	}
	// One name, one place: checked before anything is downloaded.
	for _, c := range p.All {
		for _, pl := range ps {
			if c.Name == pl.Name && c.Source == host.SourceUser {
				return ConfigError("plugin %s is found twice: plugins.%s.source (%s) and the user plugin %s; remove the folder or the source",
					c.Name, c.Name, pl.Source, c.Dir)
			}
		}
	}
	if p.Deps.Ensure == nil {
		return ConfigError("this kube-aws cannot install plugins from registries")
	}
	lockPath := filepath.Join(p.ClusterDir, host.LockfileName)
	lock, err := host.ReadLockfile(lockPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return ConfigError("%v", err)
	}
	cch, err := cache.Open()
	if err != nil {
		return ConfigError("%v", err)
	}
	log := ro.Log
	if log == nil {
		log = func(string) {}
	}
	out, err := p.Deps.Ensure(ctx, ps, ensure.Options{
		Mode: ro.Mode, Names: ro.Names, Lock: lock, Cache: cch,
		ProtocolVersions: protocol.SupportedVersions, Log: log,
	})
	if err != nil {
		if ctx.Err() != nil {
			return ErrInterrupted
		}
		return &Error{Code: ExitFatal, Msg: fmt.Sprintf("installing plugins from registries: %v", err)}
	}
	p.Registry = out
	p.lock = lock
	if out.Lock != nil && ro.Mode != ensure.Offline {
		if lock == nil {
			locked, err := p.lockTheOthers(out.Lock, ps)
			if err != nil {
				return &Error{Code: ExitFatal, Msg: fmt.Sprintf("creating %s: %v", lockPath, err)}
			}
			if len(locked) > 0 {
				log(fmt.Sprintf("%s did not exist: it now also locks the contrib and user plugins found (%s), as `kube-aws plugins lock` does; check them and commit it",
					lockPath, strings.Join(locked, ", ")))
			}
		}
		if err := out.Lock.Write(lockPath); err != nil {
			return &Error{Code: ExitFatal, Msg: err.Error()}
		}
		p.lock = out.Lock
	}
	if ro.Mode == ensure.Auto {
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
		var diags diag.List
		for _, pr := range out.Problems {
			diags = append(diags, diag.Fatalf("%s", pr.Err).At(pr.Path()))
		}
		diags = c.Locate(diags)
		diags.Sort()
		return &Error{Code: ExitFatal, Msg: "plugins from registries cannot be used", Diagnostics: diags}
	}
	return p.addRegistryCandidates(out.Candidates)
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
func (p *Plan) lockTheOthers(l *host.Lockfile, registry []ensure.Plugin) ([]string, error) {
	replaced := map[string]bool{}
	for _, r := range registry {
		replaced[r.Name] = true
	}
	fresh, err := host.LockCandidates(p.allBut(replaced))
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

// addRegistryCandidates puts registry plugins among p.All, each replacing
// a shipped plugin of its name (user plugins of those names were refused).
func (p *Plan) addRegistryCandidates(cands []host.Candidate) error {
	from := map[string]bool{}
	for _, c := range cands {
		from[c.Name] = true
	}
	p.All = append(p.allBut(from), cands...)
	sort.Slice(p.All, func(i, j int) bool { return p.All[i].Name < p.All[j].Name })
	return nil
}

// allBut is p.All without the candidates of the given names.
func (p *Plan) allBut(names map[string]bool) []host.Candidate {
	var out []host.Candidate
	for _, c := range p.All {
		if !names[c.Name] {
			out = append(out, c)
		}
	}
	return out
}
