package machines

import (
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// KeepEnv is the environment variable that keeps a run's machines up at the
// end of a test, until Ctrl-C, so a developer can look inside.
const KeepEnv = "KUBE_AWS_E2E_KEEP"

// KeepLogsEnv is the environment variable that keeps a passing run's
// machine logs too (a failing run always keeps them): what a boot profile
// (scripts/boot-profile.py) reads.
const KeepLogsEnv = "KUBE_AWS_E2E_KEEP_LOGS"

var (
	liveMu  sync.Mutex
	live    = map[*Harness]bool{}
	atExit  = map[int]func(){}
	nextID  int
	holdMu  sync.Mutex
	holding chan struct{}
)

func register(h *Harness) {
	liveMu.Lock()
	live[h] = true
	liveMu.Unlock()
}

func unregister(h *Harness) {
	liveMu.Lock()
	delete(live, h)
	liveMu.Unlock()
}

// AtExit registers f to run when a signal ends the process (after every
// live harness is torn down): how moto, started by the test, is stopped on
// Ctrl-C. The returned function unregisters it.
func AtExit(f func()) (remove func()) {
	liveMu.Lock()
	defer liveMu.Unlock()
	id := nextID
	nextID++
	atExit[id] = f
	return func() {
		liveMu.Lock()
		delete(atExit, id)
		liveMu.Unlock()
	}
}

// HandleSignals makes SIGINT and SIGTERM tear down every live harness and
// run the AtExit functions before the process exits (a test binary's
// t.Cleanup never runs on a signal). It also asks the kernel to send
// SIGTERM when the parent (make) dies, so even a killed make leaves nothing
// behind. While a harness is held (KeepEnv), the first signal only ends
// the hold. Call it once, from TestMain.
func HandleSignals() {
	_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0, 0, 0)
	ch := make(chan os.Signal, 2)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		for sig := range ch {
			holdMu.Lock()
			h := holding
			holding = nil
			holdMu.Unlock()
			if h != nil {
				close(h)
				continue
			}
			fmt.Fprintf(os.Stderr, "machines: %v: tearing down\n", sig)
			liveMu.Lock()
			hs := make([]*Harness, 0, len(live))
			for h := range live {
				hs = append(hs, h)
			}
			fs := make([]func(), 0, len(atExit))
			for _, f := range atExit {
				fs = append(fs, f)
			}
			liveMu.Unlock()
			for _, h := range hs {
				if err := h.Close(true); err != nil {
					fmt.Fprintf(os.Stderr, "machines: teardown: %v\n", err)
				}
			}
			for _, f := range fs {
				f()
			}
			code := 130
			if sig == syscall.SIGTERM {
				code = 143
			}
			os.Exit(code)
		}
	}()
}

// Hold keeps the machines up when KeepEnv is set: it prints how to get a
// shell in each machine and on the run's network, and waits for Ctrl-C
// (SIGINT or SIGTERM) before returning. Without KeepEnv it returns at once.
func (h *Harness) Hold() {
	if os.Getenv(KeepEnv) == "" {
		return
	}
	ch := make(chan struct{})
	holdMu.Lock()
	holding = ch
	holdMu.Unlock()
	fmt.Fprintf(os.Stderr, "\n%s is set: run %s keeps its machines up. Press Ctrl-C (or kill -TERM %d) to tear down.\n", KeepEnv, h.ID, os.Getpid())
	for _, m := range h.player.Machines() {
		sh, err := m.ShellCommand()
		if err != nil {
			sh = err.Error()
		}
		fmt.Fprintf(os.Stderr, "  %s  %-15s  shell: %s\n", m.Instance.ID, m.Instance.PrivateIP, sh)
	}
	fmt.Fprintf(os.Stderr, "  the run's network:  nsenter --net=%s -- bash\n  logs: %s\n\n", h.NS.Path, h.Logs)
	<-ch
}
