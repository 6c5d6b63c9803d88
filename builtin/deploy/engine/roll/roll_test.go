package roll

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kube-aws/kube-aws/core/nodeplan"
)

// sim plays Auto Scaling, the machines and the controllers' drainer: a
// group launches instances of its current version when its desired
// capacity rises or an instance goes without decrementing it; a machine
// reports ready after a few reads of its status; a drain ends after a few
// reads of its status.
type sim struct {
	mu     sync.Mutex
	groups map[string]*simGroup
	next   int
	// log is every action and every machine that became ready, in order.
	log []string
	// failStep makes the new machines of a role fail at that step.
	failStep map[string]string
	// failed are the machines that failed: they stay failed.
	failed map[string]string
	// blocked makes the drain of an instance's node blocked by a PDB.
	blocked map[string]bool
	// bootReads is how many status reads a machine takes to be ready.
	bootReads   int
	statusReads map[string]int
	drainReads  map[string]int
	// servingReads counts the load balancer's reads of each instance.
	servingReads map[string]int
	requests     map[string]nodeplan.DrainRequest
	withdrawn    []string
	// maxDesired is the highest desired capacity each group had.
	maxDesired map[string]int
	// onDrain is called when a drain is requested (tests cancel there).
	onDrain func(id string)
}

type simGroup struct {
	role, member      string
	version           string
	min, max, desired int
	instances         []Instance
	kind              Kind
}

func newSim() *sim {
	return &sim{groups: map[string]*simGroup{}, failStep: map[string]string{}, failed: map[string]string{}, blocked: map[string]bool{},
		bootReads: 2, statusReads: map[string]int{}, drainReads: map[string]int{}, servingReads: map[string]int{}, requests: map[string]nodeplan.DrainRequest{},
		maxDesired: map[string]int{}}
}

// add makes a group of n ready instances of version "1", then moves the
// group to version v (what a CloudFormation update does).
func (s *sim) add(name, role string, kind Kind, n, max int, v string) {
	g := &simGroup{role: role, version: "1", min: n, max: max, desired: n, kind: kind}
	if kind == Etcd {
		g.member = strings.TrimPrefix(name, "asg-")
	}
	s.groups[name] = g
	for i := 0; i < n; i++ {
		in := s.launch(g)
		s.statusReads[in.ID] = s.bootReads // booted long ago
	}
	g.version = v
	s.maxDesired[name] = n
}

func (s *sim) launch(g *simGroup) Instance {
	s.next++
	in := Instance{ID: fmt.Sprintf("i-%02d", s.next), Version: g.version, Lifecycle: "InService", Address: fmt.Sprintf("10.0.0.%d", s.next), Launched: time.Now()}
	g.instances = append(g.instances, in)
	return in
}

func (s *sim) groupOf(id string) (string, *simGroup, int) {
	for name, g := range s.groups {
		for i, in := range g.instances {
			if in.ID == id {
				return name, g, i
			}
		}
	}
	return "", nil, -1
}

func (s *sim) State(_ context.Context, group string) (State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, ok := s.groups[group]
	if !ok {
		return State{}, fmt.Errorf("no group %s", group)
	}
	return State{Version: g.version, Min: g.min, Max: g.max, Desired: g.desired, Instances: append([]Instance(nil), g.instances...)}, nil
}

func (s *sim) SetDesired(_ context.Context, group string, n int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[group]
	if n > g.max {
		return fmt.Errorf("desired %d above max %d", n, g.max)
	}
	s.log = append(s.log, fmt.Sprintf("desired %s %d", group, n))
	g.desired = n
	for len(g.instances) < n {
		s.launch(g)
	}
	if n > s.maxDesired[group] {
		s.maxDesired[group] = n
	}
	return nil
}

func (s *sim) Terminate(_ context.Context, id string, decrement bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, g, i := s.groupOf(id)
	if g == nil {
		return fmt.Errorf("no instance %s", id)
	}
	if g.kind != Etcd {
		if r, ok := s.requests[id]; !ok || s.drainReads[id] < 2 || s.blocked[id] {
			return fmt.Errorf("terminate %s before its drain ended (request %+v)", id, r)
		}
	}
	s.log = append(s.log, "terminate "+id)
	g.instances = append(g.instances[:i], g.instances[i+1:]...)
	if decrement {
		g.desired--
	} else {
		s.launch(g)
	}
	return nil
}

func (s *sim) RequestDrain(_ context.Context, id string, r nodeplan.DrainRequest) error {
	s.mu.Lock()
	s.log = append(s.log, "drain "+id)
	s.requests[id] = r
	on := s.onDrain
	s.mu.Unlock()
	if on != nil {
		on(id)
	}
	return nil
}

