package host

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

// Credentials keeps the secrets plugins generate (CA keys, tokens): the
// plain text of each is the file <dir>/<plugin>/<key> (dir is normally
// credentials/ beside cluster.yaml), mode 0600 in folders of mode 0700, and
// nowhere else: a plugin never writes one to disk itself, and everywhere
// but that file (stage input, state, rendered files, logs, JSON output) the
// secret is its marker, config.GeneratedMarker. Deploy receives the plain
// text in stage.Input.Secrets like a sensitive value of cluster.yaml.
// Safe for concurrent use: plugins call it while a stage runs.
type Credentials struct {
	dir string

	mu     sync.Mutex
	loaded map[string]string // marker -> plain text, of every secret read or written
}

// NewCredentials returns the credentials kept in dir ("" keeps them in
// memory only, for a run without a cluster folder).
func NewCredentials(dir string) *Credentials {
	return &Credentials{dir: dir, loaded: map[string]string{}}
}

// Dir is where the secrets are kept.
func (c *Credentials) Dir() string { return c.dir }

func (c *Credentials) path(plugin, key string) (string, error) {
	if p := config.GeneratedKeyProblem(key); p != "" {
		return "", fmt.Errorf("plugin %s: %s", plugin, p)
	}
	return filepath.Join(c.dir, plugin, key), nil
}

// Get returns a plugin's secret and whether it exists.
func (c *Credentials) Get(plugin, key string) ([]byte, bool, error) {
	p, err := c.path(plugin, key)
	if err != nil {
		return nil, false, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	marker := config.GeneratedMarker(plugin, key)
	if c.dir == "" {
		v, ok := c.loaded[marker]
		return []byte(v), ok, nil
	}
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("reading generated secret %s: %w", p, err)
	}
	c.loaded[marker] = string(b)
	return b, true, nil
}

// Put keeps a plugin's secret (replacing it) and returns its marker.
func (c *Credentials) Put(plugin, key string, value []byte) (string, error) {
	p, err := c.path(plugin, key)
	if err != nil {
		return "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	marker := config.GeneratedMarker(plugin, key)
	if c.dir != "" {
		for _, d := range []string{c.dir, filepath.Dir(p)} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				return "", fmt.Errorf("keeping generated secret %s: %w", p, err)
			}
			// MkdirAll leaves an existing folder's mode as it was.
			if err := os.Chmod(d, 0o700); err != nil {
				return "", fmt.Errorf("keeping generated secret %s: %w", p, err)
			}
		}
		if err := fileutil.WriteAtomic(p, value, 0o600); err != nil {
			return "", fmt.Errorf("keeping generated secret %s: %w", p, err)
		}
	}
	c.loaded[marker] = string(value)
	return marker, nil
}

// Load reads every secret kept for the plugins, so that their plain text is
// known (Secrets) before any plugin asks for one.
func (c *Credentials) Load(plugins []string) error {
	if c.dir == "" {
		return nil
	}
	for _, plugin := range plugins {
		entries, err := os.ReadDir(filepath.Join(c.dir, plugin))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading generated secrets: %w", err)
		}
		for _, e := range entries {
			if !e.Type().IsRegular() || config.GeneratedKeyProblem(e.Name()) != "" {
				continue
			}
			if _, _, err := c.Get(plugin, e.Name()); err != nil {
				return err
			}
		}
	}
	return nil
}

// Secrets returns the plain text of every secret read or written so far,
// by marker.
func (c *Credentials) Secrets() map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]string, len(c.loaded))
	for k, v := range c.loaded {
		out[k] = v
	}
	return out
}
