package podidentitywebhook

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/awsenv"
	"github.com/kube-aws/kube-aws/node/report"
)

// syncBuffer is a log both the test and the server write.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// controller is a controller's files under a temporary root: the plan and
// the cluster CA.
func controller(t *testing.T, withPlan bool) (*agent.Env, *syncBuffer, []byte) {
	t.Helper()
	root := t.TempDir()
	_, _, caPEM, keyPEM := testCA(t)
	write := func(p string, b []byte) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, p), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(names.PKICACert, caPEM)
	write(names.PKICAKey, keyPEM)
	if withPlan {
		plan, err := nodeplan.Encode(&nodeplan.PodIdentityWebhookPlan{Kubeconfig: names.KubeconfigAdmin, CACert: names.PKICACert, CAKey: names.PKICAKey})
		if err != nil {
			t.Fatal(err)
		}
		write(nodeplan.PodIdentityWebhookPath, plan)
	}
	log := &syncBuffer{}
	e := &agent.Env{Step: nodeplan.StepPodIdentityWebhook, Root: root, Stderr: log,
		Settings: nodeplan.Settings{Cluster: "demo", Region: "us-gov-west-1", Role: names.RoleController, Bucket: "b"},
		Report:   &report.Reporter{Role: names.RoleController, Out: log}}
	return e, log, caPEM
}

func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// The step on a controller: Check says it will serve and create the
// configuration, and changes nothing; Apply serves a pod of a service
// account naming a pod role (the account from the instance identity, the
// partition from the region, the machine's endpoints), keeps the
// configuration, and stops cleanly with its context.
func TestStep(t *testing.T) {
	e, log, caPEM := controller(t, true)
	kube := fake.NewClientset(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web",
		Annotations: map[string]string{names.PodRoleNameAnnotation: "reader"}}})
	s := New()
	var connected string
	s.Connect = func(kc string) (kubernetes.Interface, error) { connected = kc; return kube, nil }
	s.Account = func(context.Context, aws.Config) (string, error) { return "123456789012", nil }
	s.Environ = func() []string {
		return []string{"AWS_ENDPOINT_URL_STS=http://sts.test", "HOME=/root", "AWS_ENDPOINT_URL=http://aws.test"}
	}
	s.Listen = freeAddr(t)
	s.Resync = 50 * time.Millisecond

	changes, err := s.Check(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	if connected != filepath.Join(e.Root, names.KubeconfigAdmin) {
		t.Errorf("connected with %s", connected)
	}
	if len(changes) != 2 || changes[0].Action != "serve" || changes[1].Action != "create" || changes[1].Target != "MutatingWebhookConfiguration kube-aws-pod-identity" ||
		!strings.Contains(changes[0].Detail, "arn:aws-us-gov:iam::123456789012:role/demo-pod-<name>") || !strings.Contains(changes[0].Detail, "AWS_ENDPOINT_URL AWS_ENDPOINT_URL_STS") {
		t.Fatalf("changes %v", changes)
	}
	if n := len(writes(kube.Actions())); n != 0 {
		t.Fatalf("Check wrote %d objects", n)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Apply(ctx, e, changes) }()
	api := kube.AdmissionregistrationV1().MutatingWebhookConfigurations()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := api.Get(context.Background(), names.PodIdentityWebhookConfiguration, metav1.GetOptions{})
		if err == nil {
			if !Current(got, Configuration(caPEM)) {
				t.Fatalf("configuration %+v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no configuration after 10s: %v\n%s", err, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Deleted by someone: made again on the next resync.
	if err := api.Delete(context.Background(), names.PodIdentityWebhookConfiguration, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := api.Get(context.Background(), names.PodIdentityWebhookConfiguration, metav1.GetOptions{}); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the deleted configuration is not made again\n%s", log)
		}
		time.Sleep(20 * time.Millisecond)
	}

	body, err := json.Marshal(request(pod(), admissionv1.Create, "pods"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := trusting(t, caPEM).Post("https://"+s.Listen+"/mutate", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("posting the review: %v\n%s", err, log)
	}
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := applyPatch(t, mustJSON(t, pod()), out.Response.Patch)
	env := map[string]string{}
	for _, v := range got.Spec.Containers[0].Env {
		env[v.Name] = v.Value
	}
	for k, v := range map[string]string{"AWS_ROLE_ARN": "arn:aws-us-gov:iam::123456789012:role/demo-pod-reader", "AWS_REGION": "us-gov-west-1",
		"AWS_ENDPOINT_URL": "http://aws.test", "AWS_ENDPOINT_URL_STS": "http://sts.test"} {
		if env[k] != v {
			t.Errorf("%s = %q, want %q (env %v)", k, env[k], v, env)
		}
	}
	if _, ok := env["HOME"]; ok {
		t.Error("the machine's HOME went into the pod")
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Apply after its context ended: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Apply did not stop with its context")
	}
	for _, line := range []string{"serving on https://" + s.Listen + "/mutate", "MutatingWebhookConfiguration kube-aws-pod-identity created",
		"pod apps/web-*: service account apps/web: IAM role arn:aws-us-gov:iam::123456789012:role/demo-pod-reader"} {
		if !strings.Contains(log.String(), line) {
			t.Errorf("log has no %q:\n%s", line, log)
		}
	}
	if _, err := api.Get(context.Background(), names.PodIdentityWebhookConfiguration, metav1.GetOptions{}); err != nil {
		t.Errorf("the configuration went with the webhook: %v", err)
	}
}

// A controller without the plan, or with a bad flag, is a bad input; a
// configuration already current is no change.
func TestCheck(t *testing.T) {
	e, _, _ := controller(t, false)
	s := New()
	s.Connect = func(string) (kubernetes.Interface, error) { return fake.NewClientset(), nil }
	s.Account = func(context.Context, aws.Config) (string, error) { return "123456789012", nil }
	if _, err := s.Check(context.Background(), e); err == nil || agent.ExitCode(err) != agent.ExitBadInput || !strings.Contains(err.Error(), "no pod identity webhook plan") {
		t.Errorf("no plan: %v", err)
	}

	e, log, caPEM := controller(t, true)
	s.Connect = func(string) (kubernetes.Interface, error) { return fake.NewClientset(Configuration(caPEM)), nil }
	changes, err := s.Check(context.Background(), e)
	if err != nil || len(changes) != 1 || changes[0].Action != "serve" || !strings.Contains(log.String(), "is current") {
		t.Errorf("a current configuration: %v, %v\n%s", changes, err, log)
	}
	s.Resync = 0
	if _, err := s.Check(context.Background(), e); err == nil || agent.ExitCode(err) != agent.ExitBadInput {
		t.Errorf("--resync 0: %v", err)
	}
}

// The account is the instance identity document's, read with IMDSv2
// where the machine's SDK settings point.
func TestInstanceAccount(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPut && r.URL.Path == "/latest/api/token":
			w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", "21600")
			w.Write([]byte("token"))
		case r.URL.Path == "/latest/dynamic/instance-identity/document" && r.Header.Get("X-Aws-Ec2-Metadata-Token") == "token":
			w.Write([]byte(`{"accountId": "123456789012", "region": "us-east-1", "instanceId": "i-0123456789abcdef0"}`))
		default:
			http.Error(w, "no", http.StatusUnauthorized)
		}
	}))
	defer srv.Close()
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", srv.URL)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "")
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
	cfg, err := awsenv.Load(context.Background(), "us-east-1")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := InstanceAccount(context.Background(), cfg); err != nil || got != "123456789012" {
		t.Errorf("InstanceAccount = %q, %v", got, err)
	}
}