func (s *sim) WithdrawDrain(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.withdrawn = append(s.withdrawn, id)
	return nil
}

func (s *sim) Status(_ context.Context, role, id string) (*nodeplan.Status, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, g, i := s.groupOf(id)
	if g == nil {
		return nil, nil
	}
	s.statusReads[id]++
	n := s.statusReads[id]
	in := g.instances[i]
	if step, ok := s.failStep[role]; ok && n > s.bootReads && in.Version == g.version {
		s.failed[id] = step
	}
	if step, ok := s.failed[id]; ok {
		return &nodeplan.Status{Role: role, InstanceID: id, Phase: nodeplan.PhaseFailed, Step: step,
			Error: "runcmd[1] (line 10) `kube-aws-node artifacts`: exit status 1; its last output:\nkube-aws-node[x] 3.6s artifacts: bridge installed\nkube-aws-node[x] 3.7s artifacts: FAILED: sha256 mismatch"}, nil
	}
	if n <= s.bootReads {
		return &nodeplan.Status{Role: role, InstanceID: id, Phase: nodeplan.PhaseBooting, Step: "runcmd[1]: kube-aws-node artifacts"}, nil
	}
	st := &nodeplan.Status{Role: role, InstanceID: id, Address: in.Address, Phase: nodeplan.PhaseReady, Seconds: 20, Goal: &nodeplan.GoalReport{Node: "node-" + id}}
	switch g.kind {
	case Etcd:
		st.Goal.Etcd = &nodeplan.EtcdReport{Name: g.member, ID: "m-" + g.member, Leader: "m-etcd0", Members: 3, Healthy: 3}
	case Controller:
		st.Goal.APIReady = true
	}
	if n == s.bootReads+1 {
		s.log = append(s.log, "ready "+id)
	}
	return st, nil
}

func (s *sim) DrainStatus(_ context.Context, id string) (*nodeplan.DrainStatus, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.requests[id]
	if !ok {
		return nil, nil
	}
	s.drainReads[id]++
	ds := &nodeplan.DrainStatus{InstanceID: id, Node: "node-" + id, Request: r.ID, Phase: nodeplan.DrainDraining, Pods: []string{"default/web-1"}}
	switch {
	case s.blocked[id] && s.drainReads[id] >= 2:
		ds.Phase = nodeplan.DrainBlocked
		ds.Blocker = &nodeplan.DrainBlocker{Pod: "default/web-1", PDB: "default/web"}
	case s.drainReads[id] >= 2:
		ds.Phase, ds.Pods = nodeplan.DrainDrained, nil
	}
	return ds, nil
}

// Serving: a controller serves behind the load balancer one read of it
// after its status is ready.
func (s *sim) Serving(_ context.Context, group, id string) (bool, string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.servingReads[id]++
	if s.servingReads[id] < 2 {
		return false, "OutOfService: registering", nil
	}
	if s.servingReads[id] == 2 {
		s.log = append(s.log, "serving "+id)
	}
	return true, "", nil
}

func (s *sim) index(entry string) int {
	for i, l := range s.log {
		if l == entry {
			return i
		}
	}
	return -1
}

var example = []Spec{
	{Stack: "etcd", Role: "etcd", Kind: Etcd, Group: "asg-etcd0", Target: 1},
	{Stack: "etcd", Role: "etcd", Kind: Etcd, Group: "asg-etcd1", Target: 1},
	{Stack: "etcd", Role: "etcd", Kind: Etcd, Group: "asg-etcd2", Target: 1},
	{Stack: "control-plane", Role: "controller", Kind: Controller, Group: "asg-controller", Target: 2},
	{Stack: "nodepool-general", Role: "nodepool-general", Kind: Worker, Group: "asg-general", Target: 2, MaxSurge: 1, DefaultUnavailable: true},
	{Stack: "nodepool-spot", Role: "nodepool-spot", Kind: Worker, Group: "asg-spot", Target: 1, MaxSurge: 1, DefaultUnavailable: true},
}

func exampleSim(versions map[string]string) *sim {
	s := newSim()
	v := func(g string) string {
		if x, ok := versions[g]; ok {
			return x
		}
		return "1"
	}
	for i := 0; i < 3; i++ {
		g := fmt.Sprintf("asg-etcd%d", i)
		s.add(g, "etcd", Etcd, 1, 1, v(g))
	}
	s.add("asg-controller", "controller", Controller, 2, 3, v("asg-controller"))
	s.add("asg-general", "nodepool-general", Worker, 2, 3, v("asg-general"))
	s.add("asg-spot", "nodepool-spot", Worker, 1, 2, v("asg-spot"))
	return s
}

