// Package roll replaces a cluster's out-of-date machines without putting
// the cluster at risk. CloudFormation changes launch templates and Auto
// Scaling groups in place; roll then replaces every instance that was not
// launched from its group's current launch template version (or that
// failed its boot): etcd members one at a time, each gated on the
// replacement being the same member with every member healthy and a
// leader; then the controllers one at a time, each gated on the new node
// Ready with /readyz answering through the load balancer; then each node
// pool, new machines first where the group has room (maxSurge), at most
// maxUnavailable old ones out of service at once. Every node is drained
// (by the controllers' drainer, on kube-aws's request) before its instance
// is terminated, and a drain that cannot finish stops the roll with nothing
// terminated.
//
// Every wait is for a condition (a status object, a group's instances),
// polled at Options.Poll: a roll is as fast as the machines are. The roll
// keeps no state of its own: run again, it derives what is left from the
// groups, so `kube-aws up` after a failure continues where it stopped.
//
// It knows AWS only through Fleet, which the deploy engine implements with
// the Auto Scaling, EC2 and S3 APIs, and tests with a simulation.
package roll

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kube-aws/kube-aws/core/nodeplan"
)

// Kind is what a group's machines are, which decides their gate and
// whether they are drained.
type Kind int

const (
	// Etcd members: one group of one per member, replaced in place (a
	// member is its volume), never drained (they run no pods).
	Etcd Kind = iota
	// Controller machines: drained, gated on /readyz through the load
	// balancer.
	Controller
	// Worker machines of a node pool: drained, gated on the node Ready.
	Worker
)

func (k Kind) String() string {
	switch k {
	case Etcd:
		return "etcd"
	case Controller:
		return "controller"
	default:
		return "worker"
	}
}

// Spec is one Auto Scaling group as the render describes it.
type Spec struct {
	// Stack is the rendered stack (etcd, control-plane, nodepool-a).
	Stack string
	// Role names the machines' status objects (etcd, controller,
	// nodepool-a).
	Role string
	Kind Kind
	// Group is the Auto Scaling group's name.
	Group string
	// Target is the desired capacity the render asks for: a roll that
	// surged leaves the group there again.
	Target int
	// MaxSurge is how many machines may be added above Target at once
	// (where the group's MaxSize allows); MaxUnavailable how many old ones
	// may be out of service at once. A pool with no room to surge and
	// MaxUnavailable 0 is replaced one unavailable at a time only when
	// DefaultUnavailable is set (the operator did not ask for 0).
	MaxSurge, MaxUnavailable int
	DefaultUnavailable       bool
}

// State is what AWS says of a group now.
type State struct {
	// Template is the group's launch template (its id); Version the
	// version of it the group launches.
	Template          string
	Version           string
	Min, Max, Desired int
	Instances         []Instance
}

// Instance is one instance of a group.
type Instance struct {
	ID string
	// Version is the launch template version it was launched from.
	Version string
	// Lifecycle is Auto Scaling's lifecycle state (Pending, InService,
	// Terminating:Wait...).
	Lifecycle string
	Address   string
	Launched  time.Time
}

// leaving says the instance is on its way out.
func (i Instance) leaving() bool {
	return strings.HasPrefix(i.Lifecycle, "Terminat") || strings.HasPrefix(i.Lifecycle, "Detach") || i.Lifecycle == "Standby"
}

// Fleet is what the roll does and reads on AWS.
type Fleet interface {
	// State reads a group afresh.
	State(ctx context.Context, group string) (State, error)
	// SetDesired sets a group's desired capacity.
	SetDesired(ctx context.Context, group string, n int) error
	// Terminate ends an instance through its group (so its termination
	// hook runs); decrement lowers the desired capacity with it, else the
	// group launches a replacement.
	Terminate(ctx context.Context, instance string, decrement bool) error
	// RequestDrain asks the controllers' drainer to drain the instance's
	// node; WithdrawDrain takes the request back.
	RequestDrain(ctx context.Context, instance string, r nodeplan.DrainRequest) error
	WithdrawDrain(ctx context.Context, instance string) error
	// Status is a machine's status object; nil when it wrote none yet.
	Status(ctx context.Context, role, instance string) (*nodeplan.Status, error)
	// DrainStatus is the drainer's report on an instance; nil when none.
	DrainStatus(ctx context.Context, instance string) (*nodeplan.DrainStatus, error)
	// Serving says whether every load balancer of the group sends to the
	// instance (its health as the load balancer sees it), and if not
	// why; a group without one serves.
	Serving(ctx context.Context, group, instance string) (bool, string, error)
}

