// Package drain is the controllers' drainer (`kube-aws-node drainer`): the
// one place where a node is drained before its machine goes, whoever ends
// the machine. One controller at a time drains (a Lease in kube-system
// elects it); it finds work in two ways, both read from APIs that cost
// nothing to poll:
//   - an instance of one of the cluster's Auto Scaling groups waits in
//     Terminating:Wait on the drain lifecycle hook (a scale-in, a spot
//     interruption, a replaced unhealthy instance, kube-aws's roll): the
//     drainer drains its node, heartbeats the hook meanwhile, and completes
//     the lifecycle action (CONTINUE) when done, or when the drain timed
//     out (a hook can delay a termination, never stop it);
//   - kube-aws's roll tags an instance with nodeplan.DrainTag before it
//     terminates it: the drainer drains and reports, and never terminates;
//     a tag that goes away (the roll was interrupted or gave up) makes it
//     stop and uncordon the node it cordoned for that request.
//
// A drain cordons the node, then evicts its pods through the Eviction API
// with kubectl's drain library (PodDisruptionBudgets honoured, DaemonSet
// pods left, mirror pods ignored, emptyDir data deleted with its pod),
// within the request's timeout; a pod a budget still protects at the
// timeout is named with the budget in the report, or deleted when the
// request forces it. Each drain's progress is written to S3
// (nodeplan.DrainStatus), where kube-aws reads it.
package drain

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	kubectldrain "k8s.io/kubectl/pkg/drain"

	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
)

// AutoScaling is what the drainer asks of Auto Scaling.
type AutoScaling interface {
	DescribeAutoScalingGroups(context.Context, *autoscaling.DescribeAutoScalingGroupsInput, ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error)
	CompleteLifecycleAction(context.Context, *autoscaling.CompleteLifecycleActionInput, ...func(*autoscaling.Options)) (*autoscaling.CompleteLifecycleActionOutput, error)
	RecordLifecycleActionHeartbeat(context.Context, *autoscaling.RecordLifecycleActionHeartbeatInput, ...func(*autoscaling.Options)) (*autoscaling.RecordLifecycleActionHeartbeatOutput, error)
	DescribeLifecycleHooks(context.Context, *autoscaling.DescribeLifecycleHooksInput, ...func(*autoscaling.Options)) (*autoscaling.DescribeLifecycleHooksOutput, error)
}

// EC2 is what the drainer asks of EC2: the instances with a drain request.
type EC2 interface {
	DescribeInstances(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)
}

// Options configure a Drainer.
type Options struct {
	// Cluster is the cluster's name: its groups and instances carry the
	// tag kubernetes.io/cluster/<Cluster> = owned.
	Cluster string
	// Hook is the lifecycle hook the drainer answers.
	Hook string
	Kube kubernetes.Interface
	ASG  AutoScaling
	EC2  EC2
	// Put writes a drain's status (JSON) under the cluster's prefix.
	Put func(ctx context.Context, rel string, body []byte) error
	// Timeout and Force are a termination hook's drain's when the hook's
	// metadata does not say.
	Timeout time.Duration
	Force   bool
	// Poll is how often the groups and the requests are read.
	Poll time.Duration
	// Heartbeat is how often a lifecycle action being drained for is
	// extended.
	Heartbeat time.Duration
	// EvictRetry is the pause before evicting a pod a budget protected
	// again (kubectl's drain waits 5 s).
	EvictRetry time.Duration
	Now        func() time.Time
	Logf       func(string, ...any)
}

// Drainer drains nodes; Run is its loop while it leads.
type Drainer struct {
	o Options

	mu sync.Mutex
	// active are the drains running now, by instance.
	active map[string]*job
	// answered are the finished drains of requests, by instance: a
	// request is drained once, and undone if it is withdrawn before the
	// instance goes.
	answered map[string]*job
	// completed are the instances whose lifecycle action was completed:
	// Auto Scaling may list them as waiting a moment longer.
	completed map[string]bool
}

