//go:build e2ecluster

package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-aws/kube-aws/core/nodeplan"
)

// The versions the day-2 cases upgrade between: the example boots at the
// previous minor and is upgraded to cluster.yaml.example's own.
const (
	previousVersion = "1.33.13"
	exampleVersion  = "1.34.4"
)

// day2 changes the running cluster the ways an operator does, each proven on
// the booted machines, under traffic: a Kubernetes upgrade, a plugin change
// on one pool, a replacement that fails, a budget that cannot be met, a
// scale-in. The web workload and its client run throughout.
func (e *example) day2(ctx context.Context, t *testing.T, archive string) {
	cs, _, err := e.kube(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// New machines get the workload's image as soon as their containerd
	// answers (no registry is reachable), before their kubelet registers.
	sctx, stopLoading := context.WithCancel(ctx)
	defer stopLoading()
	go e.keepSideLoading(sctx, archive)
	if err := startWeb(ctx, cs); err != nil {
		t.Fatal(err)
	}
	client := e.startTraffic(ctx, t, cs)
	defer client.stop()

	for _, c := range []struct {
		name string
		run  func(context.Context, *testing.T, *kubernetes.Clientset)
	}{
		{"upgrade under traffic", func(ctx context.Context, t *testing.T, cs *kubernetes.Clientset) {
			e.upgrade(ctx, t, cs, client)
		}},
		{"plugin change rolls one pool", e.pluginChange},
		{"failing replacement stops the roll", e.failingReplacement},
		{"budget that cannot be met", e.budgetNeverMet},
		{"scale-in drains", e.scaleIn},
	} {
		t.Run(c.name, func(t *testing.T) {
			cctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
			defer cancel()
			start := time.Now()
			defer func() { t.Logf("%s: %.1fs", c.name, time.Since(start).Seconds()) }()
			c.run(cctx, t, cs)
		})
	}
	sent, failed := client.counts()
	t.Logf("web client: %d requests through the workers during the day-2 cases, %d failed; health checks that kept a worker out of service: %s", sent, failed, client.checkSummary())
	if failed > 0 {
		t.Errorf("%d of %d requests to the web Service failed, by worker:\n%s", failed, sent, client.failureSummary())
	}
}

// keepSideLoading imports the probe image into every node machine once it
// answers, until ctx ends.
func (e *example) keepSideLoading(ctx context.Context, archive string) {
	done := map[string]bool{}
	for ctx.Err() == nil {
		ins, err := e.instances(ctx)
		if err == nil {
			for _, in := range ins {
				if strings.Contains(in.group, "-etcd") || done[in.id] {
					continue
				}
				if e.sideLoad(ctx, in.id, archive) == nil {
					done[in.id] = true
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// The web workload: three replicas of the probe in serve mode behind a
// NodePort Service, at most one of them disrupted at a time.
const (
	webName     = "web"
	webNodePort = 30080
)

func startWeb(ctx context.Context, cs *kubernetes.Clientset) error {
	labels := map[string]string{"app": webName}
	replicas := int32(3)
	grace := int64(15)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: webName, Namespace: "default"}, Spec: appsv1.DeploymentSpec{
		Replicas: &replicas,
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			// Spread over the workers, spot ones too.
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/lifecycle", Value: "spot", Effect: corev1.TaintEffectNoSchedule}},
			Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
				Weight: 100, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: "kubernetes.io/hostname", LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}}}}},
			Containers: []corev1.Container{{
				Name: "web", Image: probeImage, ImagePullPolicy: corev1.PullNever,
				Env:   []corev1.EnvVar{{Name: "PROBE_SERVE", Value: ":8080"}, {Name: "PROBE_LINGER", Value: "5s"}},
				Ports: []corev1.ContainerPort{{ContainerPort: 8080}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080)}},
					PeriodSeconds: 1, FailureThreshold: 1},
			}},
		}},
	}}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return err
	}
	min2 := intstr.FromInt32(2)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: webName, Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &min2, Selector: &metav1.LabelSelector{MatchLabels: labels}}}
	if _, err := cs.PolicyV1().PodDisruptionBudgets("default").Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		return err
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: webName, Namespace: "default"}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeNodePort, Selector: labels,
		Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), NodePort: webNodePort}},
	}}
	if _, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return err
	}
	return eventually(ctx, "the web Deployment available", func() error {
		got, err := cs.AppsV1().Deployments("default").Get(ctx, webName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Status.AvailableReplicas != replicas {
			return fmt.Errorf("%d of %d replicas available", got.Status.AvailableReplicas, replicas)
		}
		return nil
	})
}

