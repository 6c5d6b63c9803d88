package source

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/kube-aws/kube-aws/plugins/oci/cache"
	"github.com/kube-aws/kube-aws/plugins/oci/helper"
)

// Mode says how far Ensure may go.
type Mode int

const (
	// Auto is every command that runs plugins (render, the stages, plugins
	// list): install what is missing, by the pinned digest where
	// plugins.lock has one, and pin what was not pinned yet.
	Auto Mode = iota
	// Install is `kube-aws plugins install`: as Auto, and also check that
	// every pinned tag still points at its digest; a moved tag is a problem.
	Install
	// Upgrade is `kube-aws plugins upgrade`: resolve the sources of the
	// named plugins (all when none is named) afresh and pin what they hold.
	Upgrade
	// Offline is `kube-aws plugins verify`: use only what is in the cache;
	// nothing is installed and the registry is not contacted.
	Offline
)

// RegistryPlugin is one plugins.NAME that has a source.
type RegistryPlugin struct {
	Name string
	// Source is plugins.NAME.source, oci://....
	Source string
	// Key is plugins.NAME.verify.key, absolute; "" when not set.
	Key string
}

// EnsureOptions configure Ensure.
type EnsureOptions struct {
	Mode Mode
	// Names limits Install and Upgrade to these plugins (all when empty).
	Names []string
	// Lock is plugins.lock as read (nil when there is none).
	Lock  *Lockfile
	Cache cache.Cache
	// Platform defaults to HostPlatform().
	Platform string
	// ProtocolVersions are the plugin protocol versions kube-aws speaks.
	ProtocolVersions []int
	// Log receives progress lines (may be nil).
	Log func(string)
	// Helper runs a request through the kube-aws-oci helper (default
	// helper.Run).
	Helper func(ctx context.Context, req helper.Request, progress func(string)) (*helper.Result, error)
}

// Pin is a pinned version of a plugin.
type Pin struct {
	Version string
	Digest  string
}

func (p *Pin) String() string {
	if p == nil {
		return "(not pinned)"
	}
	return fmt.Sprintf("%s (%s)", p.Version, p.Digest)
}

// Change is what Ensure did to a plugin's pin or cache entry.
type Change struct {
	Name   string
	Source string
	// From is the previous pin (nil: newly pinned); To the new one. Equal
	// when an upgrade found nothing new.
	From, To *Pin
	// Downloaded says the plugin's files were downloaded.
	Downloaded bool
	// Repaired says why a cache entry changed on disk was downloaded again.
	Repaired string
	// Verified is set when the signature was checked with a key that
	// plugins.lock had not recorded yet.
	Verified bool
	// Signed says the signature was checked in this run.
	Signed bool
}

// Problem is a plugin that cannot be used, about one of its settings.
type Problem struct {
	Name string
	// Field is the setting under plugins.NAME: "source" or "verify".
	Field string
	Err   error
}

// Path is the problem's config path.
func (p Problem) Path() string { return "plugins." + p.Name + "." + p.Field }

func (p Problem) Error() string { return p.Err.Error() }

// Outcome is what Ensure found and did.
type Outcome struct {
	// Candidates are the registry plugins ready to start, by name.
	Candidates []Candidate
	// Lock is plugins.lock with new, moved or re-verified pins; nil when
	// nothing changed and it need not be written.
	Lock     *Lockfile
	Changes  []Change
	Problems []Problem
	// HelperRan says the kube-aws-oci helper was started.
	HelperRan bool
}