// job is one drain in flight.
type job struct {
	request string // "" for the termination hook's
	cancel  context.CancelFunc
	done    chan struct{}
	// cordoned says the drainer cordoned the node (it was schedulable).
	cordoned bool
	node     string
}

// New returns a Drainer.
func New(o Options) *Drainer {
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	if o.Heartbeat <= 0 {
		o.Heartbeat = 30 * time.Second
	}
	if o.EvictRetry <= 0 {
		o.EvictRetry = 5 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	return &Drainer{o: o, active: map[string]*job{}, answered: map[string]*job{}, completed: map[string]bool{}}
}

// Run polls for work until ctx ends (leadership lost, SIGTERM), then
// waits for the drains it started to stop.
func (d *Drainer) Run(ctx context.Context) error {
	t := time.NewTicker(d.o.Poll)
	defer t.Stop()
	defer d.stopAll()
	for {
		if err := d.Once(ctx); err != nil && ctx.Err() == nil {
			d.o.Logf("%v (trying again in %s)", err, d.o.Poll)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Once looks for work once: instances waiting on the hook, and drain
// requests, new or withdrawn.
func (d *Drainer) Once(ctx context.Context) error {
	hooked, err := d.waiting(ctx)
	if err != nil {
		return err
	}
	requests, ended, err := d.requests(ctx)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	// Requests taken back (the roll stopped or was interrupted): stop,
	// and uncordon what was cordoned for them. An instance on its way out
	// keeps its drain.
	gone := func(id, request string) bool {
		if _, going := hooked[id]; going || ended[id] {
			return false
		}
		r, ok := requests[id]
		return !ok || r.ID != request
	}
	for id, j := range d.active {
		if j.request != "" && gone(id, j.request) {
			j.cancel()
			delete(d.active, id)
			go d.withdrawn(id, j)
		}
	}
	for id, j := range d.answered {
		if ended[id] {
			delete(d.answered, id)
			continue
		}
		if gone(id, j.request) {
			delete(d.answered, id)
			go d.withdrawn(id, j)
		}
	}
	for id, r := range requests {
		if _, busy := d.active[id]; busy {
			continue
		}
		if j, ok := d.answered[id]; ok && j.request == r.ID {
			continue
		}
		d.start(ctx, id, r.ID, r.Timeout, r.Force, nil)
	}
	for id, h := range hooked {
		// A drain running for the instance (a request's, or the hook's
		// own) finishes first; the hook is answered by a drain of its own,
		// at once when the node is empty already.
		if _, busy := d.active[id]; busy || d.completed[id] {
			continue
		}
		d.start(ctx, id, "", h.timeout, h.force, &h)
	}
	return nil
}

// Work is a drain the drainer would start now.
type Work struct {
	Instance string
	// Group is the Auto Scaling group whose termination hook holds the
	// instance; empty when only a request asks for the drain.
	Group string
	// Request is kube-aws's request; nil for a drain the hook asks for.
	// With both, the request's drain runs first and the hook is completed
	// once it is done.
	Request *nodeplan.DrainRequest
	// Timeout and Force are the drain's: the request's, else the
	// drainer's own.
	Timeout time.Duration
	Force   bool
	// Node is the instance's Kubernetes node; empty when it has none, or
	// when the nodes could not be read (NodeErr).
	Node    string
	NodeErr error
}

// Pending lists, in instance order, the drains a drainer that has done
// nothing yet would start now, each with the node it would drain. It
// changes nothing: it reads Auto Scaling, EC2 and the nodes. A node list
// the API server refuses is no error: each Work carries it.
func (d *Drainer) Pending(ctx context.Context) ([]Work, error) {
	hooked, err := d.waiting(ctx)
	if err != nil {
		return nil, err
	}
	requests, _, err := d.requests(ctx)
	if err != nil {
		return nil, err
	}
	byID := map[string]*Work{}
	for id, h := range hooked {
		byID[id] = &Work{Instance: id, Group: h.group, Timeout: h.timeout, Force: h.force}
	}
	for id, r := range requests {
		w := byID[id]
		if w == nil {
			w = &Work{Instance: id}
			byID[id] = w
		}
		w.Request = &r
		w.Timeout, w.Force = r.Timeout, r.Force
	}
	var nodes *corev1.NodeList
	if len(byID) > 0 {
		nodes, err = d.o.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			err = fmt.Errorf("listing nodes: %w", err)
		}
	}
	out := make([]Work, 0, len(byID))
	for _, w := range byID {
		if err != nil {
			w.NodeErr = err
		} else if n := nodeOfInstance(nodes.Items, w.Instance); n != nil {
			w.Node = n.Name
		}
		out = append(out, *w)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Instance < out[j].Instance })
	return out, nil
}

// hookWait is an instance held by the drain hook, and the drain the hook
// asks for.
type hookWait struct {
	group   string
	timeout time.Duration
	force   bool
}

// waiting lists the cluster's instances held by the drain hook, each with
// the drain its group's hook asks for: its metadata is a
// nodeplan.DrainRequest (cluster.yaml's drain, rendered into the hook, so
// that changing it changes no machine); Options' Timeout and Force when it
// says nothing.
func (d *Drainer) waiting(ctx context.Context) (map[string]hookWait, error) {
	out := map[string]hookWait{}
	asked := map[string]hookWait{} // group -> its hook's drain
	p := autoscaling.NewDescribeAutoScalingGroupsPaginator(d.o.ASG, &autoscaling.DescribeAutoScalingGroupsInput{
		Filters: []astypes.Filter{{Name: aws.String("tag:" + clusterTag(d.o.Cluster)), Values: []string{"owned"}}},
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading the cluster's auto scaling groups: %w", err)
		}
		for _, g := range page.AutoScalingGroups {
			for _, i := range g.Instances {
				if i.LifecycleState != astypes.LifecycleStateTerminatingWait {
					continue
				}
				name := aws.ToString(g.AutoScalingGroupName)
				h, ok := asked[name]
				if !ok {
					h = d.hookAsks(ctx, name)
					asked[name] = h
				}
				out[aws.ToString(i.InstanceId)] = h
			}
		}
	}
	return out, nil
}

// hookAsks reads the drain a group's hook asks for from its metadata.
func (d *Drainer) hookAsks(ctx context.Context, group string) hookWait {
	h := hookWait{group: group, timeout: d.o.Timeout, force: d.o.Force}
	out, err := d.o.ASG.DescribeLifecycleHooks(ctx, &autoscaling.DescribeLifecycleHooksInput{AutoScalingGroupName: aws.String(group), LifecycleHookNames: []string{d.o.Hook}})
	if err != nil {
		d.o.Logf("group %s: reading its hook %s: %v; draining with a timeout of %s", group, d.o.Hook, err, h.timeout)
		return h
	}
	for _, hook := range out.LifecycleHooks {
		if md := aws.ToString(hook.NotificationMetadata); md != "" {
			r, err := nodeplan.ParseDrainRequest(md)
			if err != nil {
				d.o.Logf("group %s: hook %s: %v; draining with a timeout of %s", group, d.o.Hook, err, h.timeout)
				continue
			}
			h.timeout, h.force = r.Timeout, r.Force
		}
	}
	return h
}

// requests lists the cluster's instances kube-aws asked to drain, and
// those of them that ended (their drain is neither needed nor undone).
func (d *Drainer) requests(ctx context.Context) (map[string]nodeplan.DrainRequest, map[string]bool, error) {
	out, ended := map[string]nodeplan.DrainRequest{}, map[string]bool{}
	p := ec2.NewDescribeInstancesPaginator(d.o.EC2, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag-key"), Values: []string{nodeplan.DrainTag}},
		{Name: aws.String("tag:" + clusterTag(d.o.Cluster)), Values: []string{"owned"}},
	}})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("reading drain requests (instances tagged %s): %w", nodeplan.DrainTag, err)
		}
		for _, r := range page.Reservations {
			for _, i := range r.Instances {
				if i.State != nil && (i.State.Name == ec2types.InstanceStateNameShuttingDown || i.State.Name == ec2types.InstanceStateNameTerminated) {
					ended[aws.ToString(i.InstanceId)] = true
					continue
				}
				for _, t := range i.Tags {
					if aws.ToString(t.Key) != nodeplan.DrainTag {
						continue
					}
					req, err := nodeplan.ParseDrainRequest(aws.ToString(t.Value))
					if err != nil {
						d.o.Logf("instance %s: %v; ignored", aws.ToString(i.InstanceId), err)
						continue
					}
					out[aws.ToString(i.InstanceId)] = req
				}
			}
		}
	}
	return out, ended, nil
}

