package drainer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/drain"
	"github.com/kube-aws/kube-aws/node/step"
	"github.com/kube-aws/kube-aws/test/agenttest"
)

var motoURL string

func TestMain(m *testing.M) { agenttest.MotoMain(m, &motoURL) }

var seq atomic.Int64

// machine is a controller of a cluster of the test's own: moto is shared
// by the package's tests, and a drainer sees every instance of its
// cluster.
func machine(t *testing.T) (*agent.Env, *agenttest.Output) {
	t.Helper()
	agenttest.UseMoto(t, motoURL)
	agenttest.ServeIMDS(t, agenttest.DefaultInstance)
	s := agenttest.Settings(t, "controller")
	s.Cluster = fmt.Sprintf("demo%d", seq.Add(1))
	agenttest.SetSettings(t, s)
	return agenttest.Env(t, "drainer", t.TempDir())
}

// group makes an Auto Scaling group of n instances of cluster demo in moto,
// with the drain hook, and returns its name and instances, sorted.
func group(t *testing.T, e *agent.Env, n int32) (string, []string) {
	t.Helper()
	ctx := t.Context()
	ec := ec2.NewFromConfig(e.AWS)
	as := autoscaling.NewFromConfig(e.AWS)
	name := fmt.Sprintf("%s-drainer-%d", e.Settings.Cluster, os.Getpid())
	imgs, err := ec.DescribeImages(ctx, &ec2.DescribeImagesInput{})
	if err != nil || len(imgs.Images) == 0 {
		t.Fatalf("images: %v", err)
	}
	if _, err := ec.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{ImageId: imgs.Images[0].ImageId, InstanceType: ec2types.InstanceTypeT3Small}}); err != nil {
		t.Fatal(err)
	}
	if _, err := as.CreateAutoScalingGroup(ctx, &autoscaling.CreateAutoScalingGroupInput{
		AutoScalingGroupName: aws.String(name), MinSize: aws.Int32(0), MaxSize: aws.Int32(n + 1), DesiredCapacity: aws.Int32(n),
		LaunchTemplate:    &astypes.LaunchTemplateSpecification{LaunchTemplateName: aws.String(name), Version: aws.String("$Latest")},
		AvailabilityZones: []string{agenttest.DefaultInstance.AvailabilityZone},
		Tags: []astypes.Tag{{Key: aws.String(names.KubernetesClusterTag(e.Settings.Cluster)), Value: aws.String("owned"), PropagateAtLaunch: aws.Bool(true),
			ResourceId: aws.String(name), ResourceType: aws.String("auto-scaling-group")}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := as.PutLifecycleHook(ctx, &autoscaling.PutLifecycleHookInput{AutoScalingGroupName: aws.String(name),
		LifecycleHookName: aws.String(names.DrainLifecycleHook), LifecycleTransition: aws.String("autoscaling:EC2_INSTANCE_TERMINATING"),
		HeartbeatTimeout: aws.Int32(600), DefaultResult: aws.String("CONTINUE")}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, i := range members(t, e, name) {
		ids = append(ids, i.id)
	}
	slices.Sort(ids)
	return name, ids
}

type member struct{ id, state string }

func members(t *testing.T, e *agent.Env, name string) []member {
	t.Helper()
	out, err := autoscaling.NewFromConfig(e.AWS).DescribeAutoScalingGroups(t.Context(), &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{name}})
	if err != nil || len(out.AutoScalingGroups) != 1 {
		t.Fatalf("group %s: %v", name, err)
	}
	var ms []member
	for _, i := range out.AutoScalingGroups[0].Instances {
		ms = append(ms, member{aws.ToString(i.InstanceId), string(i.LifecycleState)})
	}
	return ms
}

func stateOf(t *testing.T, e *agent.Env, name, id string) string {
	for _, m := range members(t, e, name) {
		if m.id == id {
			return m.state
		}
	}
	return "gone"
}

// terminate ends an instance as a scale-in or kube-aws's roll does:
// through Auto Scaling, which holds it on the hook.
func terminate(t *testing.T, e *agent.Env, id string) {
	t.Helper()
	if _, err := autoscaling.NewFromConfig(e.AWS).TerminateInstanceInAutoScalingGroup(t.Context(), &autoscaling.TerminateInstanceInAutoScalingGroupInput{
		InstanceId: aws.String(id), ShouldDecrementDesiredCapacity: aws.Bool(false)}); err != nil {
		t.Fatal(err)
	}
}

// request tags an instance with kube-aws's drain request.
func request(t *testing.T, e *agent.Env, id string, r nodeplan.DrainRequest) {
	t.Helper()
	if _, err := ec2.NewFromConfig(e.AWS).CreateTags(t.Context(), &ec2.CreateTagsInput{Resources: []string{id},
		Tags: []ec2types.Tag{{Key: aws.String(nodeplan.DrainTag), Value: aws.String(r.String())}}}); err != nil {
		t.Fatal(err)
	}
}

// apiServer is an API server with a node per instance, each running a web pod
// that evictions delete.
func apiServer(t *testing.T, ids ...string) *fake.Clientset {
	var objs []runtime.Object
	for _, id := range ids {
		objs = append(objs,
			&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + id}, Spec: corev1.NodeSpec{ProviderID: "aws:///us-east-1a/" + id}},
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-" + id, Namespace: "default",
				OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web", APIVersion: "apps/v1", Controller: aws.Bool(true)}}},
				Spec: corev1.PodSpec{NodeName: "node-" + id}, Status: corev1.PodStatus{Phase: corev1.PodRunning}})
	}
	cs := fake.NewClientset(objs...)
	cs.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "pods/eviction", Kind: "Eviction", Group: "policy", Version: "v1"},
	}}}
	cs.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "eviction" {
			return false, nil, nil
		}
		ev := a.(k8stesting.CreateAction).GetObject().(*policyv1.Eviction)
		return true, nil, cs.Tracker().Delete(schema.GroupVersionResource{Version: "v1", Resource: "pods"}, ev.Namespace, ev.Name)
	})
	return cs
}

