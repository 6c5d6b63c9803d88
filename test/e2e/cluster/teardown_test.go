//go:build e2ecluster

package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kube-aws/kube-aws/test/awstest"
	"github.com/kube-aws/kube-aws/test/machines"
	"github.com/kube-aws/kube-aws/test/machines/cgroups"
)

// childEnv names the file a teardown child writes its report to; set, the
// test binary is that child (see TestMain).
const childEnv = "KUBE_AWS_E2E_TEARDOWN_CHILD"

// report is what a child run holds, for the parent to check after it is
// gone.
type report struct {
	RunDir  string
	NetNS   string
	NSInode uint64
	Cgroup  string
	MotoURL string
	Moto    proc
	PIDs    []proc   // every process of every machine
	Loops   []string // loop devices of the run's volumes
}

// teardownChild runs the proof stack up to a booted machine with its volume
// plugged, writes a report and waits to be killed by a signal; the signal
// handler tears it down.
func teardownChild() int {
	machines.HandleSignals()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	r, err := startRun(ctx, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "teardown child:", err)
		return 1
	}
	ids, err := r.groupInstances(ctx)
	if err == nil && len(ids) != 1 {
		err = fmt.Errorf("proof group has %v", ids)
	}
	if err == nil {
		_, err = r.waitStatus(ctx, ids[0])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "teardown child:", err)
		r.close(true)
		return 1
	}
	rep := report{RunDir: r.h.Dir, NetNS: r.h.NS.Path, Cgroup: machines.CgroupRoot + "/" + r.h.ID, MotoURL: r.moto}
	pid, _ := awstest.PID(r.moto)
	rep.Moto = proc{pid, startTime(pid)}
	var st unix.Stat_t
	if err := unix.Stat(r.h.NS.Path, &st); err == nil {
		rep.NSInode = st.Ino
	}
	for _, m := range r.h.Player().Machines() {
		for _, p := range m.Cgroup().PIDs() {
			rep.PIDs = append(rep.PIDs, proc{p, startTime(p)})
		}
	}
	rep.Loops = loopsUnder(r.h.Dir)
	b, _ := json.Marshal(rep)
	if err := os.WriteFile(os.Getenv(childEnv)+".tmp", b, 0o644); err != nil {
		return 1
	}
	os.Rename(os.Getenv(childEnv)+".tmp", os.Getenv(childEnv))
	select {} // the signal handler exits
}

// proc is a process by id and start time: an id alone may be reused.
type proc struct {
	PID   int
	Start string
}

// startTime is field 22 of /proc/PID/stat, "" when the process is gone
// or a zombie (dead, waiting for the host's init to reap it after its
// parent in the machine was killed).
func startTime(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 || f[0] == "Z" {
		return ""
	}
	return f[19]
}

// loopsUnder lists loop devices whose backing file is under dir.
func loopsUnder(dir string) []string {
	out, err := exec.Command("losetup", "--list", "--noheadings", "--output", "NAME,BACK-FILE").Output()
	if err != nil {
		return nil
	}
	var loops []string
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && strings.HasPrefix(f[1], dir+"/") {
			loops = append(loops, f[0])
		}
	}
	return loops
}

// startChild starts a child run and waits for its report.
func startChild(t *testing.T) (*exec.Cmd, chan error, report) {
	t.Helper()
	repPath := filepath.Join(t.TempDir(), "report.json")
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"="+repPath)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var rep report
	deadline := time.Now().Add(5 * time.Minute)
	for {
		b, err := os.ReadFile(repPath)
		if err == nil {
			if err := json.Unmarshal(b, &rep); err != nil {
				t.Fatal(err)
			}
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the child run exited before its machine was up: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the child run's machine was not up within 5 minutes")
		}
	}
	if len(rep.PIDs) == 0 || len(rep.Loops) == 0 || rep.Moto.PID == 0 || rep.NSInode == 0 {
		cmd.Process.Kill()
		t.Fatalf("the child's report misses what it should check: %+v", rep)
	}
	t.Logf("child run %s: %d machine processes, loop devices %v, moto pid %d", filepath.Base(rep.RunDir), len(rep.PIDs), rep.Loops, rep.Moto.PID)
	return cmd, exited, rep
}

