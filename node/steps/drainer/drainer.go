// Package drainer is the `drainer` step: on every controller (a systemd
// unit), until stopped, the drainer of package node/drain. One controller
// at a time drains, the one whose instance holds the Lease
// kube-system/kube-aws-drainer; it drains the node of every instance of the
// cluster's Auto Scaling groups that waits on the termination hook (then
// completes the lifecycle action) and of every instance kube-aws's roll
// tagged with a drain request (then reports, and never terminates), and
// writes each drain's progress under the cluster's prefix, drains/, where
// kube-aws reads it.
package drainer

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/awsenv"
	"github.com/kube-aws/kube-aws/node/drain"
	"github.com/kube-aws/kube-aws/node/kube"
	"github.com/kube-aws/kube-aws/node/step"
)

// DefaultTimeout bounds a drain the termination hook started when the plan
// gives no timeout: cluster.yaml's drain.timeout default.
const DefaultTimeout = 5 * time.Minute

// Step is the step.
type Step struct {
	// Connect reaches the API server with a kubeconfig.
	Connect func(kubeconfig string) (kubernetes.Interface, error)
	// Lead runs the drainer while this machine holds the Lease, until ctx
	// ends (drain.RunLeading).
	Lead func(ctx context.Context, kube kubernetes.Interface, identity string, d *drain.Drainer) error
	// Poll is how often the groups and the requests are read.
	Poll time.Duration
}

// New is the step as kube-aws-node runs it.
func New() *Step {
	return &Step{Connect: kube.Clientset, Lead: drain.RunLeading, Poll: 2 * time.Second}
}

func (*Step) Name() string { return nodeplan.StepDrainer }

func (s *Step) Flags(fs *flag.FlagSet) {
	fs.DurationVar(&s.Poll, "poll", s.Poll, "how often to read the cluster's Auto Scaling groups and the drain requests (free API calls)")
}

// run is what Apply runs: the drainer and what it leads with.
type run struct {
	kube     kubernetes.Interface
	drainer  *drain.Drainer
	identity string
}

// Check reads the drainer plan, which the role must have, and lists the
// drains the drainer would start now, as it will: its run, until stopped,
// is the change, and those drains are the first it would do (if it leads).
// It reads Auto Scaling, EC2 and the nodes, and changes nothing.
func (s *Step) Check(ctx context.Context, e *agent.Env) (step.Changes, error) {
	var plan nodeplan.DrainerPlan
	found, err := e.Plan(nodeplan.DrainerPath, &plan)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, agent.BadInput(fmt.Errorf("no drainer plan (%s): it names the kubeconfig to drain with and the termination hook to answer", nodeplan.DrainerPath))
	}
	if s.Poll <= 0 {
		return nil, agent.BadInput(fmt.Errorf("--poll %s: want a positive duration such as 2s", s.Poll))
	}
	cs, err := s.Connect(e.Path(plan.Kubeconfig))
	if err != nil {
		return nil, err
	}
	identity := e.Facts[nodeplan.FactInstanceID]
	timeout := nodeplan.DurationOr(plan.Timeout, DefaultTimeout)
	d := drain.New(drain.Options{
		Cluster: e.Settings.Cluster, Hook: plan.Hook, Kube: cs,
		ASG: awsenv.NewAutoScaling(e.AWS), EC2: awsenv.EC2DescribeInstances(ec2.NewFromConfig(e.AWS).DescribeInstances),
		Put: func(ctx context.Context, rel string, body []byte) error {
			return e.Store.Put(ctx, e.Settings.Key(rel), body, "application/json")
		},
		Timeout: timeout, Force: plan.Force, Poll: s.Poll, Logf: e.Logf,
	})
	changes := step.Changes{{Action: "run", Target: "the drainer", Data: &run{kube: cs, drainer: d, identity: identity},
		Detail: fmt.Sprintf("until stopped, with %s, while this instance (%s) holds the Lease %s/%s: drain the node of each instance of cluster %s's groups "+
			"held by termination hook %s (timeout %s%s, then complete its lifecycle action) and of each instance tagged %s; "+
			"report each drain to s3://%s/%s",
			plan.Kubeconfig, identity, metav1.NamespaceSystem, drain.Lease, e.Settings.Cluster, plan.Hook, timeout, forced(plan.Force),
			nodeplan.DrainTag, e.Settings.Bucket, e.Settings.Key(nodeplan.DrainStatusPrefix)+"/")}}
	pending, err := d.Pending(ctx)
	if err != nil {
		// AWS may not answer yet: the drainer tries again every poll.
		e.Logf("the drains waiting now are unknown: %v", err)
		return changes, nil
	}
	for _, w := range pending {
		changes = append(changes, describe(w))
	}
	return changes, nil
}

// describe says what the drainer would do for one instance.
func describe(w drain.Work) step.Change {
	target := "instance " + w.Instance
	switch {
	case w.NodeErr != nil:
		target += " (node unknown: " + w.NodeErr.Error() + ")"
	case w.Node == "":
		target += " (no node: nothing to evict)"
	default:
		target += " (node " + w.Node + ")"
	}
	var detail string
	if r := w.Request; r != nil {
		detail = fmt.Sprintf("kube-aws asks (request %s): cordon, evict within %s%s, report; never terminate", r.ID, w.Timeout, forced(w.Force))
		if w.Group != "" {
			detail += fmt.Sprintf("; then complete the lifecycle action of group %s's termination hook", w.Group)
		}
	} else {
		detail = fmt.Sprintf("it waits on the termination hook of group %s: cordon, evict within %s%s, report, then complete the lifecycle action (CONTINUE)", w.Group, w.Timeout, forced(w.Force))
	}
	return step.Change{Action: "drain", Target: target, Detail: detail}
}

func forced(force bool) string {
	if force {
		return ", then delete the pods a budget still protects"
	}
	return ""
}

// Apply drains until ctx ends (SIGTERM from systemd), which is no error:
// the drains in flight stop and the Lease is released for another
// controller.
func (s *Step) Apply(ctx context.Context, e *agent.Env, changes step.Changes) error {
	r := changes[0].Data.(*run)
	return s.Lead(ctx, r.kube, r.identity, r.drainer)
}
