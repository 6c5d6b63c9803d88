package host

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

// Store is a plugin's persistent key-value store (the delegated storage a
// plugin uses to remember things between runs, such as a generated token's
// id). It lives in one JSON file per plugin, .kube-aws/store/<plugin>.json,
// loaded on first use and rewritten atomically on every change, so a crash
// loses at most the change in flight. A Store with no path keeps its data in
// memory only.
type Store struct {
	path string

	mu     sync.Mutex
	loaded bool
	data   map[string][]byte
}

// storeFile is the on-disk form; values are base64 in JSON because plugins
// may store any bytes.
type storeFile struct {
	Version int               `json:"version"`
	Entries map[string][]byte `json:"entries"`
}

// NewStore returns the store persisted at path ("" for memory only).
func NewStore(path string) *Store { return &Store{path: path} }

// Path is where the store is persisted.
func (s *Store) Path() string { return s.path }

func (s *Store) load() error {
	if s.loaded {
		return nil
	}
	s.data = map[string][]byte{}
	if s.path != "" {
		b, err := os.ReadFile(s.path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case err != nil:
			return fmt.Errorf("reading plugin store %s: %w", s.path, err)
		default:
			var f storeFile
			if err := json.Unmarshal(b, &f); err != nil {
				return fmt.Errorf("plugin store %s is corrupt (%v); move it aside to start the plugin with an empty store", s.path, err)
			}
			if f.Entries != nil {
				s.data = f.Entries
			}
		}
	}
	s.loaded = true
	return nil
}

func (s *Store) save() error {
	if s.path == "" {
		return nil
	}
	b, err := json.MarshalIndent(storeFile{Version: 1, Entries: s.data}, "", "  ")
	if err != nil {
		return err
	}
	if err := fileutil.WriteAtomic(s.path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("writing plugin store %s: %w", s.path, err)
	}
	return nil
}

// Get returns the value of key and whether it exists.
func (s *Store) Get(key string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(); err != nil {
		return nil, false, err
	}
	v, ok := s.data[key]
	return append([]byte(nil), v...), ok, nil
}

// Put sets key to value and persists the store.
func (s *Store) Put(key string, value []byte) error {
	if key == "" {
		return errors.New("store: empty key")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(); err != nil {
		return err
	}
	s.data[key] = append([]byte(nil), value...)
	return s.save()
}

// Delete removes key (a missing key is fine) and persists the store.
func (s *Store) Delete(key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(); err != nil {
		return err
	}
	if _, ok := s.data[key]; !ok {
		return nil
	}
	delete(s.data, key)
	return s.save()
}

// List returns the keys with the prefix, sorted.
func (s *Store) List(prefix string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(); err != nil {
		return nil, err
	}
	var keys []string
	for k := range s.data {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys, nil
}
