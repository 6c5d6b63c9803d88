package drain

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kube-aws/kube-aws/core/nodeplan"
)

// cloud is Auto Scaling and EC2 as the drainer sees them.
type cloud struct {
	mu        sync.Mutex
	waiting   map[string]string // instance -> group, in Terminating:Wait
	tags      map[string]string // instance -> drain request
	ended     map[string]bool
	completed []string
	beats     int
	// hookAsks is the metadata of the groups' hook.
	hookAsks string
	// slowComplete, when set, holds CompleteLifecycleAction until closed.
	slowComplete chan struct{}
}

func (c *cloud) DescribeAutoScalingGroups(_ context.Context, in *autoscaling.DescribeAutoScalingGroupsInput, _ ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(in.Filters) != 1 || aws.ToString(in.Filters[0].Name) != "tag:kubernetes.io/cluster/demo" {
		panic("groups not filtered by the cluster's tag")
	}
	groups := map[string]*astypes.AutoScalingGroup{}
	for id, g := range c.waiting {
		if groups[g] == nil {
			groups[g] = &astypes.AutoScalingGroup{AutoScalingGroupName: aws.String(g)}
		}
		groups[g].Instances = append(groups[g].Instances, astypes.Instance{InstanceId: aws.String(id), LifecycleState: astypes.LifecycleStateTerminatingWait})
	}
	out := &autoscaling.DescribeAutoScalingGroupsOutput{}
	for _, g := range groups {
		out.AutoScalingGroups = append(out.AutoScalingGroups, *g)
	}
	return out, nil
}

func (c *cloud) CompleteLifecycleAction(_ context.Context, in *autoscaling.CompleteLifecycleActionInput, _ ...func(*autoscaling.Options)) (*autoscaling.CompleteLifecycleActionOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if aws.ToString(in.LifecycleHookName) != "kube-aws-drain" || aws.ToString(in.LifecycleActionResult) != "CONTINUE" {
		panic("wrong hook or result")
	}
	c.completed = append(c.completed, aws.ToString(in.InstanceId))
	if c.slowComplete != nil {
		// Auto Scaling still lists the instance as waiting while the
		// call is on its way.
		c.mu.Unlock()
		<-c.slowComplete
		c.mu.Lock()
	}
	delete(c.waiting, aws.ToString(in.InstanceId))
	return &autoscaling.CompleteLifecycleActionOutput{}, nil
}

func (c *cloud) RecordLifecycleActionHeartbeat(context.Context, *autoscaling.RecordLifecycleActionHeartbeatInput, ...func(*autoscaling.Options)) (*autoscaling.RecordLifecycleActionHeartbeatOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.beats++
	return &autoscaling.RecordLifecycleActionHeartbeatOutput{}, nil
}

// DescribeLifecycleHooks: the hook asks, in its metadata, for the drain
// the test sets (none: the drainer's own).
func (c *cloud) DescribeLifecycleHooks(_ context.Context, in *autoscaling.DescribeLifecycleHooksInput, _ ...func(*autoscaling.Options)) (*autoscaling.DescribeLifecycleHooksOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := &autoscaling.DescribeLifecycleHooksOutput{}
	if c.hookAsks != "" {
		out.LifecycleHooks = []astypes.LifecycleHook{{AutoScalingGroupName: in.AutoScalingGroupName, LifecycleHookName: aws.String("kube-aws-drain"),
			NotificationMetadata: aws.String(c.hookAsks)}}
	}
	return out, nil
}

func (c *cloud) DescribeInstances(_ context.Context, _ *ec2.DescribeInstancesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var r ec2types.Reservation
	for id, v := range c.tags {
		st := ec2types.InstanceStateNameRunning
		if c.ended[id] {
			st = ec2types.InstanceStateNameTerminated
		}
		r.Instances = append(r.Instances, ec2types.Instance{InstanceId: aws.String(id), State: &ec2types.InstanceState{Name: st},
			Tags: []ec2types.Tag{{Key: aws.String(nodeplan.DrainTag), Value: aws.String(v)}}})
	}
	return &ec2.DescribeInstancesOutput{Reservations: []ec2types.Reservation{r}}, nil
}