// Ensure makes every plugin that cluster.yaml takes from an OCI registry
// (plugins.NAME.source) present in the plugin cache and pinned in
// plugins.lock, and returns them as candidates.
//
// It is on the path of every command that runs plugins, so it does its work
// without the network and without the kube-aws-oci helper whenever it can:
// a plugin pinned in plugins.lock whose cache entry is intact (by its stamp,
// plugins/oci/cache) is handed over as it is, and the host checks its
// sha256 before starting it. Only a plugin that is not pinned yet, not in
// the cache, changed on disk or not yet verified with the configured key
// makes it start the helper, once, for all of them. A pinned plugin is
// always fetched by its digest: a tag that moved is never followed unless
// the user runs `kube-aws plugins upgrade`.
//
// plugins.lock is not trusted to say that a digest is signed: it is a file
// anyone with commit access may edit, and the cache is shared with clusters
// that set no key. When cluster.yaml sets plugins.NAME.verify.key, the
// pinned digest runs from the cache only when the cache records that the
// helper checked its signature with that key (signatureOf); otherwise the
// helper checks it first, and a digest the key did not sign is refused.
//
// Problems with single plugins are in the outcome; an error means nothing
// could be done at all (the helper could not be started, say). Resolve
// calls it (through ResolveOptions.Ensure); only its tests call it alone.
func Ensure(ctx context.Context, plugins []RegistryPlugin, opts EnsureOptions) (*Outcome, error) {
	if opts.Platform == "" {
		opts.Platform = HostPlatform()
	}
	if opts.Helper == nil {
		opts.Helper = helper.Run
	}
	lock := opts.Lock
	if lock == nil {
		lock = &Lockfile{Version: 2}
	}
	out := &Outcome{}
	byName := map[string]RegistryPlugin{}
	for _, p := range plugins {
		byName[p.Name] = p
	}
	for _, n := range opts.Names {
		if _, ok := byName[n]; !ok {
			out.Problems = append(out.Problems, Problem{Name: n, Field: "source",
				Err: fmt.Errorf("plugin %s has no plugins.%s.source in cluster.yaml: plugins install and upgrade handle plugins from registries", n, n)})
		}
	}
	selected := func(name string) bool { return len(opts.Names) == 0 || slices.Contains(opts.Names, name) }

	var reqs []helper.InstallRequest
	why := map[string]string{}
	for _, p := range sortedPlugins(plugins) {
		e := lock.Entry(p.Name)
		pinned := e != nil && e.Source == OCI
		fp, err := keyFingerprint(p)
		if err != nil {
			out.Problems = append(out.Problems, Problem{Name: p.Name, Field: "verify", Err: err})
			continue
		}
		fresh := helper.InstallRequest{Name: p.Name, Source: p.Source, KeyFile: p.Key}
		switch {
		case opts.Mode == Upgrade && selected(p.Name):
			reqs = append(reqs, fresh)
		case pinned && e.Ref != p.Source:
			out.Problems = append(out.Problems, Problem{Name: p.Name, Field: "source", Err: fmt.Errorf(
				"plugins.%s.source is %s, but plugins.lock pins plugin %s %s from %s: run `kube-aws plugins upgrade %s` to install the new source and pin it",
				p.Name, p.Source, p.Name, (&Pin{e.Version, e.Digest}).String(), e.Ref, p.Name)})
		case !pinned && opts.Mode == Offline:
			out.Problems = append(out.Problems, Problem{Name: p.Name, Field: "source", Err: fmt.Errorf(
				"plugin %s (%s) is not installed: run `kube-aws plugins install`, which downloads it, checks its signature when plugins.%s.verify.key is set and pins it in plugins.lock; plugins verify checks only what is installed, and contacts no registry",
				p.Name, p.Source, p.Name)})
		case !pinned:
			reqs = append(reqs, fresh)
		default:
			req, cand, prob := pinnedPlugin(p, e, fp, opts, selected(p.Name))
			switch {
			case prob != nil:
				out.Problems = append(out.Problems, *prob)
			case req != nil:
				reqs = append(reqs, *req)
				if w := whyFetch(p, e, fp, opts); w != "" {
					why[p.Name] = w
				}
			default:
				out.Candidates = append(out.Candidates, cand)
			}
		}
	}
	if len(reqs) == 0 {
		return out, nil
	}
	out.HelperRan = true
	res, err := opts.Helper(ctx, helper.Request{
		Op: helper.OpInstall, CacheDir: opts.Cache.Root, Platform: opts.Platform,
		ProtocolVersions: opts.ProtocolVersions, Install: reqs,
	}, opts.Log)
	if err != nil {
		return nil, err
	}
	if len(res.Installed) != len(reqs) {
		return nil, fmt.Errorf("the kube-aws-oci helper answered for %d plugins, asked for %d", len(res.Installed), len(reqs))
	}
	changed := false
	for i, r := range res.Installed {
		c, entry, prob := apply(reqs[i], r, lock.Entry(r.Name), opts.Platform)
		// A refused signature says all there is to say about the pin.
		if prob != nil && why[r.Name] != "" && prob.Field != "verify" {
			prob.Err = fmt.Errorf("%w (kube-aws had to fetch plugin %s %s by its pinned digest because %s)", prob.Err, r.Name, reqs[i].Pinned, why[r.Name])
		}
		if prob != nil {
			out.Problems = append(out.Problems, *prob)
			continue
		}
		if entry != nil {
			lock.Set(*entry)
			changed = true
		}
		if c != nil {
			out.Changes = append(out.Changes, *c)
		}
		out.Candidates = append(out.Candidates, candidate(r.Name, r.Dir))
	}
	if changed {
		out.Lock = lock
	}
	sort.Slice(out.Candidates, func(i, j int) bool { return out.Candidates[i].Name < out.Candidates[j].Name })
	return out, nil
}

