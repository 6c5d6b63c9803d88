// Package wait is the `wait` step: it waits for what the role is for (this
// machine's Node Ready, and on a controller its own API server answering
// /readyz and its pods of the DaemonSets bound to it; or its etcd member
// healthy in a whole cluster) and reports it with the time since the machine
// started, on the console and in the status object (phase ready, with what
// it found: the gates of kube-aws's roll), which is the figure the
// cluster's boot-time budget is measured by.
package wait

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kube-aws/kube-aws/core/names"
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

// backoff paces every wait of the step: short, for a wait is over as soon
// as its condition holds, and what the machine waits for (its peers, the
// API server, its network add-on) comes within seconds. At most a second
// apart: each ask is one small request, and a wait of 3 s between asks
// had the goal reported 1.5 s late on average.
var backoff = retry.Policy{Initial: 200 * time.Millisecond, Max: time.Second, Factor: 1.5}

// sayEvery is how often a long wait says what it still waits for.
const sayEvery = 30 * time.Second

func (*Step) Name() string { return nodeplan.StepWait }

func (*Step) Flags(*flag.FlagSet) {}

// goal is what the step waits for.
type goal struct {
	plan    nodeplan.GoalPlan
	timeout time.Duration
	// node is the Node's name; readyz the /readyz URLs (facts expanded);
	// etcd the member's client configuration.
	node   string
	readyz []string
	etcd   clientv3.Config
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
		until := "it is Ready"
		for i, u := range n.APIReadyz {
			v, err := e.Expand(fmt.Sprintf("node.apiReadyz[%d]", i), u)
			if err != nil {
				return nil, err
			}
			g.readyz = append(g.readyz, v)
		}
		if len(g.readyz) > 0 {
			until += " and " + strings.Join(g.readyz, " and ") + " answer ok"
		}
		if len(n.DaemonSets) > 0 {
			until += ", and its pods of " + daemonSetNames(n.DaemonSets) + " are of its release"
		}
		return step.Changes{{Action: "wait", Target: "node " + g.node, Data: g,
			Detail: fmt.Sprintf("until %s (asking with %s), up to %s; then report phase ready", until, n.Kubeconfig, g.timeout)}}, nil
	}
	if g.etcd, err = etcdclient.Config(e, g.plan.Etcd); err != nil {
		return nil, err
	}
	return step.Changes{{Action: "wait", Target: "etcd member " + strings.Join(g.etcd.Endpoints, ","), Data: g,
		Detail: fmt.Sprintf("until it answers a linearizable read and every member of its cluster answers, with a leader, up to %s; then report phase ready", g.timeout)}}, nil
}

// Apply waits and reports the machine ready.
func (s *Step) Apply(ctx context.Context, e *agent.Env, changes step.Changes) error {
	g := changes[0].Data.(*goal)
	ctx, cancel := context.WithTimeout(ctx, g.timeout)
	defer cancel()
	var what string
	var report nodeplan.GoalReport
	var err error
	if n := g.plan.Node; n != nil {
		what, err = s.nodeGoal(ctx, e, n, g)
		report.Node = g.node
		report.APIReady = err == nil && len(g.readyz) > 0
	} else {
		what, report.Etcd, err = etcdHealthy(ctx, e, g.etcd)
	}
	if err != nil {
		return err
	}
	e.Logf("%s, %.1f s after the machine started", what, e.Report.Seconds())
	e.Report.Ready(ctx, what, &report)
	return nil
}

// nodeGoal waits for the node's conditions side by side, not one after
// another: a controller's API server answers, and its pods of the
// DaemonSets bound to it exist, seconds before its node is Ready, and each
// of them asked only after Ready cost round trips to an API server busy
// with its cluster's start (the goal came a median 1.8 s, and up to 5 s,
// after the kubelet's Ready on controllers; 0.2 s on workers, which wait
// for Ready alone). The first condition that fails ends the others; at the
// deadline every one still unmet is named.
func (s *Step) nodeGoal(ctx context.Context, e *agent.Env, n *nodeplan.NodeGoal, g *goal) (string, error) {
	cs, err := s.connect(ctx, e, n.Kubeconfig, g.node)
	if err != nil {
		return "", err
	}
	what := []string{fmt.Sprintf("node %s is Ready", g.node)}
	checks := []func(context.Context) error{func(ctx context.Context) error { return nodeReady(ctx, cs, g.node) }}
	if len(g.readyz) > 0 {
		what = append(what, strings.Join(g.readyz, " and ")+" answer ok")
		checks = append(checks, func(ctx context.Context) error { return apiReady(ctx, e, n.Kubeconfig, g.readyz) })
	}
	if len(n.DaemonSets) > 0 {
		what = append(what, "its pods of "+daemonSetNames(n.DaemonSets)+" are of its release")
		checks = append(checks, func(ctx context.Context) error { return ownPods(ctx, e, cs, g.node, n.DaemonSets) })
	}
	return strings.Join(what, ", "), all(ctx, checks)
}

