package wait

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/report"
	"github.com/kube-aws/kube-aws/node/step"
	"github.com/kube-aws/kube-aws/test/agenttest"
	"github.com/kube-aws/kube-aws/test/etcdtest"
)

func env(t *testing.T) (*agent.Env, *agenttest.Output) {
	out := &agenttest.Output{}
	root := t.TempDir()
	return &agent.Env{
		Step: "wait", Root: root,
		Report: &report.Reporter{Role: "nodepool-a", Out: out, Start: time.Now().Add(-9 * time.Second), Local: root + "/var/lib/kube-aws/status.json"},
		Facts:  nodeplan.Facts{nodeplan.FactHostname: "ip-10-0-1-23.ec2.internal", nodeplan.FactPrivateIPv4: "127.0.0.1"},
	}, out
}

func writePlan(t *testing.T, e *agent.Env, p *nodeplan.GoalPlan) {
	agenttest.WritePlan(t, e, nodeplan.GoalPath, p)
}

func node(name string, ready corev1.ConditionStatus, reason string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: ready, Reason: reason, Message: "msg"},
	}}}
}

func TestNodeReady(t *testing.T) {
	e, out := env(t)
	writePlan(t, e, &nodeplan.GoalPlan{Node: &nodeplan.NodeGoal{Kubeconfig: "/var/lib/kubelet/kubeconfig"}, Timeout: "10s"})
	cs := fake.NewClientset(node("ip-10-0-9-9.ec2.internal", corev1.ConditionTrue, "KubeletReady"))
	var got string
	o := &Step{Connect: func(k string) (kubernetes.Interface, error) { got = k; return cs, nil }}
	// The node registers NotReady, then becomes Ready.
	go func() {
		time.Sleep(50 * time.Millisecond)
		cs.CoreV1().Nodes().Create(context.Background(), node("ip-10-0-1-23.ec2.internal", corev1.ConditionFalse, "KubeletNotReady"), metav1.CreateOptions{})
		time.Sleep(50 * time.Millisecond)
		cs.CoreV1().Nodes().UpdateStatus(context.Background(), node("ip-10-0-1-23.ec2.internal", corev1.ConditionTrue, "KubeletReady"), metav1.UpdateOptions{})
	}()
	if err := step.Run(t.Context(), e, o); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got != e.Path("/var/lib/kubelet/kubeconfig") {
		t.Errorf("kubeconfig %s", got)
	}
	// The machine started 9 s before the step; the step itself takes a
	// moment more, longer under the race detector.
	if !regexp.MustCompile(`wait: node ip-10-0-1-23\.ec2\.internal is Ready, (9|[1-9][0-9])\.[0-9] s after the machine started`).MatchString(out.String()) {
		t.Errorf("output: %s", out)
	}
	if st, ok := e.Report.Last(); !ok || st.Phase != nodeplan.PhaseReady || st.Seconds < 9 || st.Goal == nil || st.Goal.Node != "ip-10-0-1-23.ec2.internal" || st.Goal.APIReady {
		t.Errorf("status = %+v", st)
	}
}

// apiServer serves /readyz with TLS as an API server does, to the admin's
// token only; it answers not ready until ready is true.
type apiServer struct {
	*httptest.Server
	ready   atomic.Bool
	asked   atomic.Int32
	refused atomic.Int32
}

func serveAPI(t *testing.T, ready bool) *apiServer {
	a := &apiServer{}
	a.ready.Store(ready)
	a.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer admin-token" {
			a.refused.Add(1)
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		a.asked.Add(1)
		if !a.ready.Load() {
			http.Error(w, "[-]etcd failed: reason withheld\nreadyz check failed", http.StatusInternalServerError)
			return
		}
		fmt.Fprint(w, "ok")
	}))
	t.Cleanup(a.Close)
	return a
}

// port is the server's port on 127.0.0.1.
func (a *apiServer) port() string { return a.URL[strings.LastIndex(a.URL, ":")+1:] }