// Options tune a roll.
type Options struct {
	// Drain is what each drain is asked for (Timeout, Force); the roll
	// fills in the ID.
	Drain nodeplan.DrainRequest
	// BootGrace bounds how long a new machine may take to reach its goal.
	BootGrace time.Duration
	// Poll is the pause between two reads of what a wait waits for.
	Poll time.Duration
	// DrainerGrace is how long past the drain's timeout the roll waits for
	// the drainer to answer at all before it says the drainer is missing.
	DrainerGrace time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Report receives progress; nil discards it.
	Report func(Event)
	// RequestID names this roll's drain requests; empty means one made of
	// the clock.
	RequestID string
	// Explain says what differs between the launch template version an
	// instance runs and its group's (the Kubernetes version, which
	// plugins' part, the instance type); nil says only the versions.
	Explain func(ctx context.Context, s Spec, st State, in Instance) (string, error)
}

func (o *Options) defaults() {
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	if o.BootGrace <= 0 {
		o.BootGrace = 10 * time.Minute
	}
	if o.Drain.Timeout <= 0 {
		o.Drain.Timeout = 5 * time.Minute
	}
	if o.DrainerGrace <= 0 {
		o.DrainerGrace = 2 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Report == nil {
		o.Report = func(Event) {}
	}
	if o.RequestID == "" {
		o.RequestID = fmt.Sprintf("roll-%d", o.Now().Unix())
	}
}

// Phase says what an Event reports about a machine.
type Phase string

const (
	PhaseOutOfDate  Phase = "out-of-date"
	PhaseLaunching  Phase = "launching"
	PhaseBooting    Phase = "booting"
	PhaseReady      Phase = "ready"
	PhaseDraining   Phase = "draining"
	PhaseDrained    Phase = "drained"
	PhaseTerminated Phase = "terminating"
	PhaseGone       Phase = "gone"
	PhaseFailed     Phase = "failed"
	PhaseBlocked    Phase = "blocked"
	PhaseCanceled   Phase = "canceled"
	PhaseDone       Phase = "done"
)

// Event is one step of a roll, about one machine (or a whole group when
// Instance is empty).
type Event struct {
	Time     time.Time
	Stack    string
	Role     string
	Instance string
	Address  string
	Phase    Phase
	Message  string
}

// Error is a roll stopped at one machine.
type Error struct {
	Role, Instance, Address string
	// Step is the boot step that failed, when a machine failed one.
	Step string
	// Reason says what happened.
	Reason string
	// Blocker is the pod and PodDisruptionBudget that stopped a drain.
	Blocker *nodeplan.DrainBlocker
}

func (e *Error) Error() string {
	msg := "roll stopped at " + e.Role
	if e.Instance != "" {
		msg += " machine " + e.Instance
	}
	if e.Address != "" {
		msg += " (" + e.Address + ")"
	}
	if e.Step != "" {
		msg += " at step " + e.Step
	}
	return msg + ": " + e.Reason
}

// Outdated is an instance the roll would replace, and why.
type Outdated struct {
	Instance
	Reason string
	broken bool
}

// GroupPlan is what a roll would do to one group.
type GroupPlan struct {
	Spec     Spec
	State    State
	Outdated []Outdated
}

// Plan reads every group and says which instances are out of date: not
// launched from the group's launch template version, or failed at a boot
// step, or not ready BootGrace after launch.
func Plan(ctx context.Context, f Fleet, specs []Spec, o Options) ([]GroupPlan, error) {
	o.defaults()
	var out []GroupPlan
	for _, s := range specs {
		st, err := f.State(ctx, s.Group)
		if err != nil {
			return nil, err
		}
		gp := GroupPlan{Spec: s, State: st}
		for _, in := range st.Instances {
			if in.leaving() {
				continue
			}
			reason, broken, err := outdated(ctx, f, s, st, in, o)
			if err != nil {
				return nil, err
			}
			if reason != "" {
				gp.Outdated = append(gp.Outdated, Outdated{Instance: in, Reason: reason, broken: broken})
			}
		}
		// Machines that serve nothing (failed, never ready) go first, then
		// the oldest: a roll never takes a serving machine away while a
		// broken one stays.
		sort.SliceStable(gp.Outdated, func(i, j int) bool {
			a, b := gp.Outdated[i], gp.Outdated[j]
			if a.broken != b.broken {
				return a.broken
			}
			return a.Launched.Before(b.Launched)
		})
		out = append(out, gp)
	}
	return out, nil
}

// outdated says why an instance is replaced ("" when it is not), and
// whether it is broken (serves nothing) rather than old.
func outdated(ctx context.Context, f Fleet, s Spec, st State, in Instance, o Options) (reason string, broken bool, err error) {
	status, err := f.Status(ctx, s.Role, in.ID)
	if err != nil {
		return "", false, err
	}
	switch {
	case status != nil && status.Phase == nodeplan.PhaseFailed:
		return fmt.Sprintf("failed at step %s: %s", status.Step, status.Error), true, nil
	case (status == nil || status.Phase != nodeplan.PhaseReady) && !in.Launched.IsZero() && o.Now().Sub(in.Launched) > o.BootGrace:
		return fmt.Sprintf("not ready %s after launch", o.Now().Sub(in.Launched).Round(time.Second)), true, nil
	case in.Version != st.Version:
		why := fmt.Sprintf("launch template version %s -> %s", orUnknown(in.Version), st.Version)
		if o.Explain != nil {
			more, err := o.Explain(ctx, s, st, in)
			if err != nil {
				return "", false, err
			}
			if more != "" {
				why += ": " + more
			}
		}
		return why, false, nil
	}
	return "", false, nil
}

func orUnknown(v string) string {
	if v == "" {
		return "(unknown)"
	}
	return v
}

// Summary counts what a roll did.
type Summary struct {
	Replaced int
	// ByRole counts replacements per role.
	ByRole map[string]int
}

// Run replaces every out-of-date machine of specs, which are in roll
// order (etcd members, controllers, pools). It stops at the first machine
// that fails and returns an *Error naming it.
func Run(ctx context.Context, f Fleet, specs []Spec, o Options) (Summary, error) {
	o.defaults()
	r := &roller{f: f, o: o, sum: Summary{ByRole: map[string]int{}}, drains: map[string]bool{}}
	defer r.withdrawAll()
	var etcd []Spec
	for _, s := range specs {
		if s.Kind == Etcd {
			etcd = append(etcd, s)
		}
	}
	for _, s := range specs {
		var err error
		switch s.Kind {
		case Etcd:
			err = r.etcd(ctx, s, etcd)
		default:
			err = r.group(ctx, s)
		}
		if err != nil {
			return r.sum, err
		}
	}
	return r.sum, nil
}

type roller struct {
	f   Fleet
	o   Options
	sum Summary

	mu sync.Mutex
	// drains are the instances with a drain request of this roll that is
	// not yet answered by their termination.
	drains map[string]bool
}

func (r *roller) report(s Spec, in Instance, ph Phase, format string, args ...any) {
	r.o.Report(Event{Time: r.o.Now(), Stack: s.Stack, Role: s.Role, Instance: in.ID, Address: in.Address, Phase: ph, Message: fmt.Sprintf(format, args...)})
}

func (r *roller) replaced(s Spec) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sum.Replaced++
	r.sum.ByRole[s.Role]++
}