// statuses keeps what the drainer writes, by instance.
type statuses struct {
	mu   sync.Mutex
	last map[string]nodeplan.DrainStatus
	all  []nodeplan.DrainStatus
}

func (s *statuses) put(_ context.Context, rel string, body []byte) error {
	var st nodeplan.DrainStatus
	if err := json.Unmarshal(body, &st); err != nil {
		return err
	}
	if rel != nodeplan.DrainStatusKey(st.InstanceID) {
		panic("status written at " + rel)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.last[st.InstanceID] = st
	s.all = append(s.all, st)
	return nil
}

func (s *statuses) get(id string) nodeplan.DrainStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.last[id]
}

// cluster is a node per instance with a web pod (a budget may protect it),
// a DaemonSet pod and a mirror pod; evictions delete the pod unless the
// budget allows no disruption.
func cluster(t *testing.T, protect bool) *fake.Clientset {
	t.Helper()
	var objs []runtime.Object
	for _, id := range []string{"i-1", "i-2"} {
		objs = append(objs,
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + id}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/" + id}},
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-" + id, Namespace: "default", Labels: map[string]string{"app": "web"},
				OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web", APIVersion: "apps/v1", Controller: ptr(true)}}},
				Spec: corev1.PodSpec{NodeName: "node-" + id}, Status: corev1.PodStatus{Phase: corev1.PodRunning}},
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "proxy-" + id, Namespace: "kube-system",
				OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet", Name: "kube-proxy", APIVersion: "apps/v1", Controller: ptr(true)}}},
				Spec: corev1.PodSpec{NodeName: "node-" + id}, Status: corev1.PodStatus{Phase: corev1.PodRunning}},
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "static-" + id, Namespace: "kube-system",
				Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "x"}},
				Spec: corev1.PodSpec{NodeName: "node-" + id}, Status: corev1.PodStatus{Phase: corev1.PodRunning}},
		)
	}
	objs = append(objs, &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "kube-system"}})
	objs = append(objs, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec:   policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr(intstr.FromInt32(2)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status: policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 2, DesiredHealthy: 2}})
	cs := fake.NewClientset(objs...)
	cs.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "pods/eviction", Kind: "Eviction", Group: "policy", Version: "v1"},
	}}}
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		if protect && strings.HasPrefix(ev.Name, "web-") {
			return true, nil, apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		}
		return true, nil, cs.Tracker().Delete(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, ev.Namespace, ev.Name)
	})
	return cs
}

func ptr[T any](v T) *T { return &v }

func newDrainer(cs *fake.Clientset, c *cloud, s *statuses, timeout time.Duration, force bool) *Drainer {
	return New(Options{Cluster: "demo", Hook: "kube-aws-drain", Kube: cs, ASG: c, EC2: c, Put: s.put,
		Timeout: timeout, Force: force, Poll: 10 * time.Millisecond, Heartbeat: 20 * time.Millisecond, EvictRetry: 20 * time.Millisecond,
		Logf: func(string, ...any) {}})
}

