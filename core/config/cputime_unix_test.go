//go:build unix

package config

import (
	"syscall"
	"time"
)

// processCPU is the user+system CPU time of the whole process (every thread,
// the garbage collector included). Benchmarks report it per op next to
// wall time because on a shared, loaded machine wall time mostly measures
// the wait for a core.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
