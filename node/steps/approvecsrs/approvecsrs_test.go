package approvecsrs

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/step"
	"github.com/kube-aws/kube-aws/test/agenttest"
)

var motoURL string

func TestMain(m *testing.M) { agenttest.MotoMain(m, &motoURL) }

const nodeName = "ip-10-0-1-23.ec2.internal"

type request struct {
	cn     string
	orgs   []string
	dns    []string
	ips    []string
	emails []string
	uris   []string
	badSig bool
}

func pemRequest(t *testing.T, r request) []byte {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tpl := &x509.CertificateRequest{Subject: pkix.Name{CommonName: r.cn, Organization: r.orgs}, DNSNames: r.dns, EmailAddresses: r.emails}
	for _, ip := range r.ips {
		tpl.IPAddresses = append(tpl.IPAddresses, net.ParseIP(ip))
	}
	for _, u := range r.uris {
		p, _ := url.Parse(u)
		tpl.URIs = append(tpl.URIs, p)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, tpl, key)
	if err != nil {
		t.Fatal(err)
	}
	if r.badSig {
		der[len(der)-3] ^= 0xff
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func csr(t *testing.T, name, user string, groups []string, signer string, usages []certv1.KeyUsage, r request) *certv1.CertificateSigningRequest {
	return &certv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certv1.CertificateSigningRequestSpec{
			Request: pemRequest(t, r), SignerName: signer, Username: user, Groups: groups, Usages: usages,
		},
	}
}

var (
	nodeUser   = "system:node:" + nodeName
	nodeGroups = []string{"system:nodes", "system:authenticated"}
	serving    = []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageKeyEncipherment, certv1.UsageServerAuth}
	good       = request{cn: nodeUser, orgs: []string{"system:nodes"}, dns: []string{nodeName}, ips: []string{"10.0.1.23"}}
)

func TestDecide(t *testing.T) {
	inst := &Instance{ID: "i-1", DNSNames: []string{nodeName, "ec2-54-1-2-3.compute-1.amazonaws.com"}, IPs: []net.IP{net.ParseIP("10.0.1.23"), net.ParseIP("54.1.2.3")}}
	found := func(string) (*Instance, error) { return inst, nil }
	with := func(f func(r *request)) request { r := good; f(&r); return r }
	tests := []struct {
		name   string
		csr    *certv1.CertificateSigningRequest
		lookup Lookup
		want   Verdict
		reason string
	}{
		{"matching", csr(t, "a", nodeUser, nodeGroups, certv1.KubeletServingSignerName, serving, good), found, Approve, "instance i-1's"},
		{"public name and address", csr(t, "a", nodeUser, nodeGroups, certv1.KubeletServingSignerName, serving, with(func(r *request) {
			r.dns = append(r.dns, "EC2-54-1-2-3.compute-1.amazonaws.com")
			r.ips = append(r.ips, "54.1.2.3")
		})), found, Approve, ""},
		{"kubelet client CSR is not ours", csr(t, "a", "system:bootstrap:abc", nil, certv1.KubeAPIServerClientKubeletSignerName, []certv1.KeyUsage{certv1.UsageClientAuth}, good), found, Skip, "is not kubernetes.io/kubelet-serving"},
		{"another address", csr(t, "a", nodeUser, nodeGroups, certv1.KubeletServingSignerName, serving, with(func(r *request) { r.ips = []string{"10.0.1.23", "10.0.9.9"} })), found, Deny, "10.0.9.9 not of instance i-1"},
		{"another name", csr(t, "a", nodeUser, nodeGroups, certv1.KubeletServingSignerName, serving, with(func(r *request) { r.dns = []string{"kubernetes.default"} })), found, Deny, "kubernetes.default not of instance"},
		{"not a node", csr(t, "a", "alice", []string{"system:authenticated"}, certv1.KubeletServingSignerName, serving, good), found, Deny, `requested by "alice"`},
		{"node outside system:nodes", csr(t, "a", nodeUser, []string{"system:authenticated"}, certv1.KubeletServingSignerName, serving, good), found, Deny, "not by a node"},
		{"CN of another node", csr(t, "a", nodeUser, nodeGroups, certv1.KubeletServingSignerName, serving, with(func(r *request) { r.cn = "system:node:other" })), found, Deny, `subject CN="system:node:other"`},
		{"wrong organization", csr(t, "a", nodeUser, nodeGroups, certv1.KubeletServingSignerName, serving, with(func(r *request) { r.orgs = []string{"system:masters"} })), found, Deny, "O=[system:masters]"},
		{"client usage", csr(t, "a", nodeUser, nodeGroups, certv1.KubeletServingSignerName, append(serving, certv1.UsageClientAuth), good), found, Deny, `usage "client auth"`},
		{"no server auth", csr(t, "a", nodeUser, nodeGroups, certv1.KubeletServingSignerName, []certv1.KeyUsage{certv1.UsageDigitalSignature}, good), found, Deny, "lack server auth"},
		{"e-mail", csr(t, "a", nodeUser, nodeGroups, certv1.KubeletServingSignerName, serving, with(func(r *request) { r.emails = []string{"a@b"} })), found, Deny, "e-mail"},
		{"URI", csr(t, "a", nodeUser, nodeGroups, certv1.KubeletServingSignerName, serving, with(func(r *request) { r.uris = []string{"spiffe://x"} })), found, Deny, "URI"},
		{"no names", csr(t, "a", nodeUser, nodeGroups, certv1.KubeletServingSignerName, serving, with(func(r *request) { r.dns, r.ips = nil, nil })), found, Deny, "names no DNS name"},
		{"bad signature", csr(t, "a", nodeUser, nodeGroups, certv1.KubeletServingSignerName, serving, with(func(r *request) { r.badSig = true })), found, Deny, ""},
		{"no instance", csr(t, "a", nodeUser, nodeGroups, certv1.KubeletServingSignerName, serving, good), func(string) (*Instance, error) { return nil, ErrNoInstance }, Deny, "no running EC2 instance of this cluster is node " + nodeName},
		{"EC2 unreachable", csr(t, "a", nodeUser, nodeGroups, certv1.KubeletServingSignerName, serving, good), func(string) (*Instance, error) { return nil, errors.New("throttled") }, Retry, "throttled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, reason := Decide(tt.csr, tt.lookup)
			if got != tt.want || !strings.Contains(reason, tt.reason) {
				t.Errorf("Decide = %s (%s), want %s (%s)", got, reason, tt.want, tt.reason)
			}
		})
	}
	decided := csr(t, "a", nodeUser, nodeGroups, certv1.KubeletServingSignerName, serving, good)
	decided.Status.Conditions = []certv1.CertificateSigningRequestCondition{{Type: certv1.CertificateDenied}}
	if v, _ := Decide(decided, found); v != Skip {
		t.Errorf("a decided request: %s", v)
	}
	garbage := csr(t, "a", nodeUser, nodeGroups, certv1.KubeletServingSignerName, serving, good)
	garbage.Spec.Request = []byte("not pem")
	if v, r := Decide(garbage, found); v != Deny || !strings.Contains(r, "not a PEM") {
		t.Errorf("garbage: %s %s", v, r)
	}
}