// writeKubeconfig writes an admin kubeconfig trusting the test servers'
// CA (one certificate for all of them, naming 127.0.0.1).
func writeKubeconfig(t *testing.T, e *agent.Env, path string, a *apiServer) {
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: a.Certificate().Raw})
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: demo
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: admin
  user:
    token: admin-token
contexts:
- name: admin
  context: {cluster: demo, user: admin}
current-context: admin
`, a.URL, base64.StdEncoding.EncodeToString(ca))
	os.MkdirAll(filepath.Dir(e.Path(path)), 0o755)
	if err := os.WriteFile(e.Path(path), []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A controller reaches its goal once its node is Ready and both its own
// API server and the API through the load balancer answer /readyz ok,
// asked with the admin's credentials; the load balancer's name is a fact.
func TestControllerAPIReady(t *testing.T) {
	e, out := env(t)
	local, lb := serveAPI(t, true), serveAPI(t, false)
	e.Facts["apiLoadBalancerDNS"] = "127.0.0.1"
	const admin = "/etc/kubernetes/admin.conf"
	writeKubeconfig(t, e, admin, local)
	writePlan(t, e, &nodeplan.GoalPlan{Node: &nodeplan.NodeGoal{Kubeconfig: admin,
		APIReadyz: []string{local.URL + "/readyz", "https://{apiLoadBalancerDNS}:" + lb.port() + "/readyz"}}, Timeout: "20s"})
	cs := fake.NewClientset(node("ip-10-0-1-23.ec2.internal", corev1.ConditionTrue, "KubeletReady"))
	// The load balancer finds a ready API server a moment later.
	go func() {
		for lb.asked.Load() < 3 {
			time.Sleep(10 * time.Millisecond)
		}
		lb.ready.Store(true)
	}()
	if err := step.Run(t.Context(), e, &Step{Connect: func(string) (kubernetes.Interface, error) { return cs, nil }}); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	st, ok := e.Report.Last()
	if !ok || st.Phase != nodeplan.PhaseReady || st.Goal == nil || !st.Goal.APIReady || st.Goal.Node != "ip-10-0-1-23.ec2.internal" {
		t.Errorf("status = %+v", st)
	}
	if lb.asked.Load() < 4 || local.asked.Load() < 1 || lb.refused.Load()+local.refused.Load() != 0 {
		t.Errorf("load balancer asked %d times, local %d, refused %d", lb.asked.Load(), local.asked.Load(), lb.refused.Load()+local.refused.Load())
	}
	if !strings.Contains(out.String(), "https://127.0.0.1:"+lb.port()+"/readyz answer ok") {
		t.Errorf("output: %s", out)
	}
}

// An API the load balancer never finds ready fails the goal, naming the
// URL and what it answered; nothing reports ready.
func TestControllerAPINeverReady(t *testing.T) {
	e, _ := env(t)
	local, lb := serveAPI(t, true), serveAPI(t, false)
	const admin = "/etc/kubernetes/admin.conf"
	writeKubeconfig(t, e, admin, local)
	writePlan(t, e, &nodeplan.GoalPlan{Node: &nodeplan.NodeGoal{Kubeconfig: admin,
		APIReadyz: []string{local.URL + "/readyz", lb.URL + "/readyz"}}, Timeout: "1s"})
	cs := fake.NewClientset(node("ip-10-0-1-23.ec2.internal", corev1.ConditionTrue, "KubeletReady"))
	err := step.Run(t.Context(), e, &Step{Connect: func(string) (kubernetes.Interface, error) { return cs, nil }})
	if err == nil || !strings.Contains(err.Error(), "the API did not answer /readyz ok in time") || !strings.Contains(err.Error(), lb.URL+"/readyz answers 500") ||
		!strings.Contains(err.Error(), "[-]etcd failed") || strings.Contains(err.Error(), local.URL) {
		t.Fatalf("err = %v", err)
	}
	if st, ok := e.Report.Last(); ok && st.Phase == nodeplan.PhaseReady {
		t.Error("reported ready")
	}
}

// A worker's kubeconfig is usable only once its kubelet has bootstrapped:
// the step waits for it, and gives up naming it.
func TestKubeconfigNotYetUsable(t *testing.T) {
	e, out := env(t)
	writePlan(t, e, &nodeplan.GoalPlan{Node: &nodeplan.NodeGoal{Kubeconfig: "/etc/kubernetes/kubelet.conf"}, Timeout: "10s"})
	cs := fake.NewClientset(node("ip-10-0-1-23.ec2.internal", corev1.ConditionTrue, "KubeletReady"))
	tries := 0
	o := &Step{Connect: func(string) (kubernetes.Interface, error) {
		if tries++; tries < 3 {
			return nil, errors.New("unable to read client-cert /var/lib/kubelet/pki/kubelet-client-current.pem")
		}
		return cs, nil
	}}
	if err := step.Run(t.Context(), e, o); err != nil || tries != 3 {
		t.Fatalf("err %v after %d tries\n%s", err, tries, out)
	}

	writePlan(t, e, &nodeplan.GoalPlan{Node: &nodeplan.NodeGoal{Kubeconfig: "/etc/kubernetes/kubelet.conf"}, Timeout: "1s"})
	err := step.Run(t.Context(), e, &Step{Connect: func(string) (kubernetes.Interface, error) {
		return nil, errors.New("unable to read client-cert /var/lib/kubelet/pki/kubelet-client-current.pem")
	}})
	if err == nil || !strings.Contains(err.Error(), "the kubelet's kubeconfig is not usable in time") || !strings.Contains(err.Error(), "kubelet-client-current.pem") {
		t.Fatalf("err = %v", err)
	}
}

func TestNodeNeverReady(t *testing.T) {
	e, _ := env(t)
	writePlan(t, e, &nodeplan.GoalPlan{Node: &nodeplan.NodeGoal{Kubeconfig: "/k", NodeName: "{hostname}"}, Timeout: "300ms"})
	cs := fake.NewClientset(node("ip-10-0-1-23.ec2.internal", corev1.ConditionFalse, "KubeletNotReady"))
	err := step.Run(t.Context(), e, &Step{Connect: func(string) (kubernetes.Interface, error) { return cs, nil }})
	if err == nil || !strings.Contains(err.Error(), "node ip-10-0-1-23.ec2.internal did not become Ready in time: Ready is False: KubeletNotReady msg") {
		t.Fatalf("err = %v", err)
	}
	if st, ok := e.Report.Last(); ok && st.Phase == nodeplan.PhaseReady {
		t.Error("reported ready")
	}
}

func TestEtcdHealthy(t *testing.T) {
	e, out := env(t)
	m := etcdtest.Start(t, e.Root)
	g := m.Goal()
	g.Endpoints = []string{strings.Replace(m.ClientURL, "127.0.0.1", "{privateIPv4}", 1)}
	writePlan(t, e, &nodeplan.GoalPlan{Etcd: g, Timeout: "30s"})
	if err := step.Run(t.Context(), e, &Step{}); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out.String(), "is healthy, leader") || !strings.Contains(out.String(), "1 of 1 members healthy") {
		t.Errorf("output: %s", out)
	}
	id := strconv.FormatUint(uint64(m.Etcd.Server.MemberID()), 16)
	st, ok := e.Report.Last()
	if !ok || st.Phase != nodeplan.PhaseReady || st.Goal == nil || st.Goal.Etcd == nil {
		t.Fatalf("status = %+v", st)
	}
	if want := (nodeplan.EtcdReport{Name: "etcd0", ID: id, Leader: id, Members: 1, Healthy: 1}); *st.Goal.Etcd != want {
		t.Errorf("etcd report %+v, want %+v", *st.Goal.Etcd, want)
	}
}

// A member is at its goal only when its whole cluster is: every member
// answers and there is a leader. Two of three members serve (quorum, a
// leader): the step waits for the third, as a roll waits for a replaced
// member to come back.
func TestEtcdWaitsForTheWholeCluster(t *testing.T) {
	e, out := env(t)
	c := etcdtest.NewCluster(t, e.Root, 3)
	c.Start(0, 1)
	g := c.Members[0].Goal()
	writePlan(t, e, &nodeplan.GoalPlan{Etcd: g, Timeout: "60s"})
	done := make(chan error, 1)
	go func() { done <- step.Run(t.Context(), e, &Step{}) }()
	select {
	case err := <-done:
		t.Fatalf("reached the goal with a member missing: %v\n%s", err, out)
	case <-time.After(2 * time.Second):
	}
	if st, ok := e.Report.Last(); ok && st.Phase == nodeplan.PhaseReady {
		t.Fatalf("reported ready with a member missing: %+v", st)
	}
	c.Start(2)
	if err := <-done; err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	st, _ := e.Report.Last()
	r := st.Goal.Etcd
	id := strconv.FormatUint(uint64(c.Members[0].Etcd.Server.MemberID()), 16)
	if st.Phase != nodeplan.PhaseReady || r.Name != "etcd0" || r.ID != id || r.Members != 3 || r.Healthy != 3 || r.Leader == "" || !r.Whole() {
		t.Errorf("status %+v, etcd %+v", st, r)
	}
}

func TestEtcdFailures(t *testing.T) {
	e, _ := env(t)
	m := etcdtest.Start(t, e.Root)
	// A client certificate of another CA: the member refuses it.
	other, _ := env(t)
	etcdtest.Start(t, other.Root)
	for _, f := range []string{etcdtest.ClientCert, etcdtest.ClientKey} {
		b, _ := os.ReadFile(other.Path(f))
		os.WriteFile(e.Path(f), b, 0o600)
	}
	writePlan(t, e, &nodeplan.GoalPlan{Etcd: m.Goal(), Timeout: "1s"})
	if err := step.Run(t.Context(), e, &Step{}); err == nil || !strings.Contains(err.Error(), "is not healthy") {
		t.Fatalf("err = %v", err)
	}
	os.Remove(e.Path(nodeplan.GoalPath))
	if err := step.Run(t.Context(), e, &Step{}); err == nil || agent.ExitCode(err) != agent.ExitBadInput || !strings.Contains(err.Error(), "no goal plan") {
		t.Fatalf("no plan: %v", err)
	}
}

// The dry run says what the step would wait for; it connects to nothing
// and reports nothing.
func TestDryRun(t *testing.T) {
	tests := []struct {
		name string
		plan func(t *testing.T, e *agent.Env) (*nodeplan.GoalPlan, string)
	}{
		{
			name: "node",
			plan: func(*testing.T, *agent.Env) (*nodeplan.GoalPlan, string) {
				return &nodeplan.GoalPlan{Node: &nodeplan.NodeGoal{Kubeconfig: "/var/lib/kubelet/kubeconfig"}, Timeout: "10s"},
					"wait node ip-10-0-1-23.ec2.internal: until it is Ready (asking with /var/lib/kubelet/kubeconfig), up to 10s; then report phase ready"
			},
		},
		{
			name: "controller",
			plan: func(_ *testing.T, e *agent.Env) (*nodeplan.GoalPlan, string) {
				e.Facts["apiLoadBalancerDNS"] = "api-123.elb.us-east-1.amazonaws.com"
				return &nodeplan.GoalPlan{Node: &nodeplan.NodeGoal{Kubeconfig: "/etc/kubernetes/admin.conf",
						APIReadyz:  []string{"https://127.0.0.1:443/readyz", "https://{apiLoadBalancerDNS}:443/readyz"},
						DaemonSets: []nodeplan.NodeDaemonSet{{Namespace: "kube-system", Name: "kube-proxy", Digest: strings.Repeat("a", 64)}}}},
					"wait node ip-10-0-1-23.ec2.internal: until it is Ready and https://127.0.0.1:443/readyz and https://api-123.elb.us-east-1.amazonaws.com:443/readyz answer ok, " +
						"and its pods of kube-system/kube-proxy are of its release (asking with /etc/kubernetes/admin.conf), up to 10m0s; then report phase ready"
			},
		},
		{
			name: "etcd member",
			plan: func(t *testing.T, e *agent.Env) (*nodeplan.GoalPlan, string) {
				m := etcdtest.Start(t, e.Root)
				return &nodeplan.GoalPlan{Etcd: m.Goal()},
					"wait etcd member " + m.ClientURL + ": until it answers a linearizable read and every member of its cluster answers, with a leader, up to 10m0s; then report phase ready"
			},
		},
		{name: "no plan"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := env(t)
			want := agenttest.Want{Err: "no goal plan", Code: agent.ExitBadInput}
			if tt.plan != nil {
				p, change := tt.plan(t, e)
				writePlan(t, e, p)
				want = agenttest.Want{Changes: []string{change}}
			}
			connected := false
			agenttest.ExpectDryRun(t, e, &Step{Connect: func(string) (kubernetes.Interface, error) { connected = true; return nil, errors.New("no") }}, want)
			if _, reported := e.Report.Last(); connected || reported {
				t.Errorf("connected %v, reported %v", connected, reported)
			}
		})
	}
}

// daemonSetCluster is an API server with this machine's Ready node and a
// DaemonSet of release tmpl, which (as the DaemonSet controller does) makes
// a pod on the node from its template whenever the node has none.
func daemonSetCluster(t *testing.T, tmpl, pod string) *fake.Clientset {
	const nodeName = "ip-10-0-1-23.ec2.internal"
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "kube-proxy", Namespace: "kube-system", UID: "ds-uid"},
		Spec: appsv1.DaemonSetSpec{Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{
			Annotations: map[string]string{names.AnnotationReleaseDigest: tmpl}}}}}
	cs := fake.NewClientset(node(nodeName, corev1.ConditionTrue, "KubeletReady"), ds)
	var made atomic.Int32
	makePod := func(digest string) {
		n := made.Add(1)
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("kube-proxy-%d", n), Namespace: "kube-system", UID: types.UID(fmt.Sprintf("pod-%d", n)),
			Annotations:     map[string]string{names.AnnotationReleaseDigest: digest},
			OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet", Name: "kube-proxy", UID: "ds-uid", APIVersion: "apps/v1", Controller: ptr(true)}}},
			Spec: corev1.PodSpec{NodeName: nodeName}}
		if err := cs.Tracker().Add(p); err != nil {
			t.Error(err)
		}
	}
	makePod(pod)
	// A pod of another DaemonSet on the node, and another node's pod, are
	// none of the step's business.
	cs.Tracker().Add(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "flannel-x", Namespace: "kube-system", UID: "other",
		OwnerReferences: []metav1.OwnerReference{{Kind: "DaemonSet", Name: "flannel", UID: "flannel-uid", Controller: ptr(true)}}},
		Spec: corev1.PodSpec{NodeName: nodeName}})
	cs.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		name := a.(k8stesting.DeleteAction).GetName()
		if err := cs.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), "kube-system", name); err != nil {
			return true, nil, err
		}
		cur, err := cs.Tracker().Get(appsv1.SchemeGroupVersion.WithResource("daemonsets"), "kube-system", "kube-proxy")
		if err != nil {
			return true, nil, err
		}
		makePod(cur.(*appsv1.DaemonSet).Spec.Template.Annotations[names.AnnotationReleaseDigest])
		return true, nil, nil
	})
	return cs
}

func ptr[T any](v T) *T { return &v }

// A controller's pod of a DaemonSet bound to its nodes must be of its own
// release: a pod the DaemonSet made from the release before (as the node
// registered, before the controller's addons step upgraded it) is deleted
// once the DaemonSet is of the node's release, and the DaemonSet makes it
// again; a pod of the node's release is left alone.
func TestNodeBoundDaemonSets(t *testing.T) {
	const old, mine = "1111111111111111111111111111111111111111111111111111111111111111", "2222222222222222222222222222222222222222222222222222222222222222"
	tests := []struct {
		name    string
		tmpl    string // the DaemonSet's release when the step starts
		pod     string // its pod's on the node
		upgrade bool   // the DaemonSet is upgraded to mine a moment later
		deleted bool
		timeout string
		err     string
	}{
		{name: "a pod of the node's release", tmpl: mine, pod: mine},
		{name: "a pod made before the upgrade", tmpl: mine, pod: old, deleted: true},
		{name: "a pod made before kube-aws marked releases", tmpl: mine, pod: "", deleted: true},
		{name: "the upgrade comes later", tmpl: old, pod: old, upgrade: true, deleted: true},
		{name: "the upgrade never comes", tmpl: old, pod: old, timeout: "1s",
			err: "DaemonSet kube-system/kube-proxy is of release 111111111111, this node of release 222222222222: waiting for its upgrade"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, out := env(t)
			cs := daemonSetCluster(t, tt.tmpl, tt.pod)
			timeout := cmp.Or(tt.timeout, "20s")
			writePlan(t, e, &nodeplan.GoalPlan{Node: &nodeplan.NodeGoal{Kubeconfig: "/etc/kubernetes/admin.conf",
				DaemonSets: []nodeplan.NodeDaemonSet{{Namespace: "kube-system", Name: "kube-proxy", Digest: mine}}}, Timeout: timeout})
			if tt.upgrade {
				go func() {
					time.Sleep(300 * time.Millisecond)
					ds, _ := cs.AppsV1().DaemonSets("kube-system").Get(context.Background(), "kube-proxy", metav1.GetOptions{})
					ds.Spec.Template.Annotations[names.AnnotationReleaseDigest] = mine
					cs.AppsV1().DaemonSets("kube-system").Update(context.Background(), ds, metav1.UpdateOptions{})
				}()
			}
			err := step.Run(t.Context(), e, &Step{Connect: func(string) (kubernetes.Interface, error) { return cs, nil }})
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			pods, _ := cs.CoreV1().Pods("kube-system").List(t.Context(), metav1.ListOptions{})
			var got []string
			for _, p := range pods.Items {
				got = append(got, p.Name+"="+shortDigest(p.Annotations[names.AnnotationReleaseDigest]))
			}
			want := "flannel-x=(none) kube-proxy-1=" + shortDigest(tt.pod)
			if tt.deleted {
				want = "flannel-x=(none) kube-proxy-2=222222222222"
			}
			if slices.Sort(got); strings.Join(got, " ") != want {
				t.Errorf("pods %v, want %s", got, want)
			}
			if deletedLine := strings.Contains(out.String(), "deleted pod kube-system/kube-proxy-1 of DaemonSet kube-system/kube-proxy"); deletedLine != tt.deleted {
				t.Errorf("output:\n%s", out)
			}
			if !strings.Contains(out.String(), "its pods of kube-system/kube-proxy are of its release") {
				t.Errorf("output:\n%s", out)
			}
		})
	}
}

// notReadyController is a controller whose node is registered NotReady and
// whose own API server answers /readyz ok or not (apiReady), waited for up
// to timeout.
func notReadyController(t *testing.T, apiReady bool, timeout string) (*agent.Env, *agenttest.Output, *apiServer, *fake.Clientset) {
	e, out := env(t)
	local := serveAPI(t, apiReady)
	const admin = "/etc/kubernetes/admin.conf"
	writeKubeconfig(t, e, admin, local)
	writePlan(t, e, &nodeplan.GoalPlan{Node: &nodeplan.NodeGoal{Kubeconfig: admin, APIReadyz: []string{local.URL + "/readyz"}}, Timeout: timeout})
	return e, out, local, fake.NewClientset(node("ip-10-0-1-23.ec2.internal", corev1.ConditionFalse, "KubeletNotReady"))
}

// A controller's API server answers before its node is Ready: the step
// asks both at once, so /readyz has been answered by the time the node is
// Ready, and the goal needs no round trip after it.
func TestControllerConditionsAreAskedSideBySide(t *testing.T) {
	e, out, local, cs := notReadyController(t, true, "20s")
	askedBeforeReady := make(chan int32, 1)
	go func() {
		deadline := time.Now().Add(10 * time.Second)
		for local.asked.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		askedBeforeReady <- local.asked.Load()
		cs.CoreV1().Nodes().UpdateStatus(context.Background(), node("ip-10-0-1-23.ec2.internal", corev1.ConditionTrue, "KubeletReady"), metav1.UpdateOptions{})
	}()
	if err := step.Run(t.Context(), e, &Step{Connect: func(string) (kubernetes.Interface, error) { return cs, nil }}); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if n := <-askedBeforeReady; n == 0 {
		t.Error("/readyz was not asked while the node was not Ready yet")
	}
	if st, ok := e.Report.Last(); !ok || st.Phase != nodeplan.PhaseReady || st.Goal == nil || !st.Goal.APIReady {
		t.Errorf("status = %+v", st)
	}
	if !strings.Contains(out.String(), "node ip-10-0-1-23.ec2.internal is Ready, "+local.URL+"/readyz answer ok") {
		t.Errorf("output: %s", out)
	}
}

// At the deadline the failure names every condition still unmet, not only
// the first.
func TestGoalNamesEveryUnmetCondition(t *testing.T) {
	e, _, _, cs := notReadyController(t, false, "1s")
	err := step.Run(t.Context(), e, &Step{Connect: func(string) (kubernetes.Interface, error) { return cs, nil }})
	for _, want := range []string{"node ip-10-0-1-23.ec2.internal did not become Ready in time: Ready is False: KubeletNotReady", "the API did not answer /readyz ok in time"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to say %q", err, want)
		}
	}
}

// all: every check runs at once; the first to fail ends the others and is
// the only error returned; when the context itself ends, each check's own
// error is.
func TestAll(t *testing.T) {
	errBroken := errors.New("broken")
	untilDone := func(name string) func(context.Context) error {
		return func(ctx context.Context) error { <-ctx.Done(); return fmt.Errorf("%s: still waiting", name) }
	}
	ok := func(context.Context) error { return nil }
	tests := []struct {
		name    string
		timeout time.Duration
		checks  []func(context.Context) error
		want    []string // in the error; none: nil
		notWant string
	}{
		{name: "all met", timeout: 5 * time.Second, checks: []func(context.Context) error{ok, ok, ok}},
		{name: "one fails, the others stop", timeout: time.Minute,
			checks: []func(context.Context) error{untilDone("a"), func(context.Context) error { return errBroken }, untilDone("c")},
			want:   []string{"broken"}, notWant: "still waiting"},
		{name: "the deadline names each", timeout: 100 * time.Millisecond,
			checks: []func(context.Context) error{untilDone("a"), ok, untilDone("c")},
			want:   []string{"a: still waiting", "c: still waiting"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), tt.timeout)
			defer cancel()
			start := time.Now()
			err := all(ctx, tt.checks)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v, want %q in it", err, w)
				}
			}
			if tt.notWant != "" && strings.Contains(err.Error(), tt.notWant) {
				t.Errorf("err = %v: it names checks the failure ended", err)
			}
			if time.Since(start) > 10*time.Second {
				t.Errorf("took %s", time.Since(start))
			}
		})
	}
}
