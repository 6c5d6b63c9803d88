// Package diskspace follows the free space of the filesystem a run's
// machines write to. Their disks are sparse files there, so a full host
// disk shows up in whatever wrote last (a machine's containerd, the test's
// kubeconfig) as "no space left on device". A run that checks first, warns
// when space runs low and reports its lowest point says which it was.
package diskspace

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// GB is the unit the figures are given in (10^9 bytes, as df -H).
const GB = 1e9

// Free returns the bytes an unprivileged writer may still use on the
// filesystem that holds path.
func Free(path string) (uint64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, fmt.Errorf("free space of %s: %w", path, err)
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// Check fails when path's filesystem has less than need bytes free,
// saying how much there is and what usually takes it.
func Check(path string, need uint64) error {
	free, err := Free(path)
	if err != nil {
		return err
	}
	if free >= need {
		return nil
	}
	return fmt.Errorf("%s has %.1f GB free, and a run needs about %.1f GB there (its machines' disks and containerd's images): "+
		"free some space on that filesystem first (the logs of earlier runs are in its run-* folders; `go clean -cache` empties Go's build cache)",
		path, float64(free)/GB, float64(need)/GB)
}

// Watch records the lowest free space seen on one filesystem.
type Watch struct {
	path   string
	warn   uint64
	logf   func(string, ...any)
	mu     sync.Mutex
	start  uint64
	low    uint64
	warned bool
}

// NewWatch starts a watch of path's filesystem. Sample logs one warning
// through logf the first time free space falls below warn bytes.
func NewWatch(path string, warn uint64, logf func(string, ...any)) (*Watch, error) {
	free, err := Free(path)
	if err != nil {
		return nil, err
	}
	return &Watch{path: path, warn: warn, logf: logf, start: free, low: free}, nil
}

// Sample reads the free space once.
func (w *Watch) Sample() {
	free, err := Free(w.path)
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if free < w.low {
		w.low = free
	}
	if free < w.warn && !w.warned {
		w.warned = true
		w.logf("only %.2f GB left free on the filesystem of %s (%.1f GB at the start of the run): machines and the test will soon fail to write (\"no space left on device\")",
			float64(free)/GB, w.path, float64(w.start)/GB)
	}
}

// Figures returns the free space at the start and at the lowest sample.
func (w *Watch) Figures() (start, low uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.start, w.low
}