// approverMachine is a controller with the approver's plan.
func approverMachine(t *testing.T) (*agent.Env, *agenttest.Output) {
	t.Helper()
	e, out := agenttest.Machine(t, motoURL, "controller", "approve-csrs")
	agenttest.WritePlan(t, e, nodeplan.ApproverPath, &nodeplan.ApproverPlan{Kubeconfig: "/etc/kubernetes/admin.kubeconfig"})
	return e, out
}

// launch launches an instance of the cluster demo in moto.
func launch(t *testing.T, e *agent.Env) types.Instance {
	t.Helper()
	client := ec2.NewFromConfig(e.AWS)
	imgs, _ := client.DescribeImages(t.Context(), &ec2.DescribeImagesInput{})
	run, err := client.RunInstances(t.Context(), &ec2.RunInstancesInput{
		ImageId: imgs.Images[0].ImageId, MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeInstance, Tags: []types.Tag{{Key: aws.String("kubernetes.io/cluster/demo"), Value: aws.String("owned")}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return run.Instances[0]
}

// The approver against moto's EC2 and a fake API server: the request that
// matches its instance is approved, the one that does not is denied, a
// kubelet client CSR is left alone.
func TestApprover(t *testing.T) {
	e, out := approverMachine(t)
	worker := launch(t, e)
	name := aws.ToString(worker.PrivateDnsName)
	ip := aws.ToString(worker.PrivateIpAddress)
	user := "system:node:" + name
	ok := request{cn: user, orgs: []string{"system:nodes"}, dns: []string{name}, ips: []string{ip}}
	bad := ok
	bad.ips = []string{ip, "10.99.0.1"}
	cs := fake.NewClientset(
		csr(t, "serving-ok", user, nodeGroups, certv1.KubeletServingSignerName, serving, ok),
		csr(t, "client", "system:bootstrap:abcdef", []string{"system:bootstrappers"}, certv1.KubeAPIServerClientKubeletSignerName, []certv1.KeyUsage{certv1.UsageClientAuth}, request{cn: user, orgs: []string{"system:nodes"}}),
	)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() {
		done <- step.Run(ctx, e, &Step{Connect: func(string) (kubernetes.Interface, error) { return cs, nil }})
	}()
	// One more arrives while it runs.
	cs.CertificatesV1().CertificateSigningRequests().Create(t.Context(), csr(t, "serving-bad", user, nodeGroups, certv1.KubeletServingSignerName, serving, bad), metav1.CreateOptions{})

	condition := func(name string) certv1.RequestConditionType {
		c, err := cs.CertificatesV1().CertificateSigningRequests().Get(t.Context(), name, metav1.GetOptions{})
		if err != nil || len(c.Status.Conditions) == 0 {
			return ""
		}
		if c.Status.Conditions[0].Status != corev1.ConditionTrue {
			return "not true"
		}
		return c.Status.Conditions[0].Type
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) && (condition("serving-ok") == "" || condition("serving-bad") == "") {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("approver: %v", err)
	}
	if got := condition("serving-ok"); got != certv1.CertificateApproved {
		t.Errorf("serving-ok: %q\n%s", got, out)
	}
	if got := condition("serving-bad"); got != certv1.CertificateDenied {
		t.Errorf("serving-bad: %q\n%s", got, out)
	}
	if got := condition("client"); got != "" {
		t.Errorf("a kubelet client CSR was decided: %q", got)
	}
	if !strings.Contains(out.String(), "CSR serving-bad: Denied: 10.99.0.1 not of instance "+aws.ToString(worker.InstanceId)) {
		t.Errorf("output:\n%s", out)
	}
}

func TestEC2Lookup(t *testing.T) {
	e, _ := agenttest.Machine(t, motoURL, "controller", "approve-csrs")
	client := ec2.NewFromConfig(e.AWS)
	imgs, _ := client.DescribeImages(t.Context(), &ec2.DescribeImagesInput{})
	launch := func(cluster string) types.Instance {
		out, err := client.RunInstances(t.Context(), &ec2.RunInstancesInput{
			ImageId: imgs.Images[0].ImageId, MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
			TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeInstance, Tags: []types.Tag{{Key: aws.String("kubernetes.io/cluster/" + cluster), Value: aws.String("owned")}}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return out.Instances[0]
	}
	mine, theirs := launch("lookup"), launch("other-cluster")
	lookup := EC2Lookup(t.Context(), client, "lookup")
	inst, err := lookup(aws.ToString(mine.PrivateDnsName))
	if err != nil || inst.ID != aws.ToString(mine.InstanceId) || !inst.IPs[0].Equal(net.ParseIP(aws.ToString(mine.PrivateIpAddress))) {
		t.Errorf("by name: %+v %v", inst, err)
	}
	if inst, err := lookup(aws.ToString(mine.InstanceId)); err != nil || inst.ID != aws.ToString(mine.InstanceId) {
		t.Errorf("by id: %+v %v", inst, err)
	}
	if _, err := lookup(aws.ToString(theirs.PrivateDnsName)); !errors.Is(err, ErrNoInstance) {
		t.Errorf("another cluster's instance: %v", err)
	}
	client.TerminateInstances(t.Context(), &ec2.TerminateInstancesInput{InstanceIds: []string{aws.ToString(mine.InstanceId)}})
	if _, err := lookup(aws.ToString(mine.PrivateDnsName)); !errors.Is(err, ErrNoInstance) {
		t.Errorf("terminated: %v", err)
	}
}

// The dry run decides the requests waiting now, as the approver would, and
// records no decision.
func TestDryRun(t *testing.T) {
	e, out := approverMachine(t)
	worker := launch(t, e)
	name, id := aws.ToString(worker.PrivateDnsName), aws.ToString(worker.InstanceId)
	user := "system:node:" + name
	ok := request{cn: user, orgs: []string{"system:nodes"}, dns: []string{name}, ips: []string{aws.ToString(worker.PrivateIpAddress)}}
	bad := ok
	bad.ips = append(bad.ips, "10.99.0.1")
	cs := fake.NewClientset(
		csr(t, "serving-ok", user, nodeGroups, certv1.KubeletServingSignerName, serving, ok),
		csr(t, "serving-bad", user, nodeGroups, certv1.KubeletServingSignerName, serving, bad),
		csr(t, "client", "system:bootstrap:abcdef", []string{"system:bootstrappers"}, certv1.KubeAPIServerClientKubeletSignerName, []certv1.KeyUsage{certv1.UsageClientAuth}, request{cn: user, orgs: []string{"system:nodes"}}),
	)
	got, err := agenttest.DryRun(t, e, &Step{Connect: func(string) (kubernetes.Interface, error) { return cs, nil }})
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := []string{
		"run the kubelet serving CSR approver: until stopped, with /etc/kubernetes/admin.kubeconfig: approve the requests whose names and addresses are their node's EC2 instance's, deny the others",
		"deny CSR serving-bad: 10.99.0.1 not of instance " + id + " (node " + name + ")",
		"approve CSR serving-ok: names and addresses are instance " + id + "'s (node " + name + ")",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	list, _ := cs.CertificatesV1().CertificateSigningRequests().List(t.Context(), metav1.ListOptions{})
	for _, c := range list.Items {
		if len(c.Status.Conditions) > 0 {
			t.Errorf("the dry run decided %s: %v", c.Name, c.Status.Conditions)
		}
	}

	// A plan it cannot read is exit 3, as it would be for the approver.
	os.WriteFile(e.Path(nodeplan.ApproverPath), []byte(`{"kubeconfig": "/k", "extra": 1}`), 0o644)
	if _, err := agenttest.DryRun(t, e, New()); err == nil || agent.ExitCode(err) != agent.ExitBadInput {
		t.Errorf("a bad plan: %v", err)
	}
}