// all runs the checks at once and waits for every one. The first to fail
// cancels the rest, and only its error is returned, unless ctx itself
// ended: then each check's own error says what it still waited for.
func all(ctx context.Context, checks []func(context.Context) error) error {
	inner, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	errs := make([]error, len(checks))
	var wg sync.WaitGroup
	for i, check := range checks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = check(inner); errs[i] != nil {
				cancel(errs[i])
			}
		}()
	}
	wg.Wait()
	if ctx.Err() == nil {
		if cause := context.Cause(inner); cause != nil && !errors.Is(cause, context.Canceled) {
			return cause
		}
	}
	return errors.Join(errs...)
}

// apiReady waits until every URL answers /readyz with ok, asked with the
// kubeconfig's CA and credentials (a controller's own API server).
func apiReady(ctx context.Context, e *agent.Env, kubeconfig string, urls []string) error {
	cfg, err := kube.Config(e.Path(kubeconfig))
	if err != nil {
		return err
	}
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	left := slices.Clone(urls)
	said := time.Now()
	err = retry.Do(ctx, backoff, func(ctx context.Context) error {
		var errs []error
		var still []string
		for _, u := range left {
			if err := readyz(ctx, client, u); err != nil {
				errs = append(errs, err)
				still = append(still, u)
			}
		}
		left = still
		return errors.Join(errs...)
	}, func(_ int, err error, _ time.Duration) {
		if time.Since(said) >= sayEvery {
			said = time.Now()
			e.Logf("still waiting: %v", err)
		}
	})
	if err != nil {
		return fmt.Errorf("the API did not answer /readyz ok in time: %w", err)
	}
	return nil
}

// ownPods waits until this node's pod of each DaemonSet bound to its nodes
// comes from the release the machine's userdata names: the DaemonSet's pod
// template carries the release's digest, and so does each pod made from
// it. A pod of another release is deleted once the DaemonSet's template is
// of this node's (the DaemonSet made it from the release before, as the
// node registered, and was upgraded since): the DaemonSet makes it again.
func ownPods(ctx context.Context, e *agent.Env, cs kubernetes.Interface, node string, sets []nodeplan.NodeDaemonSet) error {
	said := time.Now()
	for _, d := range sets {
		id := d.Namespace + "/" + d.Name
		err := retry.Do(ctx, backoff, func(ctx context.Context) error {
			ds, err := cs.AppsV1().DaemonSets(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("DaemonSet %s is not installed yet", id)
			}
			if err != nil {
				return fmt.Errorf("DaemonSet %s: %w", id, err)
			}
			if got := ds.Spec.Template.Annotations[names.AnnotationReleaseDigest]; got != d.Digest {
				return fmt.Errorf("DaemonSet %s is of release %s, this node of release %s: waiting for its upgrade, which the addons step of a controller of this node's release makes",
					id, shortDigest(got), shortDigest(d.Digest))
			}
			pods, err := cs.CoreV1().Pods(d.Namespace).List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
			if err != nil {
				return fmt.Errorf("listing the pods of node %s: %w", node, err)
			}
			for i := range pods.Items {
				p := &pods.Items[i]
				if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != ds.UID || p.DeletionTimestamp != nil {
					continue
				}
				got := p.Annotations[names.AnnotationReleaseDigest]
				if got == d.Digest {
					return nil
				}
				uid := p.UID
				err := cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
				if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
					return fmt.Errorf("deleting pod %s/%s of DaemonSet %s, of release %s: %w", p.Namespace, p.Name, id, shortDigest(got), err)
				}
				e.Logf("deleted pod %s/%s of DaemonSet %s: the DaemonSet made it from release %s before its upgrade to this node's, %s; it makes it again",
					p.Namespace, p.Name, id, shortDigest(got), shortDigest(d.Digest))
			}
			return fmt.Errorf("DaemonSet %s has no pod of this node's release on it yet", id)
		}, func(_ int, err error, _ time.Duration) {
			if time.Since(said) >= sayEvery {
				said = time.Now()
				e.Logf("still waiting: %v", err)
			}
		})
		if err != nil {
			return fmt.Errorf("node %s: %w", node, err)
		}
	}
	return nil
}

func daemonSetNames(sets []nodeplan.NodeDaemonSet) string {
	var out []string
	for _, d := range sets {
		out = append(out, d.Namespace+"/"+d.Name)
	}
	return strings.Join(out, ", ")
}

// shortDigest is a digest as people read it: its first 12 digits, or
// "(none)" for a template or pod that carries none (made before kube-aws
// marked its releases).
func shortDigest(d string) string {
	if d == "" {
		return "(none)"
	}
	return d[:min(12, len(d))]
}

// readyz asks one /readyz URL.
func readyz(ctx context.Context, client *http.Client, u string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return retry.Permanent(fmt.Errorf("%s: %w", u, err))
	}
	res, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", u, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
	if res.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "ok" {
		return fmt.Errorf("%s answers %s: %s", u, res.Status, firstLines(string(body), 3))
	}
	return nil
}