func clusterTag(cluster string) string { return names.KubernetesClusterTag(cluster) }

// start runs one drain; d.mu is held. hook, when set, is the lifecycle
// action to heartbeat and complete.
func (d *Drainer) start(parent context.Context, id, request string, timeout time.Duration, force bool, hook *hookWait) {
	ctx, cancel := context.WithCancel(parent)
	j := &job{request: request, cancel: cancel, done: make(chan struct{})}
	d.active[id] = j
	go func() {
		defer close(j.done)
		defer cancel()
		st := d.drain(ctx, id, j, timeout, force, hook)
		finishing := hook != nil && ctx.Err() == nil
		d.mu.Lock()
		if d.active[id] == j {
			delete(d.active, id)
		}
		if request != "" && st != nil && ctx.Err() == nil {
			d.answered[id] = j
		}
		// Marked before the call: Auto Scaling lists the instance as
		// waiting until the call is through, and a poll meanwhile must not
		// drain it a second time.
		if finishing {
			d.completed[id] = true
		}
		d.mu.Unlock()
		if finishing && !d.complete(parent, id, *hook, st) {
			d.mu.Lock()
			delete(d.completed, id) // the next poll tries again
			d.mu.Unlock()
		}
	}()
}

// drain drains the instance's node and reports as it goes; it returns the
// last status written (nil when ctx ended first).
func (d *Drainer) drain(ctx context.Context, id string, j *job, timeout time.Duration, force bool, hook *hookWait) *nodeplan.DrainStatus {
	st := &nodeplan.DrainStatus{InstanceID: id, Request: j.request, Phase: nodeplan.DrainDraining, Started: d.stamp()}
	put := func() {
		st.Time = d.stamp()
		write := func() error { return d.write(ctx, st) }
		var err error
		if st.Phase == nodeplan.DrainDraining {
			err = write() // progress: the next report follows
		} else {
			// A drain's last word: the roll waits on it, and a lost one
			// would leave "draining" for good once the instance goes.
			err = d.retry(ctx, d.o.Now().Add(finalStatusRetry), "writing the drain status of instance "+id, write)
		}
		if err != nil && ctx.Err() == nil {
			d.o.Logf("instance %s: %v", id, err)
		}
	}
	// The API server may be away for a moment (this controller's restarted
	// by its kubelet, say): what reads or cordons the node is tried again
	// until the drain's own timeout, as the eviction of a protected pod is,
	// rather than stopping the roll at the first refusal.
	deadline := d.o.Now().Add(timeout)
	var node *corev1.Node
	err := d.retry(ctx, deadline, "finding the node of instance "+id, func() (err error) {
		node, err = d.nodeOf(ctx, id)
		return err
	})
	if ctx.Err() != nil {
		return nil
	}
	if err != nil {
		st.Phase, st.Message = nodeplan.DrainFailed, err.Error()
		put()
		return st
	}
	if node == nil {
		st.Phase, st.Message = nodeplan.DrainDrained, "the instance has no Kubernetes node: nothing to drain"
		put()
		return st
	}
	st.Node = node.Name
	j.node = node.Name
	why := "kube-aws's roll asked"
	if j.request == "" {
		why = "its instance is terminating"
	}
	d.o.Logf("draining node %s of instance %s (%s; timeout %s)", node.Name, id, why, timeout)
	put()
	if hook != nil {
		go d.heartbeat(ctx, id, *hook)
	}
	h := &kubectldrain.Helper{
		Ctx: ctx, Client: d.o.Kube, Force: true, GracePeriodSeconds: -1,
		IgnoreAllDaemonSets: true, DeleteEmptyDirData: true, Timeout: timeout,
		EvictErrorRetryDelay: d.o.EvictRetry,
		Out:                  logWriter{d.o.Logf}, ErrOut: logWriter{d.o.Logf},
	}
	if !node.Spec.Unschedulable {
		err := d.retry(ctx, deadline, "cordoning node "+node.Name, func() error {
			return kubectldrain.RunCordonOrUncordon(h, node, true)
		})
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			st.Phase, st.Message = nodeplan.DrainFailed, fmt.Sprintf("cordoning node %s: %v", node.Name, err)
			put()
			return st
		}
		j.cordoned = true
	}
	// The node's timeout counts from the drain's start: the time spent
	// finding and cordoning the node is not given again.
	h.Timeout = max(deadline.Sub(d.o.Now()), time.Second)
	err = d.evict(ctx, h, st, put)
	// An eviction refused by a budget waits inside kubectl's drain until
	// its timeout; any other error (the API server away) is tried again
	// with the time left.
	for err != nil && !isTimeout(err) && ctx.Err() == nil && d.o.Now().Before(deadline) {
		d.o.Logf("node %s: %v (trying again until %s)", node.Name, err, deadline.UTC().Format(time.TimeOnly))
		if !d.pause(ctx) {
			break
		}
		h.Timeout = deadline.Sub(d.o.Now())
		err = d.evict(ctx, h, st, put)
	}
	if ctx.Err() != nil {
		return nil
	}
	switch {
	case err == nil:
		st.Phase, st.Pods, st.Blocker, st.Message = nodeplan.DrainDrained, nil, nil, ""
	case !isTimeout(err):
		st.Phase, st.Message = nodeplan.DrainFailed, err.Error()
	case force:
		// The budget's pods go anyway, deleted rather than evicted.
		d.o.Logf("node %s: %v; deleting the pods left (force)", node.Name, err)
		h.DisableEviction, h.Timeout = true, time.Minute
		if err := d.evict(ctx, h, st, put); err != nil {
			st.Phase, st.Message = nodeplan.DrainFailed, err.Error()
		} else {
			st.Phase, st.Pods, st.Blocker, st.Message = nodeplan.DrainDrained, nil, nil, "forced: pods a budget protected were deleted"
		}
	default:
		st.Phase = nodeplan.DrainBlocked
		st.Blocker = d.blocker(ctx, node.Name)
		st.Message = fmt.Sprintf("pods still on the node after %s", timeout)
	}
	d.o.Logf("node %s: %s %s", node.Name, st.Phase, st.Message)
	put()
	return st
}