// etcd replaces each out-of-date member of one member's group: the group
// launches the replacement, which attaches the member's volume and must
// come back as the same member with the whole cluster healthy.
func (r *roller) etcd(ctx context.Context, s Spec, all []Spec) error {
	plans, err := Plan(ctx, r.f, []Spec{s}, r.o)
	if err != nil {
		return err
	}
	for _, od := range plans[0].Outdated {
		if err := r.etcdWhole(ctx, all, od.ID); err != nil {
			return err
		}
		var name string
		if st, err := r.f.Status(ctx, s.Role, od.ID); err != nil {
			return err
		} else if st != nil && st.Goal != nil && st.Goal.Etcd != nil {
			name = st.Goal.Etcd.Name
		}
		r.report(s, od.Instance, PhaseOutOfDate, "replacing etcd member %s: %s", orUnknown(name), od.Reason)
		known := ids(plans[0].State.Instances)
		if err := r.f.Terminate(ctx, od.ID, false); err != nil {
			return err
		}
		r.report(s, od.Instance, PhaseTerminated, "terminated; its group launches the replacement, which takes the member's volume")
		fresh, err := r.waitLaunched(ctx, s, known, 1)
		if err != nil {
			return err
		}
		if err := r.waitReady(ctx, s, fresh[0], name); err != nil {
			return err
		}
		r.replaced(s)
	}
	return nil
}

