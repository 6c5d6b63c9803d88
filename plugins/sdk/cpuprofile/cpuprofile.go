// Package cpuprofile writes a CPU profile of a kube-aws process when
// KUBE_AWS_CPUPROFILE names a folder, for finding where a command's time
// goes across its processes: kube-aws and every plugin process it starts
// inherit the variable, and each writes a profile of its own there
// (<program>-<pid>.pprof), read with `go tool pprof`. Unset, it costs a
// lookup of the variable.
package cpuprofile

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
)

// Env is the variable naming the folder the profiles are written to.
const Env = "KUBE_AWS_CPUPROFILE"

// Start starts profiling the process if Env is set and returns the function
// that stops it and writes the profile out; call it as the process ends. A
// folder that cannot be written to is reported on stderr and the process
// runs unprofiled: profiling must never stop a command.
func Start() (stop func()) {
	dir := os.Getenv(Env)
	if dir == "" {
		return func() {}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v; running without a CPU profile\n", Env, err)
		return func() {}
	}
	name := fmt.Sprintf("%s-%d.pprof", filepath.Base(os.Args[0]), os.Getpid())
	f, err := os.Create(filepath.Join(dir, name))
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v; running without a CPU profile\n", Env, err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v; running without a CPU profile\n", Env, err)
		_ = f.Close()
		_ = os.Remove(f.Name())
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", Env, err)
		}
	}
}
