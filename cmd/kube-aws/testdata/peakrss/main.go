// Command peakrss runs a command and writes its peak resident memory in KiB
// (getrusage's ru_maxrss, what /usr/bin/time -v reports) to the file named
// by $PEAKRSS_OUT, then exits with the command's exit code.
//
// The end-to-end tests measure kube-aws through it rather than from the test
// process: Linux starts a child's ru_maxrss at the high-water mark of the
// process that forked it, and a test process is hundreds of MiB; this one is
// a few.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: PEAKRSS_OUT=FILE peakrss COMMAND [ARG...]")
		os.Exit(2)
	}
	c := exec.Command(os.Args[1], os.Args[2:]...)
	c.Stdin, c.Stdout, c.Stderr = os.Stdin, os.Stdout, os.Stderr
	err := c.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		fmt.Fprintln(os.Stderr, "peakrss:", err)
		os.Exit(2)
	}
	ru, ok := c.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		fmt.Fprintln(os.Stderr, "peakrss: no resource usage for the command")
		os.Exit(2)
	}
	if err := os.WriteFile(os.Getenv("PEAKRSS_OUT"), []byte(fmt.Sprint(ru.Maxrss)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "peakrss:", err)
		os.Exit(2)
	}
	os.Exit(c.ProcessState.ExitCode())
}