// evict evicts the node's pods (kubectl's drain), reporting the pods left
// as they go.
func (d *Drainer) evict(ctx context.Context, h *kubectldrain.Helper, st *nodeplan.DrainStatus, put func()) error {
	list, errs := h.GetPodsForDeletion(st.Node)
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	pods := list.Pods()
	left := map[string]bool{}
	for _, p := range pods {
		left[p.Namespace+"/"+p.Name] = true
	}
	var mu sync.Mutex
	report := func() {
		names := make([]string, 0, len(left))
		for n := range left {
			names = append(names, n)
		}
		sort.Strings(names)
		if len(names) > 5 {
			names = append(names[:5], fmt.Sprintf("(%d more)", len(names)-5))
		}
		st.Pods = names
		put()
	}
	report()
	h.OnPodDeletionOrEvictionFinished = func(p *corev1.Pod, _ bool, err error) {
		if err != nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		delete(left, p.Namespace+"/"+p.Name)
		report()
	}
	return h.DeleteOrEvictPods(pods)
}

// blocker names a pod left on the node and the budget that protects it.
func (d *Drainer) blocker(ctx context.Context, node string) *nodeplan.DrainBlocker {
	pods, err := d.o.Kube.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return &nodeplan.DrainBlocker{Message: fmt.Sprintf("listing the node's pods: %v", err)}
	}
	var first *nodeplan.DrainBlocker
	for _, p := range pods.Items {
		if isDaemonOrMirror(p) || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		b := &nodeplan.DrainBlocker{Pod: p.Namespace + "/" + p.Name}
		if first == nil {
			first = b
		}
		pdbs, err := d.o.Kube.PolicyV1().PodDisruptionBudgets(p.Namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		for _, pdb := range pdbs.Items {
			sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
			if err != nil || sel.Empty() || !sel.Matches(labels.Set(p.Labels)) {
				continue
			}
			b.PDB = pdb.Namespace + "/" + pdb.Name
			b.Message = budgetSays(pdb)
			return b
		}
	}
	return first
}

