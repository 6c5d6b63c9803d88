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
// Memory stays bounded by the soft limit of 40 MiB: the collector works
// harder as the heap approaches it, so the process peaks at about five times
// its live heap up to 40 MiB. The process's resident size is that heap plus
// about 40 MiB that do not depend on the cluster (the code and data its
// libraries touch when they start), so a render of 100 node pools, whose
// live heap peaks near 20 MB, stays under 80 MiB (94 MiB with the limit of
// 128 MiB this had before; 44 MiB left it at 75-77 MiB on a quiet machine
// but let a loaded one, where the collector falls behind, pass 80). A lower
// heap also reuses memory it has already touched instead of faulting in
// fresh pages, which cost a render more CPU than the collections the limit
// adds (measured paired: 10-15 % less CPU at 100 pools). A live heap beyond
// the limit, twice what 100 pools keep, makes the collector run almost
// continuously, capped by the runtime at half the process's CPU: such a
// render is slower, not wrong.
//
// The first collection waits until the heap reaches 32 MiB: the collector is
// off until then (GOGC=off under a soft limit of that size), and the settings
// above take over once that collection has run. A render of
// cluster.yaml.example allocates less than that in each process, so neither
// kube-aws nor the built-ins' process collects at all after it has started:
// each collection there cost several ms of CPU, most of it the collector's
// workers marking on the second CPU while the first computes. A render of 100
// node pools passes 32 MiB and then collects as before, under the same limit.
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
	MemoryLimit = 40 << 20
	// FirstCollection is the heap size the first collection waits for.
	FirstCollection = 32 << 20
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