// pinnedPlugin decides about a plugin plugins.lock pins to a digest: hand
// over its cache entry, or ask the helper to fetch it by that digest.
func pinnedPlugin(p RegistryPlugin, e *LockEntry, fp string, opts EnsureOptions, selected bool) (*helper.InstallRequest, Candidate, *Problem) {
	req := &helper.InstallRequest{Name: p.Name, Source: p.Source, Pinned: e.Digest, KeyFile: p.Key}
	pl, ok := e.Platforms[opts.Platform]
	if !ok {
		return nil, Candidate{}, &Problem{Name: p.Name, Field: "source", Err: fmt.Errorf(
			"plugins.lock pins plugin %s to %s (%s), which has no build for %s, only for %s: ask its author to push one, then run `kube-aws plugins upgrade %s`",
			p.Name, p.Source, e.Digest, opts.Platform, strings.Join(e.PlatformNames(), ", "), p.Name)}
	}
	unverified := fp != "" && fp != e.Key
	sig := signatureOf(opts.Cache, p.Name, e, fp)
	dir, err := opts.Cache.EntryDir(pl.Manifest)
	if err != nil {
		return nil, Candidate{}, &Problem{Name: p.Name, Field: "source", Err: err}
	}
	if opts.Mode == Offline {
		switch {
		case unverified:
			return nil, Candidate{}, &Problem{Name: p.Name, Field: "verify", Err: fmt.Errorf(
				"plugin %s has not been checked with the key %s (plugins.lock records another key, or none): run `kube-aws plugins install`", p.Name, p.Key)}
		case !exists(dir):
			return nil, Candidate{}, &Problem{Name: p.Name, Field: "source", Err: fmt.Errorf(
				"plugin %s %s is not in the plugin cache (%s): run `kube-aws plugins install`, which downloads it by the digest plugins.lock pins; plugins verify checks only what is in the cache, and contacts no registry",
				p.Name, (&Pin{e.Version, e.Digest}).String(), opts.Cache.Root)}
		case sig == sigUnchecked:
			return nil, Candidate{}, &Problem{Name: p.Name, Field: "verify", Err: fmt.Errorf(
				"plugins.lock pins plugin %s to %s, and the plugin cache (%s) records no check of its cosign signature with the key %s (plugins.%s.verify.key), so it cannot be trusted: run `kube-aws plugins install`, which checks it; if that refuses it, plugins.lock names an artifact that key did not sign: restore plugins.lock from version control, or run `kube-aws plugins upgrade %s` to pin the signed artifact %s names now",
				p.Name, e.Digest, opts.Cache.Root, p.Key, p.Name, p.Name, p.Source)}
		case sig == sigDiffers:
			return nil, Candidate{}, &Problem{Name: p.Name, Field: "verify", Err: fmt.Errorf(
				"plugins.lock pins plugin %s to %s, whose cosign signature verifies with the key %s, but the plugin or the hashes plugins.lock records for it are not what that digest holds: plugins.lock was edited; restore plugins.lock from version control, or run `kube-aws plugins upgrade %s` to pin the signed artifact %s names now",
				p.Name, e.Digest, p.Key, p.Name, p.Source)}
		}
		// A changed entry is for the host's hash check to report.
		return nil, candidate(p.Name, dir), nil
	}
	if opts.Mode == Install && selected {
		req.CheckTag = true
		return req, Candidate{}, nil
	}
	if unverified || sig != sigChecked || !opts.Cache.Fresh(pl.Manifest) {
		return req, Candidate{}, nil
	}
	return nil, candidate(p.Name, dir), nil
}