// traffic is the client of the web Service: every 100 ms a request through
// each worker in service, as a load balancer with a health check sends. A
// worker is a candidate while it is Ready, not cordoned and its kube-proxy
// is Ready (a drained node is taken out of rotation at once, as the Service
// controller does with an excluded node); a candidate enters service after
// healthyThreshold passing checks of the Service's node port, healthInterval
// apart, as an AWS load balancer puts a new target in service (at least two
// checks, five seconds or more apart, there: this is stricter). A new node
// that is Ready before its pod network routes to the other nodes' pods
// fails those checks, as on AWS. Once in service a worker stays until it
// stops being a candidate: a failure then counts.
type traffic struct {
	e      *example
	cs     *kubernetes.Clientset
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	workers []string       // addresses in service
	passes  map[string]int // consecutive passing checks of candidates
	// checkFailures counts, per worker, the health checks that kept it
	// out of service.
	checkFailures map[string]int
	sent          int
	failed        int
	// captures counts the network captures started and capturesDone
	// those finished (awaitCaptures).
	captures     int
	capturesDone int
	failures     []string
	// byTarget sums the failures through each worker.
	byTarget map[string]*targetFailures
	// nodeReady is each node's readiness as last listed, and nodeChanges
	// every change of it (added, Ready, NotReady, gone), so that a failed
	// request can be read beside what the cluster did just before it.
	nodeReady   map[string]bool
	nodeChanges []nodeChange
}

// nodeChange is one change of a node's readiness seen by the web client.
type nodeChange struct {
	at   time.Time
	node string
	what string
}

// targetFailures are the failed requests through one worker.
type targetFailures struct {
	n           int
	first, last time.Time
	sample      string
	// capture is the worker's network just after its first failure
	// (captureNetState), when one was taken.
	capture string
}

func (e *example) startTraffic(ctx context.Context, t *testing.T, cs *kubernetes.Clientset) *traffic {
	ctx, cancel := context.WithCancel(ctx)
	c := &traffic{e: e, cs: cs, cancel: cancel, done: make(chan struct{}), byTarget: map[string]*targetFailures{}, passes: map[string]int{}, checkFailures: map[string]int{}, nodeReady: map[string]bool{}}
	go c.watchWorkers(ctx, cs)
	go c.run(ctx)
	wctx, wcancel := context.WithTimeout(ctx, 2*time.Minute)
	defer wcancel()
	if err := eventually(wctx, "web answering through a worker", func() error {
		if sent, _ := c.counts(); sent == 0 {
			return errors.New("no request sent yet")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return c
}

// How the client's health check puts a new worker in service.
const (
	healthyThreshold = 2
	healthInterval   = time.Second
)

func (c *traffic) watchWorkers(ctx context.Context, cs *kubernetes.Clientset) {
	hc := c.httpClient(2 * time.Second)
	lastCheck := time.Time{}
	for ctx.Err() == nil {
		if candidates, ready, err := servingWorkers(ctx, cs); err == nil {
			check := time.Since(lastCheck) >= healthInterval
			if check {
				lastCheck = time.Now()
			}
			c.mu.Lock()
			c.noteNodes(ready)
			var in []string
			for _, w := range candidates {
				if slices.Contains(c.workers, w) || c.passes[w] >= healthyThreshold {
					in = append(in, w)
					continue
				}
				if check {
					go c.healthCheck(ctx, hc, w)
				}
			}
			for w := range c.passes {
				if !slices.Contains(candidates, w) {
					delete(c.passes, w)
				}
			}
			c.workers = in
			c.mu.Unlock()
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// healthCheck is one check of a candidate worker: a pass counts towards
// its entering service, a failure starts the count again.
func (c *traffic) healthCheck(ctx context.Context, hc *http.Client, w string) {
	err := get(ctx, hc, fmt.Sprintf("http://%s:%d/", w, webNodePort))
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.passes[w] = 0
		c.checkFailures[w]++
		return
	}
	c.passes[w]++
}

// httpClient dials from the host side of the run's network, a new
// connection per request.
func (c *traffic) httpClient(timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return c.e.h.NS.DialContext(ctx, network, addr)
		}}}
}

// noteNodes records how the nodes' readiness changed since the last
// listing. c.mu is held.
func (c *traffic) noteNodes(ready map[string]bool) {
	now := time.Now()
	for n, r := range ready {
		was, known := c.nodeReady[n]
		switch {
		case !known:
			c.nodeChanges = append(c.nodeChanges, nodeChange{now, n, map[bool]string{true: "added, Ready", false: "added, not Ready"}[r]})
		case was != r:
			c.nodeChanges = append(c.nodeChanges, nodeChange{now, n, map[bool]string{true: "Ready", false: "not Ready"}[r]})
		}
	}
	for n := range c.nodeReady {
		if _, ok := ready[n]; !ok {
			c.nodeChanges = append(c.nodeChanges, nodeChange{now, n, "gone"})
		}
	}
	c.nodeReady = ready
}

// servingWorkers are the addresses of the workers a load balancer may
// send to, once their health checks pass: Ready, not cordoned, with a
// Ready kube-proxy. ready is every node's readiness, by name.
func servingWorkers(ctx context.Context, cs *kubernetes.Clientset) (addrs []string, ready map[string]bool, err error) {
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, err
	}
	proxies, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=kube-proxy"})
	if err != nil {
		return nil, nil, err
	}
	proxyReady := map[string]bool{}
	for _, p := range proxies.Items {
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue && p.DeletionTimestamp == nil {
				proxyReady[p.Spec.NodeName] = true
			}
		}
	}
	ready = map[string]bool{}
	for _, n := range nodes.Items {
		for _, cond := range n.Status.Conditions {
			ready[n.Name] = ready[n.Name] || cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue
		}
		if n.Labels["node.kube-aws.io/role"] == "controller" || n.Spec.Unschedulable || n.DeletionTimestamp != nil || !proxyReady[n.Name] || !ready[n.Name] {
			continue
		}
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				addrs = append(addrs, a.Address)
			}
		}
	}
	sort.Strings(addrs)
	return addrs, ready, nil
}