// firstLines keeps a /readyz body short: its failing checks come first
// only when asked verbosely, so a few lines say enough.
func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = append(lines[:n], "...")
	}
	return strings.Join(lines, "; ")
}

// connect reaches the API server with the kubeconfig. A worker's
// kubeconfig names the client certificate its kubelet gets by TLS
// bootstrapping: until then the file (or its certificate) is missing, and
// that is the wait, not a failure.
func (s *Step) connect(ctx context.Context, e *agent.Env, kubeconfig, name string) (kubernetes.Interface, error) {
	var cs kubernetes.Interface
	if err := retry.Do(ctx, retry.Policy{Initial: 500 * time.Millisecond, Max: 3 * time.Second, Factor: 1.5}, func(context.Context) error {
		c, err := s.Connect(e.Path(kubeconfig))
		if err == nil {
			cs = c
		}
		return err
	}, nil); err != nil {
		return nil, fmt.Errorf("node %s: the kubelet's kubeconfig is not usable in time (a worker's kubelet writes its certificate once TLS bootstrapping is done): %w", name, err)
	}
	return cs, nil
}

// nodeReady waits, watching, until the node's Ready condition is True.
func nodeReady(ctx context.Context, cs kubernetes.Interface, name string) error {
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
			return fmt.Errorf("node %s did not become Ready in time: %s", name, last)
		}
		return fmt.Errorf("watching node %s: %w", name, err)
	}
	return nil
}

// etcdHealthy waits until the member answers a linearizable read, as
// `etcdctl endpoint health` asks, and its cluster is whole: every member
// (MemberList) answers a status request at its client URL without an
// alarm, and there is a leader. That is the gate of a member's
// replacement: the member is back, under its name and ID, and the cluster
// can lose another.
func etcdHealthy(ctx context.Context, e *agent.Env, cfg clientv3.Config) (string, *nodeplan.EtcdReport, error) {
	cli, err := clientv3.New(cfg)
	if err != nil {
		return "", nil, fmt.Errorf("etcd client for %v: %w", cfg.Endpoints, err)
	}
	defer cli.Close()
	said := time.Now()
	var report *nodeplan.EtcdReport
	var revision int64
	err = retry.Do(ctx, backoff, func(ctx context.Context) error {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if _, err := cli.Get(cctx, "health"); err != nil && !errors.Is(err, rpctypes.ErrPermissionDenied) {
			return fmt.Errorf("etcd member %v is not healthy: %w", cfg.Endpoints, err)
		}
		own, err := cli.Status(cctx, cfg.Endpoints[0])
		if err != nil {
			return fmt.Errorf("etcd member %s: %w", cfg.Endpoints[0], err)
		}
		r, err := etcdCluster(cctx, cli, own)
		if err != nil {
			return err
		}
		report, revision = r, own.Header.Revision
		if !r.Whole() {
			return fmt.Errorf("etcd member %s (%s): %d of %d members healthy, leader %q", r.Name, r.ID, r.Healthy, r.Members, r.Leader)
		}
		return nil
	}, func(_ int, err error, _ time.Duration) {
		if time.Since(said) >= sayEvery {
			said = time.Now()
			e.Logf("still waiting: %v", err)
		}
	})
	if err != nil {
		return "", report, err
	}
	return fmt.Sprintf("etcd member %s (%s, %s) is healthy, leader %s, %d of %d members healthy, revision %d",
		report.ID, report.Name, cfg.Endpoints[0], report.Leader, report.Healthy, report.Members, revision), report, nil
}

// etcdCluster is the member's view of its cluster: its name and ID, the
// leader, and how many members answer a status request at their client
// URLs (all at once: a member down costs one timeout, not one each).
func etcdCluster(ctx context.Context, cli *clientv3.Client, own *clientv3.StatusResponse) (*nodeplan.EtcdReport, error) {
	list, err := cli.MemberList(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing the etcd members: %w", err)
	}
	r := &nodeplan.EtcdReport{ID: memberID(own.Header.MemberId), Members: len(list.Members)}
	if own.Leader != 0 {
		r.Leader = memberID(own.Leader)
	}
	var healthy atomic.Int32
	var wg sync.WaitGroup
	for _, m := range list.Members {
		if m.ID == own.Header.MemberId {
			r.Name = m.Name
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if memberAnswers(ctx, cli, m.ClientURLs) {
				healthy.Add(1)
			}
		}()
	}
	wg.Wait()
	r.Healthy = int(healthy.Load())
	return r, nil
}

// memberAnswers says whether a member answers a status request, without an
// alarm, at one of its client URLs; a member added but not started yet has
// none.
func memberAnswers(ctx context.Context, cli *clientv3.Client, urls []string) bool {
	for _, u := range urls {
		s, err := cli.Status(ctx, u)
		if err == nil && len(s.Errors) == 0 {
			return true
		}
	}
	return false
}

// memberID is how etcd (and etcdctl) write a member ID: hexadecimal.
func memberID(id uint64) string { return strconv.FormatUint(id, 16) }
