package stages

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"

	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

// hashCache remembers the sha256 of plugin executables by path, size,
// modification time and inode, so a run does not re-read every binary (the
// built-ins are tens of MB, and hashing them cost more than starting them).
// Like make, it trusts a file whose size, mtime and inode are unchanged; it
// only serves stale-state detection, never integrity: plugins.lock is
// checked by the host on the file itself before a plugin starts.
type hashCache struct {
	path string

	mu      sync.Mutex
	entries map[string]hashEntry
	dirty   bool
}

type hashEntry struct {
	Size    int64  `json:"size"`
	ModTime int64  `json:"mtime"`
	Inode   uint64 `json:"inode,omitempty"`
	SHA256  string `json:"sha256"`
}

func loadHashCache(path string) *hashCache {
	c := &hashCache{path: path, entries: map[string]hashEntry{}}
	if b, err := os.ReadFile(path); err == nil {
		_ = json.Unmarshal(b, &c.entries) // a broken cache is an empty one
	}
	return c
}

// hash returns the sha256 of the file, from the cache when it is unchanged.
func (c *hashCache) hash(path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	key, ino := path, inode(fi)
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && e.Size == fi.Size() && e.ModTime == fi.ModTime().UnixNano() && e.Inode == ino {
		return e.SHA256, nil
	}
	h, err := fileutil.SHA256(path)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	c.entries[key] = hashEntry{Size: fi.Size(), ModTime: fi.ModTime().UnixNano(), Inode: ino, SHA256: h}
	c.dirty = true
	c.mu.Unlock()
	return h, nil
}

// save writes the cache when it changed; failing to is harmless.
func (c *hashCache) save() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.dirty {
		return
	}
	b, err := json.MarshalIndent(c.entries, "", "  ")
	if err != nil {
		return
	}
	if err := fileutil.WriteAtomic(c.path, append(b, '\n'), 0o644); err == nil {
		c.dirty = false
	}
}

func hashCachePath(clusterDir string) string {
	return filepath.Join(clusterDir, ".kube-aws", "cache", "plugin-hashes.json")
}
