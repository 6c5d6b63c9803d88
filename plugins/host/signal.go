package host

import (
	"os"
	"os/signal"
	"sync"
	"syscall"

	plugin "github.com/hashicorp/go-plugin"
)

// CleanupOnSignal makes Ctrl-C (SIGINT) and SIGTERM kill every running
// plugin and exit with 130 or 143, the shell's convention for death by those
// signals. Plugins themselves ignore SIGINT (go-plugin does that), so the
// terminal's Ctrl-C reaches only kube-aws and kube-aws decides. Call it once
// from main; the returned function stops listening.
func CleanupOnSignal() (stop func()) {
	ch := make(chan os.Signal, 1)
	done := make(chan struct{})
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case sig := <-ch:
			KillAllRunning()
			code := 130
			if sig == syscall.SIGTERM {
				code = 143
			}
			os.Exit(code)
		case <-done:
		}
	}()
	return func() {
		signal.Stop(ch)
		close(done)
	}
}

// KillAllRunning kills every plugin this process started and has not
// killed yet: the last resort on every exit path.
func KillAllRunning() {
	live.Lock()
	prs := make([]*process, 0, len(live.m))
	for pr := range live.m {
		prs = append(prs, pr)
	}
	live.Unlock()
	// Interrupted: no time for graceful shutdowns.
	var wg sync.WaitGroup
	for _, pr := range prs {
		pr.sigkill()
		wg.Add(1)
		go func() {
			defer wg.Done()
			pr.kill()
		}()
	}
	wg.Wait()
	plugin.CleanupClients()
}