func budgetSays(pdb policyv1.PodDisruptionBudget) string {
	s := pdb.Status
	return fmt.Sprintf("%d healthy of %d desired, %d disruptions allowed", s.CurrentHealthy, s.DesiredHealthy, s.DisruptionsAllowed)
}

func isDaemonOrMirror(p corev1.Pod) bool {
	if _, mirror := p.Annotations[corev1.MirrorPodAnnotationKey]; mirror {
		return true
	}
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" {
			return true
		}
	}
	return false
}

// finalStatusRetry is how long a drain's final status is tried again when
// the store refuses it.
const finalStatusRetry = 30 * time.Second

// retry calls fn until it succeeds, ctx ends or deadline passes, a
// pause apart, saying each failure; the last error is returned.
func (d *Drainer) retry(ctx context.Context, deadline time.Time, what string, fn func() error) error {
	for {
		err := fn()
		if err == nil || ctx.Err() != nil || !d.o.Now().Before(deadline) {
			return err
		}
		d.o.Logf("%s: %v (trying again until %s)", what, err, deadline.UTC().Format(time.TimeOnly))
		if !d.pause(ctx) {
			return err
		}
	}
}

// pause waits the eviction retry's pause; false when ctx ended.
func (d *Drainer) pause(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(max(d.o.EvictRetry, 10*time.Millisecond)):
		return true
	}
}