func cordoned(t *testing.T, cs kubernetes.Interface, id string) bool {
	n, err := cs.CoreV1().Nodes().Get(context.Background(), "node-"+id, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n.Spec.Unschedulable
}

// drainStatus reads an instance's drain status where the step writes it:
// under the cluster's prefix.
func drainStatus(t *testing.T, e *agent.Env, id string) (nodeplan.DrainStatus, bool) {
	var st nodeplan.DrainStatus
	out, err := e.Store.S3.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(e.Settings.Bucket),
		Key: aws.String("clusters/demo/drains/" + id + ".json")})
	if err != nil {
		return st, false
	}
	defer out.Body.Close()
	return st, json.NewDecoder(out.Body).Decode(&st) == nil
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func writePlan(t *testing.T, e *agent.Env) {
	agenttest.WritePlan(t, e, nodeplan.DrainerPath, &nodeplan.DrainerPlan{Kubeconfig: names.KubeconfigAdmin, Hook: names.DrainLifecycleHook, Timeout: "1m"})
}

// The step against moto's Auto Scaling and EC2 (with the termination hook
// kube-aws's moto plays) and a fake API server: it leads as this instance,
// drains the node of an instance Auto Scaling terminates and lets the
// instance go, drains the node kube-aws asks for and leaves its instance
// running, and writes both drains under the cluster's prefix.
func TestDrainer(t *testing.T) {
	e, out := machine(t)
	writePlan(t, e)
	name, ids := group(t, e, 2)
	leaving, asked := ids[0], ids[1]
	cs := apiServer(t, ids...)
	var connected string
	s := &Step{Connect: func(k string) (kubernetes.Interface, error) { connected = k; return cs, nil }, Lead: drain.RunLeading, Poll: 50 * time.Millisecond}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- step.Run(ctx, e, s) }()

	terminate(t, e, leaving)
	request(t, e, asked, nodeplan.DrainRequest{ID: "roll-1", Timeout: time.Minute})
	eventually(t, "the terminated instance to go", func() bool { return stateOf(t, e, name, leaving) == "gone" })
	eventually(t, "the requested drain", func() bool { st, ok := drainStatus(t, e, asked); return ok && st.Phase == nodeplan.DrainDrained })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("drainer: %v\n%s", err, out)
	}
	if connected != e.Path(names.KubeconfigAdmin) {
		t.Errorf("connected with %s", connected)
	}
	if st, ok := drainStatus(t, e, leaving); !ok || st.Phase != nodeplan.DrainDrained || st.Node != "node-"+leaving || st.Request != "" {
		t.Errorf("the terminated instance's drain: %+v", st)
	}
	if st, _ := drainStatus(t, e, asked); st.Request != "roll-1" || st.Node != "node-"+asked {
		t.Errorf("the requested drain: %+v", st)
	}
	if !cordoned(t, cs, leaving) || !cordoned(t, cs, asked) {
		t.Error("a drained node is schedulable")
	}
	if state := stateOf(t, e, name, asked); state != "InService" {
		t.Errorf("the drainer let the requested instance go: %s", state)
	}
	pods, _ := cs.CoreV1().Pods("default").List(t.Context(), metav1.ListOptions{})
	if len(pods.Items) != 0 {
		t.Errorf("pods left: %d", len(pods.Items))
	}
	// It led as this instance, and let go of the Lease when stopped.
	lease, err := cs.CoordinationV1().Leases(metav1.NamespaceSystem).Get(t.Context(), drain.Lease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "leading the drainers ("+agenttest.DefaultInstance.ID+")") || aws.ToString(lease.Spec.HolderIdentity) != "" {
		t.Errorf("lease holder %q; output:\n%s", aws.ToString(lease.Spec.HolderIdentity), out)
	}
}

