package source

import (
	"encoding/hex"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"sort"
	"strings"
)

// PlatformLock is one platform's build of a registry plugin in plugins.lock.
// Every platform the artifact has is recorded, so that a lock written on a
// laptop verifies on a CI machine of another platform.
type PlatformLock struct {
	// Manifest is the platform's manifest digest, which names its cache entry.
	Manifest string `json:"manifest"`
	// SHA256 is the executable's.
	SHA256 string `json:"sha256"`
	// Files are the other files', by slash path.
	Files map[string]string `json:"files,omitempty"`
}

// HostPlatform is the os/arch kube-aws runs on, as plugins.lock's
// platforms name it.
func HostPlatform() string { return runtime.GOOS + "/" + runtime.GOARCH }

func validHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil && len(s) == 64
}

// checkRegistry checks a registry plugin's entry.
func (e LockEntry) checkRegistry() error {
	hint := "run `kube-aws plugins upgrade " + e.Name + "` to pin it again"
	switch {
	case e.Name == "":
		return fmt.Errorf("an entry of source oci lacks a name")
	case !strings.HasPrefix(e.Ref, "oci://"):
		return fmt.Errorf("plugin %s: ref %q is not an oci:// reference; %s", e.Name, e.Ref, hint)
	case !strings.HasPrefix(e.Digest, "sha256:") || !validHex(strings.TrimPrefix(e.Digest, "sha256:")):
		return fmt.Errorf("plugin %s: digest %q is not a sha256 digest; %s", e.Name, e.Digest, hint)
	case e.SHA256 != "" || len(e.Files) > 0:
		return fmt.Errorf("plugin %s from a registry has sha256 or files at its top level; its hashes are per platform; %s", e.Name, hint)
	case len(e.Platforms) == 0:
		return fmt.Errorf("plugin %s: no platforms; %s", e.Name, hint)
	}
	for name, p := range e.Platforms {
		if !strings.HasPrefix(p.Manifest, "sha256:") || !validHex(strings.TrimPrefix(p.Manifest, "sha256:")) || !validHex(p.SHA256) {
			return fmt.Errorf("plugin %s, platform %s: invalid manifest digest or sha256; %s", e.Name, name, hint)
		}
		for f, sum := range p.Files {
			if !validHex(sum) {
				return fmt.Errorf("plugin %s, platform %s: file %s has an invalid sha256; %s", e.Name, name, f, hint)
			}
		}
	}
	return nil
}

// PlatformNames lists a registry plugin's platforms, sorted.
func (e LockEntry) PlatformNames() []string { return slices.Sorted(maps.Keys(e.Platforms)) }

// forCandidate returns the entry c is checked against: for a plugin from a
// registry, its entry's view for this machine's platform (the executable's
// sha256 and the files'); for any other plugin the entry itself.
func (e *LockEntry) forCandidate(c Candidate) (*LockEntry, error) {
	if e.Source != OCI {
		return e, nil
	}
	if c.Source != OCI {
		return nil, fmt.Errorf("plugin %s was locked from a registry (%s) but is now found as a %s plugin (%s); remove one of them, or run `kube-aws plugins lock` if that is intended",
			c.Name, e.Ref, c.Source, c.Path)
	}
	p, ok := e.Platforms[HostPlatform()]
	if !ok {
		return nil, fmt.Errorf("plugins.lock pins plugin %s to %s (%s), which has no build for %s, only for %s",
			c.Name, e.Ref, e.Digest, HostPlatform(), strings.Join(e.PlatformNames(), ", "))
	}
	return &LockEntry{Name: e.Name, Source: OCI, SHA256: p.SHA256, Files: p.Files}, nil
}

// Set adds an entry, or replaces the entry of the same name.
func (l *Lockfile) Set(e LockEntry) {
	for i := range l.Plugins {
		if l.Plugins[i].Name == e.Name {
			l.Plugins[i] = e
			return
		}
	}
	l.Plugins = append(l.Plugins, e)
	sort.Slice(l.Plugins, func(i, j int) bool { return l.Plugins[i].Name < l.Plugins[j].Name })
}

// KeepRegistryEntries copies into l the entries prev has for the registry
// plugins among cands: `kube-aws plugins lock` hashes plugins on disk, but
// a registry plugin's entry is made when it is installed, from its digest.
func (l *Lockfile) KeepRegistryEntries(prev *Lockfile, cands []Candidate) error {
	for _, c := range cands {
		if c.Source != OCI {
			continue
		}
		e := prev.Entry(c.Name)
		if e == nil || e.Source != OCI {
			return fmt.Errorf("plugin %s is from a registry but plugins.lock has no entry for it: run `kube-aws plugins install`", c.Name)
		}
		l.Set(*e)
	}
	return nil
}