func (c *traffic) run(ctx context.Context) {
	defer close(c.done)
	hc := c.httpClient(3 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		c.mu.Lock()
		ws := append([]string(nil), c.workers...)
		c.mu.Unlock()
		for _, w := range ws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := get(ctx, hc, fmt.Sprintf("http://%s:%d/", w, webNodePort))
				if ctx.Err() != nil {
					return
				}
				c.mu.Lock()
				defer c.mu.Unlock()
				c.sent++
				if err != nil {
					c.failed++
					now := time.Now()
					if len(c.failures) < 20 {
						c.failures = append(c.failures, fmt.Sprintf("%s via %s: %v", now.Format("15:04:05.000"), w, err))
					}
					f := c.byTarget[w]
					if f == nil {
						f = &targetFailures{first: now, sample: err.Error()}
						c.byTarget[w] = f
						if c.captures < maxCaptures {
							c.captures++
							go c.captureNetState(context.WithoutCancel(ctx), w, f)
						}
					}
					f.n++
					f.last = now
				}
			}()
		}
	}
}

func get(ctx context.Context, hc *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

func (c *traffic) counts() (sent, failed int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sent, c.failed
}

func (c *traffic) firstFailures(n int) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.failures[:min(n, len(c.failures))])
}

// failureSummary says, per worker, how many requests through it failed,
// from when to when, and one error, then what the nodes did in the minute
// before each first failure.
func (c *traffic) failureSummary() string {
	c.awaitCaptures(30 * time.Second)
	c.mu.Lock()
	defer c.mu.Unlock()
	var lines []string
	for w, f := range c.byTarget {
		line := fmt.Sprintf("%s: %d failed %s to %s (%s)", w, f.n, f.first.Format("15:04:05.0"), f.last.Format("15:04:05.0"), f.sample)
		var changes []string
		for _, ch := range c.nodeChanges {
			if ago := f.first.Sub(ch.at); ago >= 0 && ago <= time.Minute {
				changes = append(changes, fmt.Sprintf("%s %s %s", ch.at.Format("15:04:05.0"), ch.node, ch.what))
			}
		}
		if len(changes) == 0 {
			changes = []string{"none"}
		}
		line += "; node changes in the minute before: " + strings.Join(changes, ", ")
		if f.capture != "" {
			line += "\n    " + strings.ReplaceAll(strings.TrimRight(f.capture, "\n"), "\n", "\n    ")
		}
		lines = append(lines, line)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// checkSummary says how many health checks failed per worker before it
// entered service.
func (c *traffic) checkSummary() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.checkFailures) == 0 {
		return "none"
	}
	var parts []string
	for w, n := range c.checkFailures {
		parts = append(parts, fmt.Sprintf("%s %d", w, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

func (c *traffic) stop() {
	c.cancel()
	<-c.done
	c.awaitCaptures(30 * time.Second)
}

// setClusterYAML replaces one line of the cluster folder's cluster.yaml
// (the first holding old) by new.
func (e *example) setClusterYAML(t *testing.T, old, new string) {
	t.Helper()
	path := filepath.Join(e.dir, "cluster.yaml")
	y, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(y, []byte(old)) {
		t.Fatalf("cluster.yaml has no %q", old)
	}
	if err := os.WriteFile(path, bytes.Replace(y, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}

// machineEvent is a line of up's roll, as --progress text prints it:
// "[deploy] 15:04:05 <stack> machine <instance> <phase>: <message>".
var machineEvent = regexp.MustCompile(`\[deploy\] (\d\d:\d\d:\d\d) (\S+)\s+machine (\S+) (\S+): (.*)`)

type rollEvent struct{ at, stack, instance, phase, message string }

func rollEvents(out []byte) []rollEvent {
	var evs []rollEvent
	for _, m := range machineEvent.FindAllSubmatch(out, -1) {
		evs = append(evs, rollEvent{string(m[1]), string(m[2]), string(m[3]), string(m[4]), string(m[5])})
	}
	return evs
}

// up runs kube-aws up with the roll's progress line by line.
func (e *example) up(ctx context.Context, t *testing.T) ([]byte, error) {
	t.Helper()
	t0 := time.Now()
	out, err := e.kubeAWS(ctx, "up", "--yes", "--progress", "text")
	t.Logf("kube-aws up took %.1fs", time.Since(t0).Seconds())
	return out, err
}

// upgrade: the cluster booted at the previous minor is upgraded to the
// example's version by kube-aws up, under the web client's traffic: every
// machine is replaced, etcd members first, then the controllers, then the
// pools; every node reports the new version; no request fails; /readyz
// through the load balancer never goes 5 s without an ok; a Secret written
// before reads back; the etcd members keep their ids and names.
func (e *example) upgrade(ctx context.Context, t *testing.T, cs *kubernetes.Clientset, client *traffic) {
	before, err := e.instances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	etcd := ids(e.live(ctx, t, "-etcd"))
	membersBefore, err := e.etcdMembers(ctx, etcd[0])
	if err != nil {
		t.Fatal(err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "e2e-upgrade"}, StringData: map[string]string{"k": "written before the upgrade"}}
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, rcfg, err := e.kube(ctx)
	if err != nil {
		t.Fatal(err)
	}
	probe, err := readyz(rcfg)
	if err != nil {
		t.Fatal(err)
	}
	gaps := watchReadyz(ctx, probe)
	sent0, failed0 := client.counts()

	// diff says what the up will replace, and why.
	e.setClusterYAML(t, `kubernetesVersion: "`+previousVersion+`"`, `kubernetesVersion: "`+exampleVersion+`"`)
	out, err := e.kubeAWS(ctx, "diff", "--exit-code")
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || !bytes.Contains(out, []byte("kubernetesVersion "+previousVersion+" -> "+exampleVersion)) {
		t.Errorf("kube-aws diff before the upgrade (%v) does not list the machines with the version change:\n%s", err, out)
	} else {
		t.Logf("kube-aws diff: %s", strings.Join(grepLines(out, "machine(s) would be replaced"), "; "))
	}

	out, err = e.up(ctx, t)
	longest, probes, failedProbes := gaps()
	if err != nil {
		t.Fatalf("kube-aws up to %s: %v\n%s", exampleVersion, err, out)
	}
	evs := rollEvents(out)
	e.reportRoll(t, evs)

	// Every machine replaced, in the order etcd, controllers, pools.
	after, err := e.instances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range before {
		if slices.Contains(ids(after), in.id) {
			t.Errorf("instance %s of %s was not replaced", in.id, in.group)
		}
	}
	if len(after) != len(before) {
		t.Errorf("%d instances after the upgrade, %d before", len(after), len(before))
	}
	rank := func(stack string) int {
		switch {
		case stack == "etcd":
			return 0
		case stack == "control-plane":
			return 1
		}
		return 2
	}
	last := -1
	for _, ev := range evs {
		if ev.phase != "terminating" && ev.phase != "draining" {
			continue
		}
		if r := rank(ev.stack); r < last {
			t.Errorf("%s's machine %s went (%s) after a later role's: the order is etcd, controllers, pools", ev.stack, ev.instance, ev.phase)
		} else {
			last = r
		}
	}
	// Every node at the new version, once the cloud controller manager
	// has removed the nodes of the instances that are gone.
	if err := eventually(ctx, "every node at v"+exampleVersion, func() error {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		var old []string
		for _, n := range nodes.Items {
			if v := n.Status.NodeInfo.KubeletVersion; v != "v"+exampleVersion {
				old = append(old, n.Name+" "+v)
			}
		}
		if len(old) > 0 || len(nodes.Items) != len(before)-len(etcd) {
			return fmt.Errorf("%d nodes, at other versions: %v", len(nodes.Items), old)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	// etcd: the same members, with their data.
	membersAfter, err := e.etcdMembers(ctx, ids(e.live(ctx, t, "-etcd"))[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(membersAfter) != len(membersBefore) {
		t.Errorf("etcd members %v after, %v before", membersAfter, membersBefore)
	}
	for i := range membersBefore {
		if i < len(membersAfter) && (membersAfter[i].ID != membersBefore[i].ID || membersAfter[i].Name != membersBefore[i].Name) {
			t.Errorf("etcd member %s (%x) is %s (%x) after the upgrade", membersBefore[i].Name, membersBefore[i].ID, membersAfter[i].Name, membersAfter[i].ID)
		}
	}
	got, err := cs.CoreV1().Secrets("default").Get(ctx, "e2e-upgrade", metav1.GetOptions{})
	if err != nil || string(got.Data["k"]) != "written before the upgrade" {
		t.Errorf("the Secret written before the upgrade: %v %v", got, err)
	}
	sent, failed := client.counts()
	t.Logf("upgrade %s -> %s: %d machines replaced; web client %d requests, %d failed; /readyz through the load balancer %d probes, %d failed, longest without an ok %.1fs",
		previousVersion, exampleVersion, len(before), sent-sent0, failed-failed0, probes, failedProbes, longest.Seconds())
	if failed > failed0 {
		t.Errorf("%d requests failed during the upgrade, by worker (since the web client began):\n%s", failed-failed0, client.failureSummary())
	}
	if longest > lbFailover {
		t.Errorf("/readyz through the load balancer went %.1fs without an ok during the upgrade, more than %s", longest.Seconds(), lbFailover)
	}
}

// watchReadyz probes /readyz every 250 ms until the returned function is
// called, which says the longest time without an ok and the counts.
func watchReadyz(ctx context.Context, probe func(context.Context) error) func() (time.Duration, int, int) {
	ctx, cancel := context.WithCancel(ctx)
	var mu sync.Mutex
	var longest time.Duration
	var n, failed int
	lastOK := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			pctx, pcancel := context.WithTimeout(ctx, 3*time.Second)
			err := probe(pctx)
			pcancel()
			mu.Lock()
			n++
			if err == nil {
				lastOK = time.Now()
			} else if ctx.Err() == nil {
				failed++
			}
			longest = max(longest, time.Since(lastOK))
			mu.Unlock()
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return func() (time.Duration, int, int) {
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		return longest, n, failed
	}
}

// reportRoll logs, per role, when the roll replaced each machine: from the
// first step about it to its replacement's ready (or its gone).
func (e *example) reportRoll(t *testing.T, evs []rollEvent) {
	t.Helper()
	if len(evs) == 0 {
		t.Error("up printed no roll events")
		return
	}
	first, lastAt := map[string]string{}, map[string]string{}
	for _, ev := range evs {
		if _, ok := first[ev.stack]; !ok {
			first[ev.stack] = ev.at
		}
		lastAt[ev.stack] = ev.at
	}
	var stacks []string
	for s := range first {
		stacks = append(stacks, s)
	}
	sort.Slice(stacks, func(i, j int) bool { return first[stacks[i]] < first[stacks[j]] })
	for _, s := range stacks {
		a, _ := time.Parse("15:04:05", first[s])
		b, _ := time.Parse("15:04:05", lastAt[s])
		gone := map[string]bool{}
		for _, ev := range evs {
			if ev.stack == s && ev.phase == "terminating" {
				gone[ev.instance] = true
			}
		}
		n := len(gone)
		t.Logf("roll of %s: %d machines replaced, %s to %s (%.0fs)%s", s, n, first[s], lastAt[s], b.Sub(a).Seconds(), phaseSpans(evs, s))
	}
}

// phaseSpans says, for one stack's roll, how long its new machines took
// from launch to ready and its old ones from the start of their drain to
// drained, each as the range over machines (the events have whole
// seconds).
func phaseSpans(evs []rollEvent, stack string) string {
	span := func(from, to string) []float64 {
		start := map[string]time.Time{}
		var d []float64
		for _, ev := range evs {
			at, err := time.Parse("15:04:05", ev.at)
			if ev.stack != stack || err != nil {
				continue
			}
			switch ev.phase {
			case from:
				if _, ok := start[ev.instance]; !ok {
					start[ev.instance] = at
				}
			case to:
				if s, ok := start[ev.instance]; ok {
					d = append(d, at.Sub(s).Seconds())
					delete(start, ev.instance)
				}
			}
		}
		sort.Float64s(d)
		return d
	}
	var parts []string
	for _, p := range []struct{ what, from, to string }{
		{"new machine launched to ready", "launching", "ready"},
		{"old machine's drain", "draining", "drained"},
	} {
		if d := span(p.from, p.to); len(d) > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f-%.0fs", p.what, d[0], d[len(d)-1]))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, ", ")
}

func grepLines(out []byte, s string) []string {
	var lines []string
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, s) {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	return lines
}

// poolUnit enables the pool-unit test plugin with a note for one pool.
func (e *example) poolUnit(ctx context.Context, t *testing.T, pool, note string) {
	t.Helper()
	bin := filepath.Join(e.dir, "plugins", "pool-unit", "pool-unit")
	if _, err := os.Stat(bin); err != nil {
		build := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", bin, "./test/e2e/cluster/testdata/pool-unit")
		build.Dir, build.Env = e.repo, append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building the pool-unit plugin: %v\n%s", err, out)
		}
		e.setClusterYAML(t, "\nplugins:\n", "\nplugins:\n  pool-unit:\n    enabled: true\n    values:\n      pool: "+pool+"\n      note: "+note+"\n")
		return
	}
	path := filepath.Join(e.dir, "cluster.yaml")
	y, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^(  pool-unit:\n    enabled: true\n    values:\n      pool: )\S+\n      note: \S+\n`)
	if !re.Match(y) {
		t.Fatal("cluster.yaml lost the pool-unit plugin's settings")
	}
	y = re.ReplaceAll(y, []byte("${1}"+pool+"\n      note: "+note+"\n"))
	if err := os.WriteFile(path, y, 0o644); err != nil {
		t.Fatal(err)
	}
}

// drainStatus reads the drainer's report on an instance.
func (e *example) drainStatus(ctx context.Context, id string) (*nodeplan.DrainStatus, error) {
	out, err := e.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(exampleBucket), Key: aws.String(examplePrefix + "/" + nodeplan.DrainStatusKey(id))})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	var st nodeplan.DrainStatus
	return &st, json.NewDecoder(out.Body).Decode(&st)
}

// pluginChange: a plugin's unit for the spot pool replaces that pool's
// machines, each drained, and no other role's.
func (e *example) pluginChange(ctx context.Context, t *testing.T, cs *kubernetes.Clientset) {
	before, err := e.instances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	spot := ids(e.live(ctx, t, "-nodepool-spot-"))
	e.poolUnit(ctx, t, "spot", "v1")
	out, err := e.kubeAWS(ctx, "diff")
	if err != nil || !bytes.Contains(out, []byte("plugin pool-unit added")) {
		t.Errorf("kube-aws diff does not name the plugin (%v):\n%s", err, out)
	}
	for _, l := range grepLines(out, "would be replaced") {
		if !strings.HasPrefix(l, "nodepool-spot ") {
			t.Errorf("diff would replace machines of another role: %s", l)
		}
	}
	if out, err = e.up(ctx, t); err != nil {
		t.Fatalf("kube-aws up with the pool-unit plugin: %v\n%s", err, out)
	}
	evs := rollEvents(out)
	e.reportRoll(t, evs)
	after, err := e.instances(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range before {
		gone := !slices.Contains(ids(after), in.id)
		isSpot := slices.Contains(spot, in.id)
		if gone != isSpot {
			t.Errorf("instance %s of %s: gone %v; only the spot pool's machines should be replaced", in.id, in.group, gone)
		}
	}
	for _, id := range spot {
		drained, terminated := -1, -1
		for i, ev := range evs {
			switch {
			case ev.instance == id && ev.phase == "drained" && drained < 0:
				drained = i
			case ev.instance == id && ev.phase == "terminating" && terminated < 0:
				terminated = i
			}
		}
		if drained < 0 || terminated < drained {
			t.Errorf("spot machine %s: drained at event %d, terminated at %d; want drained first", id, drained, terminated)
		}
	}
	for _, in := range e.live(ctx, t, "-nodepool-spot-") {
		note, err := e.inMachine(ctx, in.id, "cat", "/var/lib/kube-aws-note")
		if err != nil || strings.TrimSpace(note) != "v1" {
			t.Errorf("new spot machine %s: /var/lib/kube-aws-note is %q (%v), want v1", in.id, note, err)
		}
	}
}

// failingReplacement: the spot pool's change meets a corrupted kubelet
// object; the new machine fails at its artifacts step, the roll stops there
// with up naming it, the old machines keep serving; with the object
// restored, up again completes.
func (e *example) failingReplacement(ctx context.Context, t *testing.T, cs *kubernetes.Clientset) {
	spot := e.live(ctx, t, "-nodepool-spot-")
	_, restore := e.corruptKubelet(ctx, t, spot[0].id)
	defer func() {
		if err := restore(); err != nil {
			t.Error(err)
		}
	}()
	e.poolUnit(ctx, t, "spot", "v2")
	out, err := e.up(ctx, t)
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("kube-aws up with a corrupted kubelet object: %v, want a failure\n%s", err, out)
	}
	line := firstLine(out, "roll stopped at")
	if !strings.Contains(line, "nodepool-spot machine i-") || !strings.Contains(line, "artifacts") || !strings.Contains(line, "sha256") {
		t.Errorf("up exited %d without naming the machine, its role and step, and why:\n%s", exit.ExitCode(), out)
	} else {
		t.Logf("up exits %d: %s", exit.ExitCode(), strings.TrimSpace(line))
	}
	ws, _, err := servingWorkers(ctx, cs)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range spot {
		if _, up := e.h.Player().Machine(in.id); !up {
			t.Errorf("old spot machine %s is gone after the failed replacement", in.id)
		}
	}
	t.Logf("after the failure %d workers serve", len(ws))
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	if out, err = e.up(ctx, t); err != nil {
		t.Fatalf("kube-aws up after restoring the object: %v\n%s", err, out)
	}
	e.reportRoll(t, rollEvents(out))
	for _, in := range e.live(ctx, t, "-nodepool-spot-") {
		note, err := e.inMachine(ctx, in.id, "cat", "/var/lib/kube-aws-note")
		if err != nil || strings.TrimSpace(note) != "v2" {
			t.Errorf("spot machine %s: /var/lib/kube-aws-note is %q (%v), want v2", in.id, note, err)
		}
	}
}

// corruptKubelet overwrites the kubelet object a machine's artifacts plan
// names with garbage, keeping a copy, and returns the plan's source and
// what puts the object back and removes the copy (once; later calls return
// the first's error).
func (e *example) corruptKubelet(ctx context.Context, t *testing.T, id string) (nodeplan.Source, func() error) {
	t.Helper()
	m, err := e.machineOf(id)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(m.Root(), nodeplan.ArtifactsPath))
	if err != nil {
		t.Fatal(err)
	}
	var plan nodeplan.ArtifactsPlan
	if err := json.Unmarshal(b, &plan); err != nil {
		t.Fatal(err)
	}
	var src nodeplan.Source
	for _, bin := range plan.Binaries {
		if bin.Name == "kubelet" {
			src = bin.Sources[nodeplan.AMD64]
		}
	}
	if src.AssetKey == "" {
		t.Fatalf("%s's %s has no kubelet asset: %s", id, nodeplan.ArtifactsPath, b)
	}
	key, good := examplePrefix+"/"+src.AssetKey, examplePrefix+"/e2e-good-"+src.SHA256
	if _, err := e.s3.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String(exampleBucket), Key: aws.String(good), CopySource: aws.String(exampleBucket + "/" + key)}); err != nil {
		t.Fatalf("keeping the kubelet object: %v", err)
	}
	if _, err := e.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(exampleBucket), Key: aws.String(key), Body: strings.NewReader("not the kubelet\n")}); err != nil {
		t.Fatal(err)
	}
	t.Logf("overwrote s3://%s/%s (the kubelet, sha256 %s) with garbage", exampleBucket, key, src.SHA256)
	var once sync.Once
	var restoreErr error
	return src, func() error {
		once.Do(func() {
			bg := context.Background()
			if _, err := e.s3.CopyObject(bg, &s3.CopyObjectInput{Bucket: aws.String(exampleBucket), Key: aws.String(key), CopySource: aws.String(exampleBucket + "/" + good)}); err != nil {
				restoreErr = fmt.Errorf("restoring the kubelet object %s: %w", key, err)
				return
			}
			_, restoreErr = e.s3.DeleteObject(bg, &s3.DeleteObjectInput{Bucket: aws.String(exampleBucket), Key: aws.String(good)})
		})
		return restoreErr
	}
}

// budgetNeverMet: a pod on the oldest spot node whose budget allows no
// disruption stops the spot pool's roll at that node at the drain timeout,
// with the pod and the budget named; its machine is not terminated and its
// node is uncordoned. Without the budget, up again completes.
func (e *example) budgetNeverMet(ctx context.Context, t *testing.T, cs *kubernetes.Clientset) {
	spot := e.live(ctx, t, "-nodepool-spot-")
	nodes, err := readyNodes(ctx, cs, spot)
	if err != nil {
		t.Fatal(err)
	}
	// The roll takes the oldest machine first: pin the pod there.
	oldest := e.oldest(ctx, t, spot)
	n, ok := nodes[oldest]
	if !ok {
		t.Fatalf("spot machine %s has no Ready node", oldest)
	}
	node := n.Name
	labels := map[string]string{"app": "pinned"}
	one := int32(1)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "pinned", Namespace: "default"}, Spec: appsv1.DeploymentSpec{
		Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
			NodeName:    node,
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/lifecycle", Value: "spot", Effect: corev1.TaintEffectNoSchedule}},
			Containers:  []corev1.Container{{Name: "web", Image: probeImage, ImagePullPolicy: corev1.PullNever, Env: []corev1.EnvVar{{Name: "PROBE_SERVE", Value: ":8080"}}}},
		}},
	}}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	minOne := intstr.FromInt32(1)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "pinned", Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &minOne, Selector: &metav1.LabelSelector{MatchLabels: labels}}}
	if _, err := cs.PolicyV1().PodDisruptionBudgets("default").Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := eventually(ctx, "the pinned pod available", func() error {
		got, err := cs.AppsV1().Deployments("default").Get(ctx, "pinned", metav1.GetOptions{})
		if err != nil || got.Status.AvailableReplicas != 1 {
			return fmt.Errorf("not yet (%v)", err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	e.setClusterYAML(t, "\nnodePools:\n", "\ndrain:\n  timeout: 20s\n\nnodePools:\n")
	e.poolUnit(ctx, t, "spot", "v3")
	out, err := e.up(ctx, t)
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("kube-aws up with a budget that cannot be met: %v, want a failure\n%s", err, out)
	}
	line := firstLine(out, "roll stopped at")
	if !strings.Contains(line, oldest) || !strings.Contains(line, "default/pinned") || !strings.Contains(line, "PodDisruptionBudget default/pinned") || !strings.Contains(line, "nothing was terminated") {
		t.Errorf("up exited %d without naming the machine, the pod and the budget:\n%s", exit.ExitCode(), out)
	} else {
		t.Logf("up exits %d: %s", exit.ExitCode(), strings.TrimSpace(line))
	}
	for _, in := range spot {
		if _, up := e.h.Player().Machine(in.id); !up {
			t.Errorf("spot machine %s was terminated though its drain was blocked", in.id)
		}
	}
	if err := eventually(ctx, "the blocked node uncordoned", func() error {
		n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil || n.Spec.Unschedulable {
			return fmt.Errorf("node %s still cordoned (%v)", node, err)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
	// The budget gone, the roll completes.
	if err := cs.PolicyV1().PodDisruptionBudgets("default").Delete(ctx, "pinned", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := cs.AppsV1().Deployments("default").Delete(ctx, "pinned", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if out, err = e.up(ctx, t); err != nil {
		t.Fatalf("kube-aws up without the budget: %v\n%s", err, out)
	}
	e.reportRoll(t, rollEvents(out))
}

// oldest returns the instance launched first among ins.
func (e *example) oldest(ctx context.Context, t *testing.T, ins []instance) string {
	t.Helper()
	st, err := e.statuses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	best, bestAge := "", -1.0
	for _, in := range ins {
		// A status's seconds since the machine started, at its time: the
		// machine that started first has the earliest start.
		s := st[in.id]
		at, err := time.Parse(time.RFC3339, s.Time)
		if err != nil {
			continue
		}
		age := time.Since(at).Seconds() + s.Seconds
		if age > bestAge {
			best, bestAge = in.id, age
		}
	}
	if best == "" {
		t.Fatalf("no status for %v", ids(ins))
	}
	return best
}

// scaleIn: the general pool's desiredCapacity goes down by one in
// cluster.yaml; Auto Scaling picks the machine, whose termination hook holds
// it until the controllers' drainer has drained its node.
func (e *example) scaleIn(ctx context.Context, t *testing.T, cs *kubernetes.Clientset) {
	general := e.live(ctx, t, "-nodepool-general-")
	e.setClusterYAML(t, fmt.Sprintf("    minSize: %d\n    desiredCapacity: %d\n", len(general), len(general)),
		fmt.Sprintf("    minSize: %d\n    desiredCapacity: %d\n", len(general)-1, len(general)-1))
	out, err := e.up(ctx, t)
	if err != nil {
		t.Fatalf("kube-aws up with the general pool at %d: %v\n%s", len(general)-1, err, out)
	}
	var gone string
	if err := eventually(ctx, "a general machine gone", func() error {
		now := ids(e.live(ctx, t, "-nodepool-general-"))
		for _, in := range general {
			if !slices.Contains(now, in.id) {
				gone = in.id
				return nil
			}
		}
		return fmt.Errorf("still %v", now)
	}); err != nil {
		t.Fatal(err)
	}
	e.waitGone(ctx, t, gone)
	ds, err := e.drainStatus(ctx, gone)
	if err != nil || ds.Phase != nodeplan.DrainDrained || ds.Request != "" {
		t.Fatalf("the scaled-in machine %s went without its termination hook's drain: %+v %v", gone, ds, err)
	}
	t.Logf("scaled-in machine %s: node %s drained on its termination hook (%s to %s), then terminated", gone, ds.Node, ds.Started, ds.Time)
}
