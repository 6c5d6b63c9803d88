// Command pause is the infrastructure ("sandbox") container of every pod: it
// holds the pod's namespaces open and does nothing else. It behaves like
// Kubernetes' build/pause/linux/pause.c, which needs a C toolchain and is not
// on the Go module proxy:
//   - `-v` prints its version and exits;
//   - as PID 1 of the pod's PID namespace it reaps every child that exits
//     (processes orphaned inside a shared PID namespace are re-parented to it);
//   - SIGINT and SIGTERM make it exit 0 at once, which is how the runtime stops
//     a sandbox.
package main

import (
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// version is set with -ldflags "-X main.version=...".
var version = "HEAD"

func main() {
	for _, a := range os.Args[1:] {
		if strings.EqualFold(a, "-v") {
			fmt.Printf("pause.go v%s\n", version)
			return
		}
	}
	if os.Getpid() != 1 {
		// Not an error: pause is also run outside sandboxes.
		fmt.Fprintln(os.Stderr, "Warning: pause should be the first process")
	}

	// Buffered so that signals arriving while a reap runs are not lost; one
	// SIGCHLD may stand for many exited children, so every wake-up reaps all.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range sigs {
		if sig == syscall.SIGCHLD {
			reap()
			continue
		}
		fmt.Fprintf(os.Stderr, "Shutting down, got signal: %v\n", sig)
		os.Exit(0)
	}
}

// reap collects every child that has exited, without blocking.
func reap() {
	for {
		var status syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
		if err == syscall.EINTR {
			continue
		}
		if pid <= 0 || err != nil {
			return // no exited child left (or no child at all)
		}
	}
}
