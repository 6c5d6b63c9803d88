package charts

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"helm.sh/helm/v3/pkg/chart"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/version"
)

// Cache remembers the releases this plugin binary has checked and packaged
// before, so that a render whose charts and values did not change does not
// check and package them again: on a re-render that is most of the helm
// plugin's CPU, and the output is the same bytes either way (Package is
// deterministic).
//
// An entry is named by the sha256 of everything the check and the package
// depend on: the chart's files as Helm loaded them, the release's name,
// namespace and values as given, the cluster's Kubernetes version, and this
// very binary (its version, and the path, size and time of its file, so
// that a rebuilt plugin never trusts what an older build checked). Only a
// release that passed is recorded: a refused one is checked again and
// reports why. An entry holds the packaged chart after its own sha256, so
// a damaged entry is not used.
//
// Each render keeps the entries it used and removes the others, so the
// folder holds one entry per release of the last render.
type Cache struct {
	dir  string
	salt string

	mu   sync.Mutex
	used map[string]bool
}

// CacheDir is where the helm plugin keeps its entries, relative to the
// folder holding cluster.yaml.
const CacheDir = ".kube-aws/cache/plugins/helm/checked"

// OpenCache returns the cache under workDir, the folder holding
// cluster.yaml, or nil (no cache) when workDir is empty or this binary
// cannot be identified.
func OpenCache(workDir string) *Cache {
	if workDir == "" {
		return nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil
	}
	fi, err := os.Stat(exe)
	if err != nil {
		return nil
	}
	return &Cache{
		dir:  filepath.Join(workDir, filepath.FromSlash(CacheDir)),
		salt: fmt.Sprintf("%s\n%s\n%d\n%d\n", version.Version, exe, fi.Size(), fi.ModTime().UnixNano()),
		used: map[string]bool{},
	}
}

// key names the entry of release r of chart ch in a cluster running
// kubeVersion ("" without a cache).
func (c *Cache) key(ch *chart.Chart, r construct.HelmRelease, kubeVersion string) string {
	if c == nil {
		return ""
	}
	h := sha256.New()
	// Length-prefixed, so that bytes moved between fields never give
	// the same key.
	field := func(b []byte) { fmt.Fprintf(h, "%d:", len(b)); h.Write(b) }
	for _, s := range []string{c.salt, r.Name, r.Namespace, string(r.Values), kubeVersion} {
		field([]byte(s))
	}
	for _, f := range ch.Raw {
		field([]byte(f.Name))
		field(f.Data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// get returns the packaged chart of a release that passed before.
func (c *Cache) get(key string) ([]byte, bool) {
	if c == nil {
		return nil, false
	}
	b, err := os.ReadFile(filepath.Join(c.dir, key))
	if err != nil {
		return nil, false
	}
	sum, tgz, ok := bytes.Cut(b, []byte("\n"))
	if !ok {
		return nil, false
	}
	got := sha256.Sum256(tgz)
	if hex.EncodeToString(got[:]) != string(sum) {
		return nil, false
	}
	c.mark(key)
	return tgz, true
}

// put records that the release passed, with its packaged chart. Failing
// to is harmless: the next render checks it again.
func (c *Cache) put(key string, tgz []byte) {
	if c == nil {
		return
	}
	c.mark(key)
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return
	}
	tmp, err := os.CreateTemp(c.dir, ".tmp-")
	if err != nil {
		return
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	sum := sha256.Sum256(tgz)
	_, werr := fmt.Fprintf(tmp, "%s\n", hex.EncodeToString(sum[:]))
	if werr == nil {
		_, werr = tmp.Write(tgz)
	}
	if cerr := tmp.Close(); werr != nil || cerr != nil {
		return
	}
	_ = os.Rename(tmp.Name(), filepath.Join(c.dir, key))
}

func (c *Cache) mark(key string) {
	c.mu.Lock()
	c.used[key] = true
	c.mu.Unlock()
}

// Prune removes the entries this render did not use.
func (c *Cache) Prune() {
	if c == nil {
		return
	}
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range entries {
		if !c.used[e.Name()] && !strings.HasPrefix(e.Name(), ".tmp-") {
			_ = os.Remove(filepath.Join(c.dir, e.Name()))
		}
	}
}
