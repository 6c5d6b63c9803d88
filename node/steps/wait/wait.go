// Package wait is the `wait` step: it waits for what the role is for (this
// machine's Node Ready, or its etcd member healthy) and reports it with the
// time since the machine started, on the console and in the status object
// (phase ready), which is the figure the cluster's boot-time budget is
// measured by.
package wait

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/etcdclient"
	"github.com/kube-aws/kube-aws/node/kube"
	"github.com/kube-aws/kube-aws/node/retry"
	"github.com/kube-aws/kube-aws/node/step"
)

// DefaultTimeout bounds the wait when the plan gives none.
const DefaultTimeout = 10 * time.Minute

// Step is the step.
type Step struct {
	// Connect reaches the API server with a kubeconfig.
	Connect func(kubeconfig string) (kubernetes.Interface, error)
}

// New is the step as kube-aws-node runs it.
func New() *Step { return &Step{Connect: kube.Clientset} }

func (*Step) Name() string { return nodeplan.StepWait }

func (*Step) Flags(*flag.FlagSet) {}

// goal is what the step waits for.
type goal struct {
	plan    nodeplan.GoalPlan
	timeout time.Duration
	// node is the Node's name; etcd the member's client configuration.
	node string
	etcd clientv3.Config
}

// Check reads the goal plan, which the role must have, and says what the
// step waits for: there is nothing else to check, and the wait (and its
// report) is the change.
func (*Step) Check(_ context.Context, e *agent.Env) (step.Changes, error) {
	g := &goal{}
	found, err := e.Plan(nodeplan.GoalPath, &g.plan)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, agent.BadInput(fmt.Errorf("no goal plan (%s): the role's userdata must say what to wait for", nodeplan.GoalPath))
	}
	g.timeout = nodeplan.DurationOr(g.plan.Timeout, DefaultTimeout)
	if n := g.plan.Node; n != nil {
		name := n.NodeName
		if name == "" {
			name = "{" + nodeplan.FactHostname + "}"
		}
		if g.node, err = e.Expand("node.nodeName", name); err != nil {
			return nil, err
		}
		return step.Changes{{Action: "wait", Target: "node " + g.node, Data: g,
			Detail: fmt.Sprintf("until it is Ready (asking with %s), up to %s; then report phase ready", n.Kubeconfig, g.timeout)}}, nil
	}
	if g.etcd, err = etcdclient.Config(e, g.plan.Etcd); err != nil {
		return nil, err
	}
	return step.Changes{{Action: "wait", Target: "etcd member " + strings.Join(g.etcd.Endpoints, ","), Data: g,
		Detail: fmt.Sprintf("until it answers a linearizable read, up to %s; then report phase ready", g.timeout)}}, nil
}

// Apply waits and reports the machine ready.
func (s *Step) Apply(ctx context.Context, e *agent.Env, changes step.Changes) error {
	g := changes[0].Data.(*goal)
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	var what string
	var err error
	if g.plan.Node != nil {
		what, err = s.nodeReady(ctx, e, g.plan.Node.Kubeconfig, g.node)
	} else {
		what, err = etcdHealthy(ctx, e, g.etcd)
	}
	if err != nil {
		return err
	}
	e.Logf("%s, %.1f s after the machine started", what, e.Report.Seconds())
	e.Report.Report(ctx, nodeplan.PhaseReady, what, nil)
	return nil
}

// nodeReady watches this machine's Node until its Ready condition is True.
func (s *Step) nodeReady(ctx context.Context, e *agent.Env, kubeconfig, name string) (string, error) {
	// A worker's kubeconfig names the client certificate its kubelet gets
	// by TLS bootstrapping: until then the file (or its certificate) is
	// missing, and that is the wait, not a failure.
	var cs kubernetes.Interface
	if err := retry.Do(ctx, retry.Policy{Initial: 500 * time.Millisecond, Max: 3 * time.Second, Factor: 1.5}, func(context.Context) error {
		c, err := s.Connect(e.Path(kubeconfig))
		if err == nil {
			cs = c
		}
		return err
	}, nil); err != nil {
		return "", fmt.Errorf("node %s: the kubelet's kubeconfig is not usable in time (a worker's kubelet writes its certificate once TLS bootstrapping is done): %w", name, err)
	}
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListFunc: func(opts metav1.ListOptions) (runtime.Object, error) {
			opts.FieldSelector = sel
			return cs.CoreV1().Nodes().List(ctx, opts)
		},
		WatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = sel
			return cs.CoreV1().Nodes().Watch(ctx, opts)
		},
	}
	last := "the node has not registered"
	// Told which client it wraps, the reflector knows whether the client
	// speaks watch-list (a fake one in tests does not).
	_, err := watchtools.UntilWithSync(ctx, cache.ToListWatcherWithWatchListSemantics(lw, cs), &corev1.Node{}, nil, func(ev watch.Event) (bool, error) {
		n, ok := ev.Object.(*corev1.Node)
		if !ok || n.Name != name {
			return false, nil
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				if c.Status == corev1.ConditionTrue {
					return true, nil
				}
				last = fmt.Sprintf("Ready is %s: %s %s", c.Status, c.Reason, c.Message)
				return false, nil
			}
		}
		last = "the node has no Ready condition yet"
		return false, nil
	})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, watchtools.ErrWatchClosed) || ctx.Err() != nil {
			return "", fmt.Errorf("node %s did not become Ready in time: %s", name, last)
		}
		return "", fmt.Errorf("watching node %s: %w", name, err)
	}
	return fmt.Sprintf("node %s is Ready", name), nil
}

// etcdHealthy waits until the member answers a linearizable read, as
// `etcdctl endpoint health` asks.
func etcdHealthy(ctx context.Context, e *agent.Env, cfg clientv3.Config) (string, error) {
	cli, err := clientv3.New(cfg)
	if err != nil {
		return "", fmt.Errorf("etcd client for %v: %w", cfg.Endpoints, err)
	}
	defer cli.Close()
	said := time.Now()
	var status *clientv3.StatusResponse
	err = retry.Do(ctx, retry.Policy{Initial: 200 * time.Millisecond, Max: 3 * time.Second, Factor: 1.5}, func(ctx context.Context) error {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, err := cli.Get(cctx, "health"); err != nil && !errors.Is(err, rpctypes.ErrPermissionDenied) {
			return fmt.Errorf("etcd member %v is not healthy: %w", cfg.Endpoints, err)
		}
		s, err := cli.Status(cctx, cfg.Endpoints[0])
		if err != nil {
			return fmt.Errorf("etcd member %s: %w", cfg.Endpoints[0], err)
		}
		status = s
		return nil
	}, func(_ int, err error, _ time.Duration) {
		if time.Since(said) >= 30*time.Second {
			said = time.Now()
			e.Logf("still waiting: %v", err)
		}
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("etcd member %x (%s) is healthy, leader %x, revision %d", status.Header.MemberId, cfg.Endpoints[0], status.Leader, status.Header.Revision), nil
}