// etcdWhole refuses to take a member away unless every other member
// reached its goal and reported a whole cluster: losing one member of a
// cluster that already misses one loses quorum.
func (r *roller) etcdWhole(ctx context.Context, all []Spec, leaving string) error {
	for _, s := range all {
		st, err := r.f.State(ctx, s.Group)
		if err != nil {
			return err
		}
		for _, in := range st.Instances {
			if in.ID == leaving || in.leaving() {
				continue
			}
			status, err := r.f.Status(ctx, s.Role, in.ID)
			if err != nil {
				return err
			}
			if status == nil || status.Phase != nodeplan.PhaseReady || status.Goal == nil || !status.Goal.Etcd.Whole() {
				phase := "no status"
				if status != nil {
					phase = string(status.Phase) + " at " + status.Step
				}
				return &Error{Role: s.Role, Instance: in.ID, Address: in.Address,
					Reason: fmt.Sprintf("this member has not reported a healthy cluster (%s): replacing another member now could lose quorum; fix it first", phase)}
			}
		}
	}
	return nil
}

// group replaces the out-of-date machines of a controller group or a node
// pool, in waves: up to MaxSurge new machines first where the group has
// room, then the old ones they stand in for drained and terminated; up to
// MaxUnavailable old ones drained and terminated for the group to replace.
func (r *roller) group(ctx context.Context, s Spec) error {
	surge, unavailable := s.MaxSurge, s.MaxUnavailable
	if s.Kind == Controller {
		// Controllers one at a time, new first where there is room.
		surge, unavailable = 1, 0
	}
	for {
		plans, err := Plan(ctx, r.f, []Spec{s}, r.o)
		if err != nil {
			return err
		}
		gp := plans[0]
		if len(gp.Outdated) == 0 {
			return r.settle(ctx, s, gp.State)
		}
		if len(gp.Outdated) > 0 && r.sum.ByRole[s.Role] == 0 {
			r.report(s, Instance{}, PhaseOutOfDate, "%d of %d machines out of date", len(gp.Outdated), len(live(gp.State.Instances)))
		}
		// Machines already added above the target (a surge an
		// interrupted roll left) stand in for old ones first.
		extra := max(0, gp.State.Desired-s.Target)
		room := max(0, min(gp.State.Max-gp.State.Desired, surge-extra))
		add := min(room, len(gp.Outdated)-extra)
		take := unavailable
		if add+extra == 0 && take == 0 {
			if s.Kind == Controller || s.DefaultUnavailable {
				take = 1
			} else {
				return &Error{Role: s.Role, Reason: fmt.Sprintf("group %s has no room for a new machine (desired %d, max %d) and maxUnavailable is 0: raise the pool's maxSize or allow maxUnavailable", s.Group, gp.State.Desired, gp.State.Max)}
			}
		}
		if add > 0 {
			known := ids(gp.State.Instances)
			if err := r.f.SetDesired(ctx, s.Group, gp.State.Desired+add); err != nil {
				return err
			}
			r.report(s, Instance{}, PhaseLaunching, "desired capacity %d -> %d: new machines first", gp.State.Desired, gp.State.Desired+add)
			fresh, err := r.waitLaunched(ctx, s, known, add)
			if err != nil {
				return err
			}
			if err := r.each(ctx, fresh, func(ctx context.Context, in Instance) error { return r.waitReady(ctx, s, in, "") }); err != nil {
				return err
			}
		}
		// The old machines the new ones stand in for go with a lower
		// desired capacity; up to `take` more go for the group to replace.
		standIns := min(add+extra, len(gp.Outdated))
		wave := gp.Outdated[:min(len(gp.Outdated), standIns+take)]
		known := ids(gp.State.Instances)
		err = r.each(ctx, instances(wave), func(ctx context.Context, in Instance) error {
			return r.retire(ctx, s, in, reasonOf(wave, in.ID))
		})
		if err != nil {
			return err
		}
		for i := range wave {
			decrement := i < standIns
			if err := r.terminate(ctx, s, wave[i].Instance, decrement); err != nil {
				return err
			}
		}
		if replaced := len(wave) - standIns; replaced > 0 {
			fresh, err := r.waitLaunched(ctx, s, known, replaced)
			if err != nil {
				return err
			}
			if err := r.each(ctx, fresh, func(ctx context.Context, in Instance) error { return r.waitReady(ctx, s, in, "") }); err != nil {
				return err
			}
		}
		for range wave {
			r.replaced(s)
		}
	}
}