// isTimeout reports kubectl's drain giving up at its timeout (pods a
// budget protects still there): the drain is blocked, not failed.
func isTimeout(err error) bool {
	return strings.Contains(err.Error(), "global timeout reached")
}

// nodeOf finds the instance's node by its provider id
// (aws:///<zone>/<instance-id>); nil when it has none.
func (d *Drainer) nodeOf(ctx context.Context, id string) (*corev1.Node, error) {
	nodes, err := d.o.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	return nodeOfInstance(nodes.Items, id), nil
}

// nodeOfInstance is the node among nodes whose provider id names the
// instance; nil when none does.
func nodeOfInstance(nodes []corev1.Node, id string) *corev1.Node {
	for i := range nodes {
		if strings.HasSuffix(nodes[i].Spec.ProviderID, "/"+id) {
			return &nodes[i]
		}
	}
	return nil
}

// heartbeat extends the lifecycle action while the drain runs.
func (d *Drainer) heartbeat(ctx context.Context, id string, h hookWait) {
	t := time.NewTicker(d.o.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		_, err := d.o.ASG.RecordLifecycleActionHeartbeat(ctx, &autoscaling.RecordLifecycleActionHeartbeatInput{
			AutoScalingGroupName: aws.String(h.group), LifecycleHookName: aws.String(d.o.Hook), InstanceId: aws.String(id)})
		if err != nil && ctx.Err() == nil {
			d.o.Logf("instance %s: heartbeat of its termination hook: %v", id, err)
		}
	}
}

