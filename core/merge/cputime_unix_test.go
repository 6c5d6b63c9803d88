//go:build unix

package merge

import "syscall"

// processCPU is the user+system CPU time of the process so far, in
// nanoseconds. The benchmark reports it per operation next to wall time,
// because wall time on a shared build machine mostly measures the neighbours.
func processCPU() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