// settle leaves the group at its target: machines a surge added beyond it
// whose old machines are gone already (an interrupted roll) are not
// removed: the group's termination hook drains whatever Auto Scaling picks.
func (r *roller) settle(ctx context.Context, s Spec, st State) error {
	if st.Desired > s.Target && r.sum.ByRole[s.Role] > 0 {
		if err := r.f.SetDesired(ctx, s.Group, s.Target); err != nil {
			return err
		}
		r.report(s, Instance{}, PhaseDone, "desired capacity back to %d", s.Target)
	}
	if r.sum.ByRole[s.Role] > 0 {
		r.report(s, Instance{}, PhaseDone, "%d machines replaced", r.sum.ByRole[s.Role])
	}
	return nil
}

// retire drains an old machine's node.
func (r *roller) retire(ctx context.Context, s Spec, in Instance, reason string) error {
	r.report(s, in, PhaseOutOfDate, "replacing: %s", reason)
	return r.drain(ctx, s, in)
}

// terminate ends a drained instance through its group and waits until it
// is gone (its termination hook finds the node drained already).
func (r *roller) terminate(ctx context.Context, s Spec, in Instance, decrement bool) error {
	if err := r.f.Terminate(ctx, in.ID, decrement); err != nil {
		return err
	}
	r.report(s, in, PhaseTerminated, "terminating")
	err := r.poll(ctx, func() (bool, error) {
		st, err := r.f.State(ctx, s.Group)
		if err != nil {
			return false, err
		}
		for _, i := range st.Instances {
			if i.ID == in.ID {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return err
	}
	r.mu.Lock()
	delete(r.drains, in.ID)
	r.mu.Unlock()
	r.report(s, in, PhaseGone, "gone")
	return nil
}

// drain asks for the node's drain and waits for the drainer's answer.
func (r *roller) drain(ctx context.Context, s Spec, in Instance) error {
	req := r.o.Drain
	req.ID = r.o.RequestID
	if err := r.f.RequestDrain(ctx, in.ID, req); err != nil {
		return err
	}
	r.mu.Lock()
	r.drains[in.ID] = true
	r.mu.Unlock()
	r.report(s, in, PhaseDraining, "drain requested (timeout %s%s)", req.Timeout, map[bool]string{true: ", force", false: ""}[req.Force])
	deadline := r.o.Now().Add(req.Timeout + r.o.DrainerGrace)
	last := ""
	err := r.poll(ctx, func() (bool, error) {
		ds, err := r.f.DrainStatus(ctx, in.ID)
		if err != nil {
			return false, err
		}
		if ds == nil || ds.Request != req.ID {
			if r.o.Now().After(deadline) {
				return false, &Error{Role: s.Role, Instance: in.ID, Address: in.Address,
					Reason: fmt.Sprintf("no drainer answered the drain request in %s: the controllers' kube-aws-drainer service must run (journalctl -u kube-aws-drainer on a controller); nothing was terminated", req.Timeout+r.o.DrainerGrace)}
			}
			return false, nil
		}
		switch ds.Phase {
		case nodeplan.DrainDrained:
			r.report(s, in, PhaseDrained, "node %s drained", orUnknown(ds.Node))
			return true, nil
		case nodeplan.DrainBlocked, nodeplan.DrainFailed, nodeplan.DrainCanceled:
			e := &Error{Role: s.Role, Instance: in.ID, Address: in.Address, Blocker: ds.Blocker}
			e.Reason = fmt.Sprintf("drain of node %s %s", orUnknown(ds.Node), ds.Phase)
			if b := ds.Blocker; b != nil {
				e.Reason += fmt.Sprintf(": pod %s cannot be evicted", b.Pod)
				if b.PDB != "" {
					e.Reason += fmt.Sprintf(", PodDisruptionBudget %s allows no disruption", b.PDB)
				}
				if b.Message != "" {
					e.Reason += " (" + b.Message + ")"
				}
			} else if ds.Message != "" {
				e.Reason += ": " + ds.Message
			}
			e.Reason += "; nothing was terminated. Fix the budget, or set plugins.deploy.values.drain.force: true to delete the pods after the timeout"
			r.report(s, in, PhaseBlocked, "%s", e.Reason)
			return false, e
		}
		if line := fmt.Sprintf("node %s: %d pods left %s", orUnknown(ds.Node), len(ds.Pods), strings.Join(ds.Pods, " ")); line != last {
			last = line
			r.report(s, in, PhaseDraining, "%s", strings.TrimSpace(line))
		}
		return false, nil
	})
	return err
}

// withdrawAll takes back the drain requests this roll made for machines it
// did not terminate (a failure, Ctrl-C): the drainer uncordons their nodes.
func (r *roller) withdrawAll() {
	r.mu.Lock()
	left := make([]string, 0, len(r.drains))
	for id := range r.drains {
		left = append(left, id)
	}
	r.mu.Unlock()
	sort.Strings(left)
	for _, id := range left {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := r.f.WithdrawDrain(ctx, id)
		cancel()
		ev := Event{Time: r.o.Now(), Instance: id, Phase: PhaseCanceled,
			Message: "drain request withdrawn: the drainer uncordons the node it cordoned for it"}
		if err != nil {
			ev.Message = fmt.Sprintf("could not withdraw the drain request (%v): the node stays cordoned; remove the EC2 tag %s from %s, or run kube-aws up again", err, nodeplan.DrainTag, id)
		}
		r.o.Report(ev)
	}
}

// waitLaunched waits until n instances that are not in known are in the
// group, and returns them.
func (r *roller) waitLaunched(ctx context.Context, s Spec, known map[string]bool, n int) ([]Instance, error) {
	var fresh []Instance
	start := r.o.Now()
	err := r.poll(ctx, func() (bool, error) {
		st, err := r.f.State(ctx, s.Group)
		if err != nil {
			return false, err
		}
		fresh = fresh[:0]
		for _, in := range st.Instances {
			if !known[in.ID] && !in.leaving() {
				fresh = append(fresh, in)
			}
		}
		if len(fresh) >= n {
			return true, nil
		}
		if r.o.Now().Sub(start) > r.o.BootGrace {
			return false, &Error{Role: s.Role, Reason: fmt.Sprintf("group %s launched %d of %d new instances in %s", s.Group, len(fresh), n, r.o.BootGrace)}
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	for _, in := range fresh {
		r.report(s, in, PhaseLaunching, "launched from launch template version %s", orUnknown(in.Version))
	}
	return fresh, nil
}

// waitReady waits until a new machine reached its role's goal with its
// kind's gate passed. member is the etcd member it must be, when known.
func (r *roller) waitReady(ctx context.Context, s Spec, in Instance, member string) error {
	launched := in.Launched
	if launched.IsZero() {
		launched = r.o.Now()
	}
	lastStep, lastServing := "", ""
	return r.poll(ctx, func() (bool, error) {
		st, err := r.f.Status(ctx, s.Role, in.ID)
		if err != nil {
			return false, err
		}
		if st != nil && st.Address != "" {
			in.Address = st.Address
		}
		if st != nil && st.Phase == nodeplan.PhaseFailed {
			why := failure(st.Error)
			r.report(s, in, PhaseFailed, "failed at step %s: %s", st.Step, why)
			return false, &Error{Role: s.Role, Instance: in.ID, Address: in.Address, Step: st.Step, Reason: why +
				"; the machines not yet replaced keep serving: fix the cause and run kube-aws up again, which continues from here"}
		}
		if st != nil && st.Phase == nodeplan.PhaseReady {
			if why := gate(s, st, member); why != "" {
				return false, &Error{Role: s.Role, Instance: in.ID, Address: in.Address, Reason: why}
			}
			if s.Kind == Controller {
				// Its API server answers through the load balancer: the
				// load balancer's own health of it.
				ok, why, err := r.f.Serving(ctx, s.Group, in.ID)
				if err != nil {
					return false, err
				}
				if !ok {
					if why != lastServing {
						lastServing = why
						r.report(s, in, PhaseBooting, "ready, not yet in service behind the API load balancer: %s", why)
					}
					return r.graceLeft(s, in, launched, "not in service behind the API load balancer: "+why)
				}
			}
			r.report(s, in, PhaseReady, "ready %.1f s after its machine started", st.Seconds)
			return true, nil
		}
		if st != nil && st.Step != lastStep {
			lastStep = st.Step
			r.report(s, in, PhaseBooting, "%s", st.Step)
		}
		at := "it wrote no status"
		if st != nil {
			at = "last at step " + st.Step
		}
		return r.graceLeft(s, in, launched, at)
	})
}

// graceLeft fails a wait for a new machine that is older than BootGrace,
// saying where it stands.
func (r *roller) graceLeft(s Spec, in Instance, launched time.Time, at string) (bool, error) {
	if age := r.o.Now().Sub(launched); age > r.o.BootGrace {
		return false, &Error{Role: s.Role, Instance: in.ID, Address: in.Address,
			Reason: fmt.Sprintf("not ready %s after launch (%s): see its console output or journal; the machines not yet replaced keep serving", age.Round(time.Second), at)}
	}
	return false, nil
}

// failure is what a failed machine's status says went wrong, in one line:
// a step run by boot fails with boot's line and the command's last output
// after it, whose last line is the step's own account of its failure.
func failure(err string) string {
	lines := strings.Split(strings.TrimSpace(err), "\n")
	if len(lines) == 1 {
		return lines[0]
	}
	last := strings.TrimSpace(lines[len(lines)-1])
	head := strings.TrimSuffix(strings.TrimSpace(lines[0]), "; its last output:")
	return head + ": " + last
}

// gate says why a machine at its goal does not pass its kind's gate; ""
// when it does.
func gate(s Spec, st *nodeplan.Status, member string) string {
	g := st.Goal
	switch s.Kind {
	case Etcd:
		if g == nil || g.Etcd == nil {
			return "it reached its goal without reporting its etcd member: its kube-aws-node is older than this kube-aws"
		}
		if member != "" && g.Etcd.Name != member {
			return fmt.Sprintf("it came back as etcd member %s, not %s: its data volume is not the member's", g.Etcd.Name, member)
		}
		if !g.Etcd.Whole() {
			return fmt.Sprintf("etcd reports %d of %d members healthy (leader %q): not a whole cluster", g.Etcd.Healthy, g.Etcd.Members, g.Etcd.Leader)
		}
	case Controller:
		if g == nil || !g.APIReady {
			return "it reached its goal without its API server answering /readyz"
		}
	}
	return ""
}

// poll calls cond every Poll until it says done or fails.
func (r *roller) poll(ctx context.Context, cond func() (bool, error)) error {
	t := time.NewTicker(r.o.Poll)
	defer t.Stop()
	for {
		done, err := cond()
		if err != nil || done {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// each runs fn for every instance at once and returns the first error,
// after all returned.
func (r *roller) each(ctx context.Context, ins []Instance, fn func(context.Context, Instance) error) error {
	if len(ins) == 1 {
		return fn(ctx, ins[0])
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(ins))
	var wg sync.WaitGroup
	for i, in := range ins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = fn(ctx, in); errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return errors.Join(errs...)
}

func ids(ins []Instance) map[string]bool {
	m := map[string]bool{}
	for _, in := range ins {
		m[in.ID] = true
	}
	return m
}

func live(ins []Instance) []Instance {
	var out []Instance
	for _, in := range ins {
		if !in.leaving() {
			out = append(out, in)
		}
	}
	return out
}

func instances(od []Outdated) []Instance {
	out := make([]Instance, len(od))
	for i := range od {
		out[i] = od[i].Instance
	}
	return out
}

func reasonOf(od []Outdated, id string) string {
	for _, o := range od {
		if o.ID == id {
			return o.Reason
		}
	}
	return ""
}
