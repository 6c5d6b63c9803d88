package host_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/host"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/plugins/source"
)

// linkedBuiltins makes a built-in folder whose names link to one executable
// serving alpha, beta and hangs, as `make build` links the built-ins, and
// returns its candidates.
func linkedBuiltins(t *testing.T, names ...string) []source.Candidate {
	t.Helper()
	bin := plugintest.Build(t, "../testdata/several")
	dir := t.TempDir()
	for _, n := range names {
		if err := os.Symlink(bin, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
	}
	cands, err := source.Discover(source.Folders{BuiltinDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	return cands
}

// Built-ins linked to one executable share one process: each is still
// called, answers and is stopped as a plugin of its own, and the process
// ends once every one of them is stopped.
func TestBuiltinsShareTheirExecutablesProcess(t *testing.T) {
	ps, err := host.Launch(context.Background(), linkedBuiltins(t, "alpha", "beta", "hangs"), host.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.KillAll(ps) })
	pid := ps[0].Pid()
	for i, want := range []string{"alpha", "beta", "hangs"} {
		if ps[i].Info.Name != want || ps[i].Pid() != pid || pid == 0 {
			t.Fatalf("plugin %d: name %q pid %d, want %s in process %d", i, ps[i].Info.Name, ps[i].Pid(), want, pid)
		}
	}
	// Calls to two plugins run at once and each reaches its own plugin.
	got := make([]map[string]any, 2)
	errs := make(chan error, 2)
	for i := range 2 {
		go func() {
			res, err := ps[i].Run(context.Background(), input(stage.Initialise), nil)
			if err == nil {
				err = json.Unmarshal(res.Values, &got[i])
			}
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range []string{"alpha", "beta"} {
		if got[i]["name"] != want || int(got[i]["pid"].(float64)) != pid {
			t.Errorf("%s answered %v, want its name and pid %d", want, got[i], pid)
		}
	}
	// Stopping one leaves the others working.
	ps[0].Kill()
	if _, err := ps[0].Run(context.Background(), input(stage.Initialise), nil); err == nil {
		t.Error("a stopped plugin still answers")
	}
	if _, err := ps[1].Run(context.Background(), input(stage.Initialise), nil); err != nil || !alive(pid) {
		t.Fatalf("beta after alpha was stopped: %v (process alive: %v)", err, alive(pid))
	}
	ps[1].Kill()
	ps[2].Kill()
	if ps[2].Exited() != true {
		t.Errorf("the process is still running after every plugin was stopped")
	}
}

// A plugin whose stage hangs is killed with its process, and the plugins
// that shared it say why they can no longer be called.
func TestAHungBuiltinEndsItsSharedProcess(t *testing.T) {
	ps, err := host.Launch(context.Background(), linkedBuiltins(t, "alpha", "hangs"), host.Options{StageTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.KillAll(ps) })
	_, err = ps[1].Run(context.Background(), input(stage.Render), nil)
	mustContain(t, err, "plugin hangs did not finish stage render within 300ms; killed")
	if !ps[0].Exited() {
		t.Error("the shared process outlived the hung plugin")
	}
	_, err = ps[0].Run(context.Background(), input(stage.Initialise), nil)
	mustContain(t, err, "plugin alpha was stopped because plugin hangs, which shares its process, was: plugin hangs was killed after it did not finish stage render within 300ms")
}

// A name the executable does not serve fails at launch, naming what it
// serves; and the same executable in user plugin folders gets a process
// per plugin, since only the built-ins are shipped together.
func TestSharedExecutableEdges(t *testing.T) {
	_, err := host.Launch(context.Background(), linkedBuiltins(t, "alpha", "gamma"), host.Options{})
	mustContain(t, err, "plugin gamma", "failed to describe itself (GetInfo)", `serves the plugins alpha, beta, hangs, not "gamma"`)

	bin := plugintest.Build(t, "../testdata/several")
	var cands []source.Candidate
	for _, n := range []string{"alpha", "beta"} {
		dir := filepath.Join(t.TempDir(), n)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(bin, filepath.Join(dir, n)); err != nil {
			t.Fatal(err)
		}
		cands = append(cands, candidate(filepath.Join(dir, n)))
	}
	ps, err := host.Launch(context.Background(), cands, host.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.KillAll(ps) })
	if ps[0].Pid() == ps[1].Pid() || ps[0].Info.Name != "alpha" || ps[1].Info.Name != "beta" {
		t.Errorf("user plugins: pids %d and %d, names %s and %s; want a process each", ps[0].Pid(), ps[1].Pid(), ps[0].Info.Name, ps[1].Info.Name)
	}
}
