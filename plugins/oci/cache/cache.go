// Package cache is the folder where kube-aws keeps plugins downloaded from
// OCI registries: one entry per platform manifest digest, shared by every
// cluster on the machine, under the user's cache folder (XDG_CACHE_HOME).
//
// An entry holds the plugin's files as the plugin author pushed them (the
// executable, named after the plugin, and the files beside it), so kube-aws
// starts it like a user plugin folder. Entries are written to a temporary
// folder and renamed into place, so a reader never sees half of one, and a
// second process installing the same digest finds the first one's entry.
//
// The package is on kube-aws's hot path (every render looks here) and uses
// the standard library only: the registry client lives in the kube-aws-oci
// helper (package plugins/oci), which fills the cache.
package cache

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

// EnvDir overrides the cache's root folder.
const EnvDir = "KUBE_AWS_CACHE_DIR"

// Root returns the folder holding kube-aws's plugin cache: $KUBE_AWS_CACHE_DIR,
// else <user cache folder>/kube-aws/plugins ($XDG_CACHE_HOME or ~/.cache on
// Linux, ~/Library/Caches on macOS).
func Root() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		return filepath.Abs(d)
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding the plugin cache folder: %w; set %s to a folder kube-aws may write", err, EnvDir)
	}
	return filepath.Join(d, "kube-aws", "plugins"), nil
}

// Cache is a plugin cache rooted at a folder.
type Cache struct {
	Root string
}

// Open returns the cache at Root().
func Open() (Cache, error) {
	r, err := Root()
	return Cache{Root: r}, err
}

// hexOf checks a digest written "sha256:<64 hex>" and returns the hex part.
func hexOf(digest string) (string, error) {
	h, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		return "", fmt.Errorf("%q is not a sha256 digest (sha256:<64 lower-case hex digits>)", digest)
	}
	return h, nil
}

// EntryDir is the folder of the entry for a platform manifest digest.
func (c Cache) EntryDir(manifestDigest string) (string, error) {
	h, err := hexOf(manifestDigest)
	if err != nil {
		return "", err
	}
	return filepath.Join(c.Root, "sha256", h), nil
}

func (c Cache) stampPath(manifestDigest string) (string, error) {
	dir, err := c.EntryDir(manifestDigest)
	if err != nil {
		return "", err
	}
	return dir + ".stamp", nil
}

// Stage returns a new empty folder inside the cache in which to assemble an
// entry before Commit renames it into place.
func (c Cache) Stage() (string, error) {
	tmp := filepath.Join(c.Root, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", fmt.Errorf("creating the plugin cache folder %s: %w", tmp, err)
	}
	return os.MkdirTemp(tmp, "entry-*")
}

// Commit moves a folder made by Stage into place as the entry for
// manifestDigest and stamps it. When another process committed the same
// digest first, the staged folder is dropped and theirs is kept: both are
// the same content, verified by the same digest.
func (c Cache) Commit(staged, manifestDigest string) (string, error) {
	dir, err := c.EntryDir(manifestDigest)
	if err != nil {
		os.RemoveAll(staged)
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		os.RemoveAll(staged)
		return "", err
	}
	if err := os.Rename(staged, dir); err != nil {
		os.RemoveAll(staged)
		if _, statErr := os.Stat(dir); statErr != nil {
			return "", fmt.Errorf("moving the downloaded plugin into %s: %w", dir, err)
		}
	}
	if err := c.stamp(manifestDigest); err != nil {
		return "", err
	}
	return dir, nil
}

// Remove drops an entry (one whose files were changed on disk, say). It is
// renamed away first, so no reader finds it half removed.
func (c Cache) Remove(manifestDigest string) error {
	dir, err := c.EntryDir(manifestDigest)
	if err != nil {
		return err
	}
	if sp, err := c.stampPath(manifestDigest); err == nil {
		os.Remove(sp)
	}
	staged, err := c.Stage()
	if err != nil {
		return err
	}
	os.Remove(staged)
	if err := os.Rename(dir, staged); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("removing the cache entry %s: %w", dir, err)
	}
	return os.RemoveAll(staged)
}

// fileStamp is what Fresh compares without reading a file's content.
type fileStamp struct {
	Size    int64 `json:"size"`
	ModTime int64 `json:"mtime"`
	Mode    int64 `json:"mode"`
}

// stampDir stamps every file of an entry; Python's byte code, which the
// interpreter writes beside a script plugin's code as it runs, is left out.
func stampDir(dir string) (map[string]fileStamp, error) {
	out := map[string]fileStamp{}
	err := fileutil.WalkPluginFiles(dir, func(_, rel string, d fs.DirEntry) error {
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out[rel] = fileStamp{Size: fi.Size(), ModTime: fi.ModTime().UnixNano(), Mode: int64(fi.Mode())}
		return nil
	})
	return out, err
}

// stamp records the size, modification time and mode of every file of an
// entry beside it.
func (c Cache) stamp(manifestDigest string) error {
	dir, err := c.EntryDir(manifestDigest)
	if err != nil {
		return err
	}
	st, err := stampDir(dir)
	if err != nil {
		return fmt.Errorf("reading the cache entry %s: %w", dir, err)
	}
	b, err := json.Marshal(st)
	if err != nil {
		return err
	}
	sp, _ := c.stampPath(manifestDigest)
	return fileutil.WriteAtomic(sp, b, 0o644)
}

// Fresh says whether the entry for manifestDigest exists with every file
// as it was written: same names, sizes, modification times and modes. It
// reads no file's content, so it costs a few stat calls, and like make it
// trusts a file whose stamp is unchanged: it decides whether an entry needs
// downloading again, not whether it may run. plugins.lock's sha256 is
// checked on the files themselves before a plugin starts (plugins/host).
func (c Cache) Fresh(manifestDigest string) bool {
	dir, err := c.EntryDir(manifestDigest)
	if err != nil {
		return false
	}
	sp, _ := c.stampPath(manifestDigest)
	b, err := os.ReadFile(sp)
	if err != nil {
		return false
	}
	var want map[string]fileStamp
	if json.Unmarshal(b, &want) != nil {
		return false
	}
	have, err := stampDir(dir)
	if err != nil || len(have) != len(want) {
		return false
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// Entries lists the manifest digests of every entry in the cache, sorted.
func (c Cache) Entries() ([]string, error) {
	es, err := os.ReadDir(filepath.Join(c.Root, "sha256"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range es {
		if e.IsDir() {
			if _, err := hexOf("sha256:" + e.Name()); err == nil {
				out = append(out, "sha256:"+e.Name())
			}
		}
	}
	sort.Strings(out)
	return out, nil
}