// until polls the drainer until cond holds.
func until(t *testing.T, d *Drainer, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		if err := d.Once(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func pods(t *testing.T, cs *fake.Clientset, node string) []string {
	t.Helper()
	list, err := cs.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range list.Items {
		if p.Spec.NodeName == node {
			out = append(out, p.Namespace+"/"+p.Name)
		}
	}
	return out
}

func unschedulable(t *testing.T, cs *fake.Clientset, node string) bool {
	t.Helper()
	n, err := cs.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n.Spec.Unschedulable
}

func TestRequestedDrain(t *testing.T) {
	cs, c, s := cluster(t, false), &cloud{tags: map[string]string{"i-1": "id=r1;timeout=1m0s;force=false"}}, &statuses{last: map[string]nodeplan.DrainStatus{}}
	d := newDrainer(cs, c, s, time.Minute, false)
	until(t, d, "the drain", func() bool { return s.get("i-1").Phase == nodeplan.DrainDrained })
	st := s.get("i-1")
	if st.Request != "r1" || st.Node != "node-i-1" || len(st.Pods) != 0 {
		t.Errorf("status %+v", st)
	}
	// Cordoned; the web pod evicted; DaemonSet and mirror pods left; the
	// other node untouched.
	if !unschedulable(t, cs, "node-i-1") || unschedulable(t, cs, "node-i-2") {
		t.Error("cordon")
	}
	if got := strings.Join(pods(t, cs, "node-i-1"), " "); got != "kube-system/proxy-i-1 kube-system/static-i-1" {
		t.Errorf("pods left: %s", got)
	}
	// The first status said what was to go.
	if first := s.all[0]; first.Phase != nodeplan.DrainDraining {
		t.Errorf("first status %+v", first)
	}
	// Drained once: more polls write nothing more.
	n := len(s.all)
	for i := 0; i < 5; i++ {
		d.Once(context.Background())
	}
	if len(s.all) != n {
		t.Errorf("a drained request was drained again: %d statuses, then %d", n, len(s.all))
	}
	// The request withdrawn (the roll stopped elsewhere): uncordoned.
	c.mu.Lock()
	delete(c.tags, "i-1")
	c.mu.Unlock()
	until(t, d, "the uncordon", func() bool { return s.get("i-1").Phase == nodeplan.DrainCanceled })
	if unschedulable(t, cs, "node-i-1") {
		t.Error("the withdrawn request's node stays cordoned")
	}
}

// The API server refusing for a moment (restarted by its kubelet) does
// not fail the drain: finding the node, cordoning it and evicting are
// tried again until the drain's timeout.
func TestAPIServerAwayForAMoment(t *testing.T) {
	cs, c, s := cluster(t, false), &cloud{tags: map[string]string{"i-1": "id=r1;timeout=1m0s;force=false"}}, &statuses{last: map[string]nodeplan.DrainStatus{}}
	refused := map[string]int{}
	var mu sync.Mutex
	for _, verb := range []string{"list", "patch"} {
		cs.PrependReactor(verb, "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
			mu.Lock()
			defer mu.Unlock()
			if refused[verb] < 2 {
				refused[verb]++
				return true, nil, errors.New(`Get "https://127.0.0.1:443/api/v1/nodes": dial tcp 127.0.0.1:443: connect: connection refused`)
			}
			return false, nil, nil
		})
	}
	d := newDrainer(cs, c, s, time.Minute, false)
	until(t, d, "the drain", func() bool { return s.get("i-1").Phase == nodeplan.DrainDrained })
	if !unschedulable(t, cs, "node-i-1") {
		t.Error("not cordoned")
	}
	if got := strings.Join(pods(t, cs, "node-i-1"), " "); got != "kube-system/proxy-i-1 kube-system/static-i-1" {
		t.Errorf("pods left: %s", got)
	}
	for _, st := range s.all {
		if st.Phase == nodeplan.DrainFailed {
			t.Errorf("a status said failed while the API server was away: %+v", st)
		}
	}
	if refused["list"] != 2 || refused["patch"] != 2 {
		t.Errorf("refusals %v: the test did not refuse as meant", refused)
	}
}

// An API server away for longer than the drain's timeout fails the drain
// with its error.
func TestAPIServerAwayPastTheTimeout(t *testing.T) {
	cs, c, s := cluster(t, false), &cloud{tags: map[string]string{"i-1": "id=r1;timeout=300ms;force=false"}}, &statuses{last: map[string]nodeplan.DrainStatus{}}
	cs.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	d := newDrainer(cs, c, s, time.Minute, false)
	until(t, d, "the failure", func() bool { return s.get("i-1").Phase == nodeplan.DrainFailed })
	if st := s.get("i-1"); !strings.Contains(st.Message, "listing nodes: connection refused") {
		t.Errorf("status %+v: want the API server's error", st)
	}
}

// A store that refuses a write for a moment does not lose a drain's last
// status: the instance would otherwise go with its status "draining".
func TestFinalStatusWrittenThroughARefusal(t *testing.T) {
	cs, c, s := cluster(t, false), &cloud{tags: map[string]string{"i-1": "id=r1;timeout=1m0s;force=false"}}, &statuses{last: map[string]nodeplan.DrainStatus{}}
	d := newDrainer(cs, c, s, time.Minute, false)
	var mu sync.Mutex
	refused := 0
	put := d.o.Put
	d.o.Put = func(ctx context.Context, rel string, body []byte) error {
		mu.Lock()
		defer mu.Unlock()
		if strings.Contains(string(body), `"drained"`) && refused < 2 {
			refused++
			return errors.New("503 Slow Down")
		}
		return put(ctx, rel, body)
	}
	until(t, d, "the drain", func() bool { return s.get("i-1").Phase == nodeplan.DrainDrained })
	if refused != 2 {
		t.Errorf("the store refused %d writes, want 2: the test did not refuse as meant", refused)
	}
}

func TestBlockedByABudget(t *testing.T) {
	cs, c, s := cluster(t, true), &cloud{tags: map[string]string{"i-1": "id=r1;timeout=200ms;force=false"}}, &statuses{last: map[string]nodeplan.DrainStatus{}}
	d := newDrainer(cs, c, s, time.Minute, false)
	until(t, d, "the timeout", func() bool { return s.get("i-1").Phase == nodeplan.DrainBlocked })
	st := s.get("i-1")
	if st.Blocker == nil || st.Blocker.Pod != "default/web-i-1" || st.Blocker.PDB != "default/web" || !strings.Contains(st.Blocker.Message, "0 disruptions allowed") {
		t.Errorf("blocker %+v", st.Blocker)
	}
	if !unschedulable(t, cs, "node-i-1") {
		t.Error("a blocked drain keeps its node cordoned until the request goes")
	}
	c.mu.Lock()
	delete(c.tags, "i-1")
	c.mu.Unlock()
	until(t, d, "the uncordon", func() bool { return s.get("i-1").Phase == nodeplan.DrainCanceled })
	if unschedulable(t, cs, "node-i-1") {
		t.Error("still cordoned")
	}
}

func TestForcedDrainDeletesWhatTheBudgetProtects(t *testing.T) {
	cs, c, s := cluster(t, true), &cloud{tags: map[string]string{"i-1": "id=r1;timeout=200ms;force=true"}}, &statuses{last: map[string]nodeplan.DrainStatus{}}
	d := newDrainer(cs, c, s, time.Minute, false)
	until(t, d, "the forced drain", func() bool { return s.get("i-1").Phase == nodeplan.DrainDrained })
	if got := pods(t, cs, "node-i-1"); len(got) != 2 {
		t.Errorf("pods left: %v", got)
	}
}

// Whoever terminates an instance, its node is drained before the hook is
// answered.
func TestTerminationHook(t *testing.T) {
	cs, c, s := cluster(t, false), &cloud{waiting: map[string]string{"i-2": "asg-general"}}, &statuses{last: map[string]nodeplan.DrainStatus{}}
	d := newDrainer(cs, c, s, time.Minute, false)
	until(t, d, "the hook", func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.completed) == 1 })
	if st := s.get("i-2"); st.Phase != nodeplan.DrainDrained || st.Request != "" {
		t.Errorf("status %+v", st)
	}
	if got := pods(t, cs, "node-i-2"); len(got) != 2 {
		t.Errorf("completed with pods left: %v", got)
	}
}

