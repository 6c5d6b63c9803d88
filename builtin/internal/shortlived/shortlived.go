// Package shortlived tunes the Go runtime of a built-in plugin that lives
// for one kube-aws command and computes (every built-in but deploy, which
// waits on AWS for minutes and uploads assets).
//
// A kube-aws render starts ten built-in plugin processes at once on what is
// often a 2-core machine; each lives a fraction of a second and keeps a heap
// of a few MB. With the runtime's defaults each process sets up one P per
// core, whose idle Ps spin looking for work and start threads, and collects
// garbage whenever its heap passes the 4 MB minimum (during the calls of
// the helm, cloudformation, userdata and iam plugins). Measured on the
// render of cluster.yaml.example (docs/benchmarks.md), one P and a GOGC of
// 400 take 9-15 % off the CPU of the whole command (24-39 ms), without
// changing what any plugin computes.
//
// Memory stays bounded: the soft limit of 128 MiB makes the collector work
// harder as the process approaches it, so a plugin peaks at about five times
// its live heap up to 128 MiB, where the defaults would let it reach twice its
// live heap. (A live heap beyond that limit, hundreds of times what a
// built-in keeps, would make the collector run almost continuously, capped
// by the runtime at half the process's CPU.) GOMAXPROCS, GOGC and
// GOMEMLIMIT in the environment override each setting, as for any Go
// program.
package shortlived

import (
	"os"
	"runtime"
	"runtime/debug"
)

const (
	// GCPercent is the plugin's GOGC.
	GCPercent = 400
	// MemoryLimit is the plugin's soft memory limit (GOMEMLIMIT).
	MemoryLimit = 128 << 20
)

// Tune applies the settings; call it first in main.
func Tune() {
	if _, set := os.LookupEnv("GOMAXPROCS"); !set {
		runtime.GOMAXPROCS(1)
	}
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(GCPercent)
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); !set {
		debug.SetMemoryLimit(MemoryLimit)
	}
}
