package host

import (
	"os"
	"sync"

	plugin "github.com/hashicorp/go-plugin"

	"github.com/kube-aws/kube-aws/plugins/protocol"
)

// process is one started plugin executable and the plugins it serves: one,
// or every built-in plugin of an executable that serves several
// (sdk.ServeAll).
type process struct {
	// label names the process in its output lines and errors.
	label   string
	opts    Options
	client  *plugin.Client
	sink    *stderrSink
	writers []*lineWriter

	killOnce sync.Once
	mu       sync.Mutex
	proc     *os.Process // set once the process has started
	members  []*Plugin
}

func (pr *process) pid() int {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	if pr.proc != nil {
		return pr.proc.Pid
	}
	return 0
}

// sigkill ends the process at once, without go-plugin's graceful shutdown.
func (pr *process) sigkill() {
	pr.mu.Lock()
	proc := pr.proc
	pr.mu.Unlock()
	if proc != nil {
		_ = proc.Kill()
	}
}

// live tracks every started plugin process so that CleanupOnSignal can end
// them all.
var live = struct {
	sync.Mutex
	m map[*process]struct{}
}{m: map[*process]struct{}{}}

func (pr *process) allDead() bool {
	for _, m := range pr.members {
		if !m.isDead() {
			return false
		}
	}
	return true
}

// kill ends the process and waits until it is gone. It is safe to call more
// than once and from several goroutines.
func (pr *process) kill() {
	pr.killOnce.Do(func() {
		var (
			rpcs []protocol.Plugin
			busy bool
		)
		for _, m := range pr.members {
			if rpc, ok := m.started(); ok {
				rpcs = append(rpcs, rpc)
			}
			busy = busy || m.services.busy()
		}
		// A plugin that is mid-call (hung, or being cancelled) would
		// only delay go-plugin's graceful shutdown: SIGKILL it first.
		if len(rpcs) == 0 || busy {
			pr.sigkill()
		}
		// A plugin killed by a signal cannot remove its socket file;
		// remember where it is to remove it for the plugin.
		var sock string
		if rc := pr.client.ReattachConfig(); rc != nil && rc.Addr != nil && rc.Addr.Network() == "unix" {
			sock = rc.Addr.String()
		}
		for _, rpc := range rpcs {
			protocol.Settle(rpc)
		}
		pr.client.Kill()
		if sock != "" {
			_ = os.Remove(sock) // usually gone already: the plugin removes it on a clean exit
		}
		for _, w := range pr.writers {
			w.flush()
		}
		live.Lock()
		delete(live.m, pr)
		live.Unlock()
	})
}

// KillAll kills the plugins concurrently and waits for all of them. Nil
// entries are skipped.
func KillAll(ps []*Plugin) {
	var wg sync.WaitGroup
	for _, p := range ps {
		if p == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.Kill()
		}()
	}
	wg.Wait()
}