// TestSweepAfterSIGKILL: a run killed without a chance to clean up leaves
// its machines running; the next run's start (SweepStale) removes them.
func TestSweepAfterSIGKILL(t *testing.T) {
	cmd, exited, rep := startChild(t)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	left := leftovers(rep)
	if len(left) == 0 {
		t.Fatal("a SIGKILLed run left nothing: this test proves nothing")
	}
	t.Logf("a SIGKILLed run leaves %d things, e.g. %s", len(left), left[0])
	start := time.Now()
	swept, err := machines.SweepStale(filepath.Dir(rep.RunDir))
	if err != nil {
		t.Error(err)
	}
	t.Logf("swept %v in %v", swept, time.Since(start).Round(time.Millisecond))
	for _, l := range leftovers(rep) {
		t.Error("left over after the sweep: " + l)
	}
	os.RemoveAll(rep.RunDir)
}

// TestTeardownOnSIGTERM starts a run in a child process, sends it SIGTERM
// (what make passes on for Ctrl-C or a kill), and checks that nothing of
// the run is left.
func TestTeardownOnSIGTERM(t *testing.T) {
	cmd, exited, rep := startChild(t)
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 143 {
			t.Errorf("child exited with %v, want status 143 (SIGTERM)", err)
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the child did not exit within 60s of SIGTERM")
	}
	t.Logf("SIGTERM to exit: %v", time.Since(start).Round(time.Millisecond))

	for _, l := range leftovers(rep) {
		t.Error("left over: " + l)
	}
	// A failed (signalled) run keeps its machines' logs, and only those.
	entries, err := os.ReadDir(rep.RunDir)
	if err != nil || len(entries) != 1 || entries[0].Name() != "logs" {
		t.Errorf("run folder %s holds %v (%v), want only logs/", rep.RunDir, entries, err)
	}
	if _, err := os.Stat(filepath.Join(rep.RunDir, "logs")); err == nil {
		os.RemoveAll(rep.RunDir)
	}
}

// leftovers lists what of a run is still there: the checks of a teardown.
func leftovers(rep report) []string {
	var out []string
	// Processes: every machine process and moto.
	for _, p := range append(append([]proc(nil), rep.PIDs...), rep.Moto) {
		if p.Start != "" && startTime(p.PID) == p.Start {
			b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.PID))
			out = append(out, fmt.Sprintf("process %d (%s)", p.PID, strings.ReplaceAll(string(b), "\x00", " ")))
		}
	}
	// moto's port.
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(rep.MotoURL, "http://"), time.Second); err == nil {
		c.Close()
		out = append(out, "moto still answers on "+rep.MotoURL)
	}
	// Mounts: overlays, the namespace file, anything under the run.
	if f, err := os.Open("/proc/self/mountinfo"); err == nil {
		s := bufio.NewScanner(f)
		for s.Scan() {
			fl := strings.Fields(s.Text())
			if len(fl) > 4 && strings.HasPrefix(fl[4], rep.RunDir) {
				out = append(out, "mount "+fl[4])
			}
		}
		f.Close()
	}
	// Loop devices backed by the run's volume files.
	for _, l := range loopsUnder(rep.RunDir) {
		out = append(out, "loop device "+l)
	}
	for _, l := range rep.Loops {
		if b, err := os.ReadFile("/sys/block/" + filepath.Base(l) + "/loop/backing_file"); err == nil && strings.HasPrefix(string(b), rep.RunDir) {
			out = append(out, "loop device "+l+" -> "+strings.TrimSpace(string(b)))
		}
	}
	// cgroups of the run in every hierarchy.
	if hs, err := cgroups.Hierarchies(); err == nil {
		for _, h := range hs {
			if _, err := os.Stat(filepath.Join(h, rep.Cgroup)); err == nil {
				out = append(out, "cgroup "+filepath.Join(h, rep.Cgroup))
			}
		}
	}
	// The network namespace: its file, and any process still in it.
	if _, err := os.Stat(rep.NetNS); err == nil {
		out = append(out, "namespace file "+rep.NetNS)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/ns/net")
	for _, p := range procs {
		var st unix.Stat_t
		if unix.Stat(p, &st) == nil && st.Ino == rep.NSInode {
			out = append(out, "process in the run's network namespace: "+p)
		}
	}
	// The run's folder beyond its kept logs.
	for _, d := range []string{"machines", "volumes", "netns"} {
		if _, err := os.Stat(filepath.Join(rep.RunDir, d)); err == nil {
			out = append(out, "folder "+filepath.Join(rep.RunDir, d))
		}
	}
	return out
}
