package report

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kube-aws/kube-aws/core/nodeplan"
)

func TestMachineStart(t *testing.T) {
	proc := t.TempDir()
	os.MkdirAll(filepath.Join(proc, "1"), 0o755)
	os.WriteFile(filepath.Join(proc, "uptime"), []byte("1000.50 3000.00\n"), 0o644)
	// PID 1 started 950 s after the host booted: 50.5 s ago. Its name has
	// a space and a parenthesis, as a command name may.
	stat := "1 (sys temd) S 0 1 1 0 -1 4194560 100 0 0 0 1 1 0 0 20 0 1 0 95000 170000000 3000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0"
	os.WriteFile(filepath.Join(proc, "1", "stat"), []byte(stat), 0o644)
	now := time.Unix(100000, 0)
	start, err := MachineStart(proc, now)
	if err != nil {
		t.Fatal(err)
	}
	if got := now.Sub(start); got != 50500*time.Millisecond {
		t.Errorf("machine up %s, want 50.5s", got)
	}
	// This machine's own proc works too.
	if _, err := MachineStart("/proc", time.Now()); err != nil {
		t.Errorf("/proc: %v", err)
	}
	os.WriteFile(filepath.Join(proc, "1", "stat"), []byte("garbage"), 0o644)
	if _, err := MachineStart(proc, now); err == nil {
		t.Error("garbage stat accepted")
	}
}

type failingPut struct{ calls int }

func (f *failingPut) Put(context.Context, string, []byte, string) error {
	f.calls++
	return errors.New("AccessDenied")
}

func TestReporter(t *testing.T) {
	var out bytes.Buffer
	now := time.Unix(1000, 0)
	put := &failingPut{}
	r := &Reporter{Role: "etcd", InstanceID: "i-1", Address: "10.0.0.5", UserData: "p/roles/etcd/userdata/0abc", Start: now.Add(-12300 * time.Millisecond),
		Out: Writers(&out, nil), Status: put, StatusKey: "p/status/etcd/i-1.json", Local: filepath.Join(t.TempDir(), "s", "status.json"),
		Now: func() time.Time { return now }}
	r.Logf("volumes", "attached vol-1\nmounted /var/lib/etcd")
	if out.String() != "kube-aws-node[etcd]  12.3s volumes: attached vol-1\nkube-aws-node[etcd]  12.3s volumes: mounted /var/lib/etcd\n" {
		t.Errorf("lines = %q", out.String())
	}
	out.Reset()
	r.Report(context.Background(), nodeplan.PhaseReady, "wait", nil)
	// A status that cannot be stored is said, not fatal.
	if put.calls != 1 || !strings.Contains(out.String(), "could not write the status object p/status/etcd/i-1.json: AccessDenied") {
		t.Errorf("calls %d, output %q", put.calls, out.String())
	}
	st, ok := r.Last()
	if !ok || st.Phase != nodeplan.PhaseReady || st.Seconds != 12.3 || st.Time != "1970-01-01T00:16:40Z" || st.UserData != "p/roles/etcd/userdata/0abc" || st.Goal != nil {
		t.Errorf("local status = %+v", st)
	}
	// At its goal, the machine says what it found there; the userdata
	// stays in every status.
	goal := &nodeplan.GoalReport{Etcd: &nodeplan.EtcdReport{Name: "etcd0", ID: "8e9e05c52164694d", Leader: "8e9e05c52164694d", Members: 3, Healthy: 3}}
	r.Ready(context.Background(), "wait", goal)
	st, ok = r.Last()
	if !ok || st.Phase != nodeplan.PhaseReady || st.Step != "wait" || st.UserData != "p/roles/etcd/userdata/0abc" || st.Goal == nil || *st.Goal.Etcd != *goal.Etcd {
		t.Errorf("status at the goal = %+v", st)
	}
	// A later status at the goal (boot's end, written by another process
	// from the same local copy) keeps what the machine found there.
	r2 := &Reporter{Role: r.Role, InstanceID: r.InstanceID, UserData: r.UserData, Start: r.Start, Out: r.Out, Status: put, StatusKey: r.StatusKey, Local: r.Local, Now: r.Now}
	r2.Report(context.Background(), nodeplan.PhaseReady, "runcmd done", nil)
	if st, _ = r2.Last(); st.Step != "runcmd done" || st.Goal == nil || *st.Goal.Etcd != *goal.Etcd {
		t.Errorf("boot's status after the goal = %+v", st)
	}
	r.Report(context.Background(), nodeplan.PhaseFailed, "wait", errors.New("boom"))
	if st, _ = r.Last(); st.Goal != nil || st.Error != "boom" || st.UserData == "" {
		t.Errorf("a later status = %+v", st)
	}
}