// signature is what the plugin cache says about the signature of the
// digest plugins.lock pins, checked with the key cluster.yaml names.
type signature int

const (
	// sigChecked: the kube-aws-oci helper checked it with that key, and the
	// digest holds the plugin and the builds the lock records.
	sigChecked signature = iota
	// sigUnchecked: no check with that key is recorded.
	sigUnchecked
	// sigDiffers: it was checked, but the lock's name or hashes are not
	// what the digest holds.
	sigDiffers
)

// signatureOf decides whether the digest e pins may run without the helper
// checking its signature first. With a key set (fp, its fingerprint), the
// lock alone is not enough: plugins.lock may have been edited to name any
// digest, and the shared cache may hold unsigned ones that clusters without
// a key installed. Only the record the helper writes after a successful
// check (plugins/oci/cache, Verified) of this digest with this key, for
// this plugin and these hashes, lets it run. Without a key there is
// nothing to check: sigChecked.
func signatureOf(c cache.Cache, name string, e *LockEntry, fp string) signature {
	if fp == "" {
		return sigChecked
	}
	v, ok := c.LookupVerified(e.Digest, fp)
	if !ok {
		return sigUnchecked
	}
	got := make(map[string]PlatformLock, len(v.Platforms))
	for k, p := range v.Platforms {
		got[k] = PlatformLock{Manifest: p.Manifest, SHA256: p.SHA256, Files: p.Files}
	}
	if v.Name != name || !samePlatforms(e.Platforms, got) {
		return sigDiffers
	}
	return sigChecked
}

// whyFetch says why a plugin pinned in plugins.lock had to be fetched from
// its registry, for a message when that fails: a user who ran `render`
// with a cached plugin does not expect the registry to matter.
func whyFetch(p RegistryPlugin, e *LockEntry, fp string, opts EnsureOptions) string {
	pl, ok := e.Platforms[opts.Platform]
	if !ok {
		return ""
	}
	dir, err := opts.Cache.EntryDir(pl.Manifest)
	switch {
	case err != nil:
		return ""
	case fp != "" && fp != e.Key:
		return fmt.Sprintf("its signature must be checked with the key %s, which plugins.lock does not record yet", p.Key)
	case signatureOf(opts.Cache, p.Name, e, fp) != sigChecked:
		return fmt.Sprintf("plugins.%s.verify.key asks for a signature with the key %s, and the plugin cache records no check with it of that digest for the hashes plugins.lock records", p.Name, p.Key)
	case !exists(dir):
		return fmt.Sprintf("it is not in the plugin cache (%s)", opts.Cache.Root)
	case !opts.Cache.Fresh(pl.Manifest):
		return fmt.Sprintf("its cached copy %s was changed on disk and is never run so", dir)
	}
	return ""
}