// complete lets the instance go: its node is drained, or could not be in
// time (a hook only delays a termination). It reports whether Auto Scaling
// took the answer.
func (d *Drainer) complete(ctx context.Context, id string, h hookWait, st *nodeplan.DrainStatus) bool {
	if st != nil && st.Phase != nodeplan.DrainDrained {
		d.o.Logf("instance %s terminates with its node not drained (%s: %s)", id, st.Phase, st.Message)
	}
	_, err := d.o.ASG.CompleteLifecycleAction(ctx, &autoscaling.CompleteLifecycleActionInput{
		AutoScalingGroupName: aws.String(h.group), LifecycleHookName: aws.String(d.o.Hook),
		InstanceId: aws.String(id), LifecycleActionResult: aws.String("CONTINUE")})
	if err != nil {
		d.o.Logf("instance %s: completing its termination hook: %v", id, err)
		return false
	}
	return true
}

// withdrawn undoes a request's drain: the node is uncordoned if the
// drainer cordoned it, and the status says so.
func (d *Drainer) withdrawn(id string, j *job) {
	<-j.done
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st := &nodeplan.DrainStatus{InstanceID: id, Node: j.node, Request: j.request, Phase: nodeplan.DrainCanceled, Started: d.stamp()}
	if j.cordoned && j.node != "" {
		node, err := d.o.Kube.CoreV1().Nodes().Get(ctx, j.node, metav1.GetOptions{})
		if err == nil {
			h := &kubectldrain.Helper{Ctx: ctx, Client: d.o.Kube, Out: logWriter{d.o.Logf}, ErrOut: logWriter{d.o.Logf}}
			err = kubectldrain.RunCordonOrUncordon(h, node, false)
		}
		if err != nil && !apierrors.IsNotFound(err) {
			st.Message = fmt.Sprintf("uncordoning node %s: %v", j.node, err)
		} else {
			st.Message = "request withdrawn: node uncordoned"
		}
	}
	d.o.Logf("instance %s: drain request %s withdrawn; %s", id, j.request, st.Message)
	st.Time = d.stamp()
	if err := d.write(ctx, st); err != nil {
		d.o.Logf("instance %s: %v", id, err)
	}
}

// stopAll stops every drain (leadership lost, SIGTERM) and waits for them.
func (d *Drainer) stopAll() {
	d.mu.Lock()
	jobs := make([]*job, 0, len(d.active))
	for _, j := range d.active {
		j.cancel()
		jobs = append(jobs, j)
	}
	d.mu.Unlock()
	for _, j := range jobs {
		<-j.done
	}
}

func (d *Drainer) write(ctx context.Context, st *nodeplan.DrainStatus) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := d.o.Put(ctx, nodeplan.DrainStatusKey(st.InstanceID), b); err != nil {
		return fmt.Errorf("writing the drain status: %w", err)
	}
	return nil
}

func (d *Drainer) stamp() string { return d.o.Now().UTC().Format(time.RFC3339) }

// logWriter turns kubectl's drain output into log lines.
type logWriter struct{ logf func(string, ...any) }

func (w logWriter) Write(p []byte) (int, error) {
	for _, l := range bytes.Split(bytes.TrimRight(p, "\n"), []byte("\n")) {
		if len(bytes.TrimSpace(l)) > 0 {
			w.logf("%s", l)
		}
	}
	return len(p), nil
}

// Lease names the Lease in kube-system by which one controller's drainer
// leads; the others wait.
const Lease = "kube-aws-drainer"

// RunLeading runs the drainer while this machine (identity) holds the
// Lease, and waits to lead again when it loses it, until ctx ends.
func RunLeading(ctx context.Context, kube kubernetes.Interface, identity string, d *Drainer) error {
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Name: Lease, Namespace: metav1.NamespaceSystem},
		Client:     kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
	}
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, ReleaseOnCancel: true, Name: Lease,
			LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(ctx context.Context) {
					d.o.Logf("leading the drainers (%s)", identity)
					if err := d.Run(ctx); err != nil {
						d.o.Logf("%v", err)
					}
				},
				OnStoppedLeading: func() { d.o.Logf("no longer leading the drainers") },
			},
		})
		if err != nil {
			return err
		}
		le.Run(ctx)
	}
	return nil
}
