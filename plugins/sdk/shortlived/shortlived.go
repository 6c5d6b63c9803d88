// Package shortlived tunes the Go runtime of a process that lives for one
// kube-aws command and computes: kube-aws itself, and a plugin process such
// as the built-in plugins' (cmd/kube-aws-builtins), which a render keeps for
// a fraction of a second with a heap of a few MB. (During `up` the built-ins'
// process also serves deploy, which waits on AWS for minutes and
// streams the artifacts it uploads from their files; its heap stays small.)
//
// With the runtime's defaults the process collects garbage whenever its heap
// passes the 4 MB minimum, several times during the calls of the helm,
// cloudformation, userdata and iam plugins. A GOGC of 400 took 9-15 % off the
// CPU of the whole render of cluster.yaml.example when each built-in had a
// process of its own (measured paired with scripts/bench-render-ratio.sh),
// without changing what any plugin computes. GOMAXPROCS is left to the
// runtime: the process runs every built-in of a stage at once, and one P
// would run them one after another.
//
// Memory stays bounded by the soft limit of 56 MiB (the runtime's own
// memory: heap, stacks and its metadata): the collector works harder as that
// approaches, so the process peaks at about five times its live heap up to
// the limit. A live heap beyond the limit makes the collector run almost
// continuously, capped by the runtime at half the process's CPU: such a
// render is slower, not wrong.
//
// The first collection waits until the runtime's memory reaches the same 56
// MiB: the collector is off until then (GOGC=off under a soft limit of that
// size), and the settings above take over once that collection has run. A
// render of cluster.yaml.example, and one of 100 node pools, allocates less
// than that in each process (the built-ins' heap grows to about 36 MB at
// 100 pools, its runtime's memory to about 50 MiB), so neither kube-aws nor the
// built-ins' process collects at all after it has started. Each collection
// cost several ms of CPU, most of it the collector's workers marking on the
// second CPU while the first computes. The process's resident size is that
// memory plus about 25 MiB that do not depend on the cluster (the code and
// data its libraries touch when they start): 62-63 MiB at 100 node pools,
// 77-79 MiB at 190, the most the iam stack allows. With the first
// collection at 32 MiB and a limit of 40 MiB after it, the built-ins'
// process collected once or twice at 100 pools; the render of 100 pools
// took 0.92 times the CPU without those collections (40 rounds in shuffled
// order against the tree before; 10 pools 1.00x), although every page it
// allocates is then fresh from the kernel. (When a render of 100 pools
// allocated several times as much, a lower heap that reused its pages was
// the better choice: a limit of 128 MiB cost 10-15 % more CPU than 40.)
//
// GOGC and GOMEMLIMIT in the environment override each setting, as for any Go
// program; with either set, the first collection is not deferred.
//
// A main package imports it for its side effect, blank, so that the settings
// hold from the start of package initialisation: the built-ins' process
// allocates 3.3 MB in its libraries' init functions (4.7 MB while Helm's
// engine linked client-go's scheme, which with the runtime's defaults was a
// collection before main ran). Its init function needs only the os and
// runtime packages, so Go initialises it among the first, after 1.3 MB.
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
	MemoryLimit = 56 << 20
	// FirstCollection is the heap size the first collection waits for.
	FirstCollection = 56 << 20
)

func init() { tune() }

func tune() {
	_, gogcSet := os.LookupEnv("GOGC")
	_, limitSet := os.LookupEnv("GOMEMLIMIT")
	if gogcSet || limitSet {
		if !gogcSet {
			debug.SetGCPercent(GCPercent)
		}
		if !limitSet {
			debug.SetMemoryLimit(MemoryLimit)
		}
		return
	}
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(FirstCollection)
	afterNextCollection(func() {
		debug.SetGCPercent(GCPercent)
		debug.SetMemoryLimit(MemoryLimit)
	})
}

// afterNextCollection runs f once the collector has found an object
// unreachable, that is after the next collection to complete. The object is
// larger than the runtime's tiny allocations, whose cleanups may never run.
func afterNextCollection(f func()) {
	sentinel := new([64]byte)
	runtime.AddCleanup(sentinel, func(f func()) { f() }, f)
}
