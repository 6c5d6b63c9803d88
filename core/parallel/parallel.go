// Package parallel runs independent pieces of work on every CPU: a render
// at 100 node pools has a hundred of each (stacks to build, files to check)
// and two CPUs that would otherwise take turns.
package parallel

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// For calls fn(0) to fn(n-1), on as many goroutines as there are CPUs (one
// CPU: on this one, in order), and returns when every call has. The calls
// must not depend on each other; each writes only what its index owns.
func For(n int, fn func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		})
	}
	wg.Wait()
}
