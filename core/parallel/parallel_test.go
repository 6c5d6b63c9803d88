package parallel

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// Every index is called exactly once, whatever the number of CPUs and of
// pieces, and For returns only once all are done.
func TestForCallsEveryIndexOnce(t *testing.T) {
	for _, procs := range []int{1, 2, 4} {
		old := runtime.GOMAXPROCS(procs)
		for _, n := range []int{0, 1, 2, 3, 100, 1000} {
			calls := make([]atomic.Int32, n)
			var total atomic.Int64
			For(n, func(i int) {
				calls[i].Add(1)
				total.Add(1)
			})
			if total.Load() != int64(n) {
				t.Errorf("GOMAXPROCS %d, n %d: %d calls when For returned", procs, n, total.Load())
			}
			for i := range calls {
				if c := calls[i].Load(); c != 1 {
					t.Errorf("GOMAXPROCS %d, n %d: index %d called %d times", procs, n, i, c)
				}
			}
		}
		runtime.GOMAXPROCS(old)
	}
}

// With one CPU the calls are made in order, on the caller's goroutine.
func TestForWithOneCPUIsInOrder(t *testing.T) {
	old := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(old)
	var order []int
	For(5, func(i int) { order = append(order, i) })
	for i, v := range order {
		if v != i {
			t.Fatalf("order %v", order)
		}
	}
}