func fast() Options {
	return Options{Poll: time.Millisecond, BootGrace: time.Minute, Drain: nodeplan.DrainRequest{Timeout: time.Minute}, RequestID: "r1"}
}

func TestRollOrderAndGates(t *testing.T) {
	all := map[string]string{"asg-etcd0": "2", "asg-etcd1": "2", "asg-etcd2": "2", "asg-controller": "2", "asg-general": "2", "asg-spot": "2"}
	s := exampleSim(all)
	var events []Event
	o := fast()
	o.Report = func(e Event) { events = append(events, e) }
	sum, err := Run(context.Background(), s, example, o)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Replaced != 8 || sum.ByRole["etcd"] != 3 || sum.ByRole["controller"] != 2 || sum.ByRole["nodepool-general"] != 2 || sum.ByRole["nodepool-spot"] != 1 {
		t.Fatalf("replaced %+v", sum)
	}
	// Every group ends with only current machines, at its size.
	for name, g := range s.groups {
		if g.desired != s.groupsTarget(name) {
			t.Errorf("%s desired %d", name, g.desired)
		}
		for _, in := range g.instances {
			if in.Version != g.version {
				t.Errorf("%s still runs %s of version %s", name, in.ID, in.Version)
			}
		}
	}
	// etcd members, then controllers, then pools: the last etcd
	// termination before the first controller drain, the last controller
	// termination before the first worker drain.
	last := func(prefix string, ids ...string) int {
		m := -1
		for _, id := range ids {
			if i := s.index(prefix + id); i > m {
				m = i
			}
		}
		return m
	}
	first := func(prefix string, ids ...string) int {
		m := len(s.log)
		for _, id := range ids {
			if i := s.index(prefix + id); i >= 0 && i < m {
				m = i
			}
		}
		return m
	}
	etcdIDs, ctlIDs, workerIDs := []string{"i-01", "i-02", "i-03"}, []string{"i-04", "i-05"}, []string{"i-06", "i-07", "i-08"}
	if !(last("terminate ", etcdIDs...) < first("drain ", ctlIDs...) && last("terminate ", ctlIDs...) < first("drain ", workerIDs...)) {
		t.Errorf("order: %v", s.log)
	}
	// One etcd member at a time: each replacement ready before the next
	// member goes.
	for i, id := range etcdIDs[:2] {
		term := s.index("terminate " + id)
		next := s.index("terminate " + etcdIDs[i+1])
		ready := -1
		for j := term; j < next; j++ {
			if strings.HasPrefix(s.log[j], "ready ") {
				ready = j
			}
		}
		if ready < 0 {
			t.Errorf("etcd member after %s went before its replacement was ready: %v", id, s.log)
		}
	}
	// Each old controller is drained only once a new one serves behind the
	// load balancer.
	serving := 0
	for _, l := range s.log {
		switch {
		case strings.HasPrefix(l, "serving "):
			serving++
		case l == "drain i-04" && serving < 1, l == "drain i-05" && serving < 2:
			t.Errorf("%s before a new controller served: %v", l, s.log)
		}
	}
	// Pools surge by one: desired never above target+1, and each old node
	// drained before its instance was terminated.
	if s.maxDesired["asg-general"] != 3 || s.maxDesired["asg-spot"] != 2 {
		t.Errorf("surge: %v", s.maxDesired)
	}
	for _, id := range append(ctlIDs, workerIDs...) {
		if d, term := s.index("drain "+id), s.index("terminate "+id); d < 0 || term < d {
			t.Errorf("%s: drain at %d, terminate at %d", id, d, term)
		}
	}
	if len(s.withdrawn) != 0 {
		t.Errorf("withdrew %v after a clean roll", s.withdrawn)
	}
	var sawBlocked bool
	for _, e := range events {
		if e.Phase == PhaseFailed || e.Phase == PhaseBlocked {
			sawBlocked = true
		}
	}
	if sawBlocked {
		t.Error("a clean roll reported a failure")
	}
}

func (s *sim) groupsTarget(name string) int {
	for _, sp := range example {
		if sp.Group == name {
			return sp.Target
		}
	}
	return -1
}

// A plugin that changes one pool's machines replaces only those.
func TestOnlyChangedGroupsRoll(t *testing.T) {
	s := exampleSim(map[string]string{"asg-spot": "2"})
	sum, err := Run(context.Background(), s, example, fast())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Replaced != 1 || sum.ByRole["nodepool-spot"] != 1 {
		t.Fatalf("replaced %+v", sum)
	}
	for _, l := range s.log {
		if strings.HasPrefix(l, "terminate ") && l != "terminate i-08" {
			t.Errorf("%s: only the spot pool's machine should go", l)
		}
	}
}

