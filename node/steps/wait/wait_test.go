package wait

import (
	"context"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

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
	if st, ok := e.Report.Last(); !ok || st.Phase != nodeplan.PhaseReady || st.Seconds < 9 {
		t.Errorf("status = %+v", st)
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
	if !strings.Contains(out.String(), "is healthy, leader") {
		t.Errorf("output: %s", out)
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
			name: "etcd member",
			plan: func(t *testing.T, e *agent.Env) (*nodeplan.GoalPlan, string) {
				m := etcdtest.Start(t, e.Root)
				return &nodeplan.GoalPlan{Etcd: m.Goal()},
					"wait etcd member " + m.ClientURL + ": until it answers a linearizable read, up to 10m0s; then report phase ready"
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
