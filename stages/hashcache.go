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
	// byFile hashes a file once per run however many paths lead to it:
	// every built-in's path is a link to the one built-ins executable, and
	// after kube-aws was installed or rebuilt each was hashed on its own,
	// ten reads of the same tens of MB on the first command.
	byFile map[fileID]*hashing
}

// fileID is a file as the cache knows it; only where inodes are known
// (inode returns 0 elsewhere) does it tell one file from another.
type fileID struct {
	size, mtime int64
	inode       uint64
}

// hashing is one file's hash, done once its channel is closed.
type hashing struct {
	done chan struct{}
	sum  string
	err  error
}

type hashEntry struct {
	Size    int64  `json:"size"`
	ModTime int64  `json:"mtime"`
	Inode   uint64 `json:"inode,omitempty"`
	SHA256  string `json:"sha256"`
}

func loadHashCache(path string) *hashCache {
	c := &hashCache{path: path, entries: map[string]hashEntry{}, byFile: map[fileID]*hashing{}}
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
	id := fileID{size: fi.Size(), mtime: fi.ModTime().UnixNano(), inode: ino}
	c.mu.Lock()
	h, started := c.byFile[id]
	if !started {
		h = &hashing{done: make(chan struct{})}
		if ino != 0 {
			c.byFile[id] = h
		}
	}
	c.mu.Unlock()
	if started {
		<-h.done
	} else {
		h.sum, h.err = sha256File(path)
		close(h.done)
	}
	if h.err != nil {
		return "", h.err
	}
	c.mu.Lock()
	c.entries[key] = hashEntry{Size: id.size, ModTime: id.mtime, Inode: ino, SHA256: h.sum}
	c.dirty = true
	c.mu.Unlock()
	return h.sum, nil
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

// sha256File hashes a file; tests count its calls.
var sha256File = fileutil.SHA256

func hashCachePath(clusterDir string) string {
	return filepath.Join(clusterDir, ".kube-aws", "cache", "plugin-hashes.json")
}