func TestFailedReplacementStopsAndResumes(t *testing.T) {
	s := exampleSim(map[string]string{"asg-general": "2"})
	s.failStep["nodepool-general"] = "runcmd[1]: kube-aws-node artifacts"
	_, err := Run(context.Background(), s, example, fast())
	var re *Error
	if !errors.As(err, &re) {
		t.Fatalf("want a roll error, got %v", err)
	}
	if re.Role != "nodepool-general" || re.Step != "runcmd[1]: kube-aws-node artifacts" || !strings.Contains(re.Error(), re.Instance) || !strings.Contains(re.Error(), "exit status 1: kube-aws-node[x] 3.7s artifacts: FAILED: sha256 mismatch") || strings.Contains(re.Error(), "bridge installed") {
		t.Errorf("error: %v", re)
	}
	// The old machines still serve: none was drained or terminated.
	for _, id := range []string{"i-06", "i-07"} {
		if s.index("terminate "+id) >= 0 || s.index("drain "+id) >= 0 {
			t.Errorf("old machine %s was touched: %v", id, s.log)
		}
	}
	// Fixed, run again: the broken machine goes first, then the old ones.
	delete(s.failStep, "nodepool-general")
	s.log = nil
	sum, err := Run(context.Background(), s, example, fast())
	if err != nil {
		t.Fatal(err)
	}
	if s.log[0] != "drain "+re.Instance || sum.ByRole["nodepool-general"] != 3 {
		t.Errorf("resume: %+v %v", sum, s.log)
	}
	g := s.groups["asg-general"]
	if g.desired != 2 || len(g.instances) != 2 {
		t.Errorf("general: desired %d, %d instances", g.desired, len(g.instances))
	}
}

func TestBlockedDrainTerminatesNothing(t *testing.T) {
	s := exampleSim(map[string]string{"asg-spot": "2"})
	s.blocked["i-08"] = true
	_, err := Run(context.Background(), s, example, fast())
	var re *Error
	if !errors.As(err, &re) || re.Blocker == nil || re.Blocker.PDB != "default/web" {
		t.Fatalf("want a blocked drain naming the PDB, got %v", err)
	}
	if !strings.Contains(err.Error(), "default/web-1") || !strings.Contains(err.Error(), "PodDisruptionBudget default/web") {
		t.Errorf("message: %v", err)
	}
	if s.index("terminate i-08") >= 0 {
		t.Error("the blocked node's instance was terminated")
	}
	if len(s.withdrawn) != 1 || s.withdrawn[0] != "i-08" {
		t.Errorf("withdrawn %v", s.withdrawn)
	}
}

func TestNoRoomAndNoUnavailable(t *testing.T) {
	s := newSim()
	s.add("asg-a", "nodepool-a", Worker, 2, 2, "2")
	spec := []Spec{{Stack: "nodepool-a", Role: "nodepool-a", Kind: Worker, Group: "asg-a", Target: 2, MaxSurge: 1}}
	_, err := Run(context.Background(), s, spec, fast())
	if err == nil || !strings.Contains(err.Error(), "no room") {
		t.Fatalf("got %v", err)
	}
	// With the default, one at a time in place.
	spec[0].DefaultUnavailable = true
	sum, err := Run(context.Background(), s, spec, fast())
	if err != nil || sum.Replaced != 2 || s.maxDesired["asg-a"] != 2 {
		t.Fatalf("%+v %v %v", sum, err, s.maxDesired)
	}
}

func TestInterruptWithdrawsDrains(t *testing.T) {
	s := exampleSim(map[string]string{"asg-spot": "2"})
	ctx, cancel := context.WithCancel(context.Background())
	s.onDrain = func(string) { cancel() }
	var events []Event
	o := fast()
	o.Report = func(e Event) { events = append(events, e) }
	_, err := Run(ctx, s, example, o)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if len(s.withdrawn) != 1 || s.index("terminate i-08") >= 0 {
		t.Errorf("withdrawn %v, log %v", s.withdrawn, s.log)
	}
	if e := events[len(events)-1]; e.Phase != PhaseCanceled || e.Instance != "i-08" {
		t.Errorf("last event %+v", e)
	}
}

func TestPlanSaysWhy(t *testing.T) {
	s := exampleSim(map[string]string{"asg-controller": "2"})
	plans, err := Plan(context.Background(), s, example, fast())
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for _, p := range plans {
		for _, od := range p.Outdated {
			n++
			if p.Spec.Role != "controller" || od.Reason != "launch template version 1 -> 2" {
				t.Errorf("%s %s: %s", p.Spec.Role, od.ID, od.Reason)
			}
		}
	}
	if n != 2 {
		t.Errorf("%d out of date", n)
	}
}