// An instance whose lifecycle action is being completed is still listed as
// waiting for a moment: polls meanwhile do not drain it a second time (a
// second drain's "draining" would be its status once the instance is gone).
func TestTerminationHookCompletedOnce(t *testing.T) {
	cs, c, s := cluster(t, false), &cloud{waiting: map[string]string{"i-2": "asg-general"}, slowComplete: make(chan struct{})}, &statuses{last: map[string]nodeplan.DrainStatus{}}
	d := newDrainer(cs, c, s, time.Minute, false)
	until(t, d, "the call completing the hook", func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.completed) == 1 })
	for i := 0; i < 10; i++ {
		if err := d.Once(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(c.slowComplete)
	until(t, d, "the instance gone", func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.waiting) == 0 })
	if st := s.get("i-2"); st.Phase != nodeplan.DrainDrained {
		t.Errorf("status %+v, want drained", st)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.completed) != 1 {
		t.Errorf("the hook was completed %d times, want once", len(c.completed))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	drained := false
	for _, st := range s.all {
		if drained && st.Phase == nodeplan.DrainDraining {
			t.Errorf("a second drain began after the first ended: %+v", st)
		}
		drained = drained || st.Phase == nodeplan.DrainDrained
	}
}

// A hook whose drain times out still lets the instance go, saying so. The
// hook's metadata names the timeout (the drainer's own is a minute).
func TestTerminationHookTimesOut(t *testing.T) {
	cs, c, s := cluster(t, true), &cloud{waiting: map[string]string{"i-2": "asg-general"}, hookAsks: "id=kube-aws-drain;timeout=300ms;force=false"}, &statuses{last: map[string]nodeplan.DrainStatus{}}
	d := newDrainer(cs, c, s, time.Minute, false)
	until(t, d, "the hook", func() bool { c.mu.Lock(); defer c.mu.Unlock(); return len(c.completed) == 1 })
	if st := s.get("i-2"); st.Phase != nodeplan.DrainBlocked {
		t.Errorf("status %+v", st)
	}
	c.mu.Lock()
	beats := c.beats
	c.mu.Unlock()
	if beats == 0 {
		t.Error("no heartbeat while draining")
	}
}