// apply turns the helper's answer for one plugin into a lock entry (nil
// when the lock keeps its entry), a change to report and a problem.
func apply(req helper.InstallRequest, r helper.Installed, e *LockEntry, platform string) (*Change, *LockEntry, *Problem) {
	field := r.ErrorField
	if field == "" {
		field = "source"
	}
	if r.Error != "" {
		return nil, nil, &Problem{Name: r.Name, Field: field, Err: errors.New(r.Error)}
	}
	if r.Dir == "" {
		return nil, nil, &Problem{Name: r.Name, Field: "source", Err: fmt.Errorf("the kube-aws-oci helper installed plugin %s nowhere", r.Name)}
	}
	got := &Pin{Version: r.Version, Digest: r.Digest}
	c := &Change{Name: r.Name, Source: r.Source, To: got, Downloaded: r.Downloaded, Repaired: r.Repaired, Signed: r.Key != ""}
	newEntry := LockEntry{Name: r.Name, Source: OCI, Ref: r.Source, Digest: r.Digest, Version: r.Version, Key: r.Key, Platforms: platforms(r.Platforms)}
	if req.Pinned == "" {
		if e != nil && e.Source == OCI {
			c.From = &Pin{Version: e.Version, Digest: e.Digest}
		}
		return c, &newEntry, nil
	}
	// Fetched by the pinned digest: what it holds must be what the lock
	// says it holds.
	c.From = &Pin{Version: e.Version, Digest: e.Digest}
	if r.Digest != e.Digest || !samePlatforms(e.Platforms, newEntry.Platforms) {
		return nil, nil, &Problem{Name: r.Name, Field: "source", Err: fmt.Errorf(
			"plugins.lock's hashes for plugin %s differ from what its pinned digest %s holds: the lock was edited by hand; run `kube-aws plugins upgrade %s` to pin it again",
			r.Name, e.Digest, r.Name)}
	}
	if r.MovedTo != nil {
		return nil, nil, &Problem{Name: r.Name, Field: "source", Err: fmt.Errorf(
			"the tag of %s has moved: plugins.lock pins plugin %s %s, and the tag now points at %s; kube-aws does not follow a moved tag: run `kube-aws plugins upgrade %s` to move to it, or pin the digest in plugins.%s.source",
			r.Source, r.Name, c.From, (&Pin{r.MovedTo.Version, r.MovedTo.Digest}).String(), r.Name, r.Name)}
	}
	if r.Key != "" && r.Key != e.Key {
		c.Verified = true
		ne := *e
		ne.Key = r.Key
		return c, &ne, nil
	}
	if !r.Downloaded && r.Repaired == "" {
		return nil, nil, nil
	}
	return c, nil, nil
}

func platforms(in map[string]helper.Platform) map[string]PlatformLock {
	out := make(map[string]PlatformLock, len(in))
	for k, v := range in {
		out[k] = PlatformLock{Manifest: v.Manifest, SHA256: v.SHA256, Files: v.Files}
	}
	return out
}

func samePlatforms(a, b map[string]PlatformLock) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok || x.Manifest != y.Manifest || x.SHA256 != y.SHA256 || len(x.Files) != len(y.Files) {
			return false
		}
		for f, s := range x.Files {
			if y.Files[f] != s {
				return false
			}
		}
	}
	return true
}

func candidate(name, dir string) Candidate {
	return Candidate{Name: name, Path: filepath.Join(dir, name), Dir: dir, Source: OCI}
}

func keyFingerprint(p RegistryPlugin) (string, error) {
	if p.Key == "" {
		return "", nil
	}
	b, err := os.ReadFile(p.Key)
	if err != nil {
		return "", fmt.Errorf("plugins.%s.verify.key: %v", p.Name, err)
	}
	fp, err := helper.KeyFingerprint(b)
	if err != nil {
		return "", fmt.Errorf("plugins.%s.verify.key: %s is not a PEM public key (as cosign generate-key-pair writes to cosign.pub): %v", p.Name, p.Key, err)
	}
	return fp, nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

func sortedPlugins(ps []RegistryPlugin) []RegistryPlugin {
	out := append([]RegistryPlugin(nil), ps...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