// The dry run lists the drains the drainer would start now, and changes
// nothing: no cordon, no status, no lifecycle action, no file.
func TestDryRun(t *testing.T) {
	e, out := machine(t)
	writePlan(t, e)
	name, ids := group(t, e, 3)
	leaving, asked, other := ids[0], ids[1], ids[2]
	cs := apiServer(t, leaving, asked) // the third never registered
	terminate(t, e, leaving)
	request(t, e, asked, nodeplan.DrainRequest{ID: "roll-1", Timeout: 2 * time.Minute, Force: true})
	request(t, e, other, nodeplan.DrainRequest{ID: "roll-1", Timeout: time.Minute})
	d, _ := agenttest.DryEnv(t, e)
	got, err := agenttest.DryRun(t, d, &Step{Connect: func(string) (kubernetes.Interface, error) { return cs, nil },
		Lead: func(context.Context, kubernetes.Interface, string, *drain.Drainer) error {
			t.Error("the dry run drained")
			return nil
		}, Poll: time.Second})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := []string{
		"run the drainer: until stopped, with /etc/kubernetes/admin.conf, while this instance (i-0123456789abcdef0) holds the Lease kube-system/kube-aws-drainer: " +
			"drain the node of each instance of cluster " + e.Settings.Cluster + "'s groups held by termination hook kube-aws-drain (timeout 1m0s, then complete its lifecycle action) " +
			"and of each instance tagged kube-aws:drain; report each drain to s3://" + e.Settings.Bucket + "/clusters/demo/drains/",
		"drain instance " + leaving + " (node node-" + leaving + "): it waits on the termination hook of group " + name +
			": cordon, evict within 1m0s, report, then complete the lifecycle action (CONTINUE)",
		"drain instance " + asked + " (node node-" + asked + "): kube-aws asks (request roll-1): cordon, evict within 2m0s, then delete the pods a budget still protects, report; never terminate",
		"drain instance " + other + " (no node: nothing to evict): kube-aws asks (request roll-1): cordon, evict within 1m0s, report; never terminate",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if cordoned(t, cs, leaving) || cordoned(t, cs, asked) || stateOf(t, e, name, leaving) != "Terminating:Wait" {
		t.Error("the dry run changed the cluster")
	}
	for _, id := range ids {
		if _, ok := drainStatus(t, e, id); ok {
			t.Errorf("the dry run wrote a drain status for %s", id)
		}
	}
}

func TestBadInput(t *testing.T) {
	tests := []struct {
		name string
		plan string // "" for none
		poll time.Duration
		err  string
	}{
		{"no plan", "", time.Second, "no drainer plan (/etc/kube-aws/drainer.json)"},
		{"unknown field", `{"kubeconfig": "/k", "hook": "h", "timeuot": "5m"}`, time.Second, `unknown field "timeuot"`},
		{"invalid", `{"kubeconfig": "k", "hook": "h"}`, time.Second, `kubeconfig: "k" is not absolute`},
		{"poll", `{"kubeconfig": "/k", "hook": "h"}`, 0, "--poll 0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := machine(t)
			if tt.plan != "" {
				os.MkdirAll(e.Path(nodeplan.Dir), 0o755)
				os.WriteFile(e.Path(nodeplan.DrainerPath), []byte(tt.plan), 0o644)
			}
			s := &Step{Connect: func(string) (kubernetes.Interface, error) { return nil, errors.New("not asked") }, Poll: tt.poll}
			agenttest.ExpectDryRun(t, e, s, agenttest.Want{Err: tt.err, Code: agent.ExitBadInput})
		})
	}
}