func TestInstanceWithoutNode(t *testing.T) {
	cs, c, s := cluster(t, false), &cloud{tags: map[string]string{"i-9": "id=r1;timeout=1m0s;force=false"}}, &statuses{last: map[string]nodeplan.DrainStatus{}}
	d := newDrainer(cs, c, s, time.Minute, false)
	until(t, d, "the drain", func() bool { return s.get("i-9").Phase == nodeplan.DrainDrained })
	if st := s.get("i-9"); st.Node != "" || !strings.Contains(st.Message, "no Kubernetes node") {
		t.Errorf("status %+v", st)
	}
}

// Pending says what the drainer would drain now, and changes nothing: no
// cordon, no status, no lifecycle action.
func TestPending(t *testing.T) {
	tests := []struct {
		name  string
		cloud *cloud
		kube  func(*fake.Clientset)
		want  []Work
	}{
		{"nothing to do", &cloud{}, nil, []Work{}},
		{"a hook, a request, both, an instance without a node", &cloud{
			waiting: map[string]string{"i-2": "asg-general", "i-1": "asg-general"},
			tags:    map[string]string{"i-1": "id=r1;timeout=1m0s;force=true", "i-9": "id=r2;timeout=2m0s;force=false"},
		}, nil, []Work{
			{Instance: "i-1", Group: "asg-general", Request: &nodeplan.DrainRequest{ID: "r1", Timeout: time.Minute, Force: true}, Timeout: time.Minute, Force: true, Node: "node-i-1"},
			{Instance: "i-2", Group: "asg-general", Timeout: 5 * time.Minute, Node: "node-i-2"},
			{Instance: "i-9", Request: &nodeplan.DrainRequest{ID: "r2", Timeout: 2 * time.Minute}, Timeout: 2 * time.Minute},
		}},
		{"nodes unreadable", &cloud{waiting: map[string]string{"i-2": "asg-general"}}, func(cs *fake.Clientset) {
			cs.PrependReactor("list", "nodes", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, "", nil)
			})
		}, []Work{{Instance: "i-2", Group: "asg-general", Timeout: 5 * time.Minute}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs, s := cluster(t, false), &statuses{last: map[string]nodeplan.DrainStatus{}}
			if tt.kube != nil {
				tt.kube(cs)
			}
			d := newDrainer(cs, tt.cloud, s, 5*time.Minute, false)
			got, err := d.Pending(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got {
				g, w := got[i], tt.want[i]
				if (g.NodeErr != nil) != (tt.kube != nil) {
					t.Errorf("%s: node error %v", g.Instance, g.NodeErr)
				}
				g.NodeErr = nil
				if (g.Request == nil) != (w.Request == nil) || (g.Request != nil && *g.Request != *w.Request) {
					t.Errorf("%s: request %+v, want %+v", g.Instance, g.Request, w.Request)
				}
				g.Request, w.Request = nil, nil
				if g != w {
					t.Errorf("got %+v, want %+v", g, w)
				}
			}
			if unschedulable(t, cs, "node-i-1") || unschedulable(t, cs, "node-i-2") || len(s.all) != 0 || len(tt.cloud.completed) != 0 {
				t.Errorf("the look changed something: statuses %v, completed %v", s.all, tt.cloud.completed)
			}
		})
	}
}
