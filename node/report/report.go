// Package report tells people what a machine does: a line per event on the
// console (/dev/console, where an operator or the EC2 console output sees
// it) and on stderr (the journal or cloud-init's output log), and the
// machine's status object in S3 (nodeplan.Status), which `kube-aws
// validate` reads to name failed machines and say why.
package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/kube-aws/kube-aws/core/nodeplan"
)

// Putter stores an object; *blob.Store does it in the cluster's bucket.
type Putter interface {
	Put(ctx context.Context, key string, body []byte, contentType string) error
}

// Reporter writes a machine's lines and status.
type Reporter struct {
	// Role, InstanceID and Address say which machine this is.
	Role, InstanceID, Address string
	// Start is when the machine started (MachineStart).
	Start time.Time
	// UserData is the full S3 key of the userdata the machine booted
	// from (nodeplan.EnvUserDataKey); every status carries it, so that
	// kube-aws knows what each machine runs.
	UserData string
	// Out gets every line: stderr and the console.
	Out io.Writer
	// Status stores the status object (nil: only locally), at StatusKey,
	// a full key in the bucket.
	Status    Putter
	StatusKey string
	// Local is where the last status is also kept on the machine, so that
	// later steps know the phase (StateDir/status.json).
	Local string
	// Now is the clock; time.Now when nil.
	Now func() time.Time

	mu sync.Mutex
}

// Console opens the console for writing lines to, or returns nil when
// there is none or it may not be written (not root): lines then go to
// stderr only.
func Console(path string) io.Writer {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return nil
	}
	return f
}

// Writers combines stderr and the console (either may be nil); a write
// that fails on one still reaches the other.
func Writers(ws ...io.Writer) io.Writer {
	var out []io.Writer
	for _, w := range ws {
		if w != nil {
			out = append(out, w)
		}
	}
	return &multi{out}
}

type multi struct{ ws []io.Writer }

func (m *multi) Write(p []byte) (int, error) {
	for _, w := range m.ws {
		_, _ = w.Write(p)
	}
	return len(p), nil
}

func (r *Reporter) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// Seconds is the time since the machine started.
func (r *Reporter) Seconds() float64 {
	if r.Start.IsZero() {
		return 0
	}
	return r.now().Sub(r.Start).Seconds()
}

// Logf writes one line for step: "kube-aws-node[etcd] 12.3s secrets: ...".
// Each line of a multi-line message is prefixed, so none is lost on a
// console that other programs write to as well.
func (r *Reporter) Logf(step, format string, args ...any) {
	msg := strings.TrimRight(fmt.Sprintf(format, args...), "\n")
	prefix := fmt.Sprintf("kube-aws-node[%s] %5.1fs %s: ", r.Role, r.Seconds(), step)
	var b bytes.Buffer
	for _, l := range strings.Split(msg, "\n") {
		b.WriteString(prefix + l + "\n")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = r.Out.Write(b.Bytes())
}

// Report writes the machine's status: to S3 (best effort: a status that
// cannot be written is a line on the console, not a failed boot) and to
// Local. A failure is also a console line naming the step and the error.
func (r *Reporter) Report(ctx context.Context, phase nodeplan.Phase, step string, stepErr error) {
	st := r.status(phase, step)
	if phase == nodeplan.PhaseReady {
		// A machine at its goal stays there: a later status (boot's
		// "runcmd done", after the wait step wrote the goal) keeps what
		// the machine found at it, which a roll's gate reads.
		if last, ok := r.Last(); ok && last.Phase == nodeplan.PhaseReady {
			st.Goal = last.Goal
		}
	}
	if stepErr != nil {
		st.Error = stepErr.Error()
		r.Logf(step, "FAILED: %v", stepErr)
	}
	r.write(ctx, st)
}

// Ready writes the status of a machine that reached its role's goal
// (phase ready), with what it found there: the gates of a roll read it.
func (r *Reporter) Ready(ctx context.Context, step string, goal *nodeplan.GoalReport) {
	st := r.status(nodeplan.PhaseReady, step)
	st.Goal = goal
	r.write(ctx, st)
}

func (r *Reporter) status(phase nodeplan.Phase, step string) nodeplan.Status {
	return nodeplan.Status{
		Role: r.Role, InstanceID: r.InstanceID, Address: r.Address,
		Phase: phase, Step: step, Seconds: round(r.Seconds()),
		Time: r.now().UTC().Format(time.RFC3339), UserData: r.UserData,
	}
}

func (r *Reporter) write(ctx context.Context, st nodeplan.Status) {
	body, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		r.Logf("status", "encoding the status: %v", err)
		return
	}
	body = append(body, '\n')
	if r.Local != "" {
		if err := os.MkdirAll(filepath.Dir(r.Local), 0o755); err == nil {
			_ = os.WriteFile(r.Local, body, 0o644)
		}
	}
	if r.Status == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 20*time.Second)
	defer cancel()
	if err := r.Status.Put(ctx, r.StatusKey, body, "application/json"); err != nil {
		r.Logf("status", "could not write the status object %s: %v", r.StatusKey, err)
	}
}

// Last is the status this machine last reported, from Local.
func (r *Reporter) Last() (nodeplan.Status, bool) {
	var st nodeplan.Status
	b, err := os.ReadFile(r.Local)
	if err != nil || json.Unmarshal(b, &st) != nil {
		return st, false
	}
	return st, true
}

func round(s float64) float64 { return float64(int64(s*10+0.5)) / 10 }
