package waitapi

import (
	"encoding/base64"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/kube"
	"github.com/kube-aws/kube-aws/node/report"
	"github.com/kube-aws/kube-aws/node/step"
	"github.com/kube-aws/kube-aws/test/agenttest"
)

// apiServer answers 401 (the bootstrap token does not exist yet) until
// unauthorized requests were made, then ok.
func apiServer(t *testing.T, unauthorized int32) (*httptest.Server, *atomic.Int32) {
	var n atomic.Int32
	// TLS: clientcmd sends a kubeconfig's credentials only over TLS.
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" || r.Header.Get("Authorization") != "Bearer abcdef.0123456789abcdef" {
			http.Error(w, "unexpected", http.StatusBadRequest)
			return
		}
		if n.Add(1) <= unauthorized {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		w.Write([]byte("ok"))
	}))
	t.Cleanup(s.Close)
	return s, &n
}

func kubeconfig(t *testing.T, e *agent.Env, s *httptest.Server) string {
	const p = "/etc/kubernetes/bootstrap-kubelet.conf"
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
	c := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: " + s.URL + "\n    certificate-authority-data: " + base64.StdEncoding.EncodeToString(ca) + "\nusers:\n- name: u\n  user:\n    token: abcdef.0123456789abcdef\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"
	if err := os.MkdirAll(filepath.Dir(e.Path(p)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.Path(p), []byte(c), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestWaitAPI(t *testing.T) {
	tests := []struct {
		name         string
		unauthorized int32
		joined       bool // the kubelet's kubeconfig exists
		timeout      time.Duration
		want         string // in the error; "" for success
		asked        bool
	}{
		{name: "answers once the token exists", unauthorized: 3, timeout: 30 * time.Second, asked: true},
		{name: "already joined", unauthorized: 1 << 30, joined: true, timeout: time.Second},
		{name: "never answers", unauthorized: 1 << 30, timeout: 1500 * time.Millisecond, want: "the API server is not ready", asked: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := &agenttest.Output{}
			root := t.TempDir()
			// A bare Env: the step reads nothing of AWS, the instance or S3.
			e := &agent.Env{Step: "wait-api", Root: root, Report: &report.Reporter{Role: "nodepool-a", Out: out, Start: time.Now(), Local: root + "/status.json"}}
			s, n := apiServer(t, tt.unauthorized)
			kc := kubeconfig(t, e, s)
			if tt.joined {
				os.WriteFile(e.Path("/etc/kubernetes/kubelet.conf"), []byte("x"), 0o600)
			}
			err := step.Run(t.Context(), e, &Step{Kubeconfig: kc, UnlessExists: "/etc/kubernetes/kubelet.conf", Timeout: tt.timeout, Connect: kube.Clientset})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("%v\n%s", err, out)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("err = %v, want %q", err, tt.want)
			}
			if (n.Load() > 0) != tt.asked {
				t.Errorf("the API server was asked %d times", n.Load())
			}
		})
	}
}

// The dry run says what the step would wait for, and asks nothing.
func TestDryRun(t *testing.T) {
	tests := []struct {
		name       string
		kubeconfig bool
		joined     bool
		want       agenttest.Want
	}{
		{name: "not joined", kubeconfig: true, want: agenttest.Want{Changes: []string{"wait the API server: until it answers /readyz to /etc/kubernetes/bootstrap-kubelet.conf's credential, up to 15m0s"}}},
		{name: "already joined", kubeconfig: true, joined: true},
		{name: "no kubeconfig", want: agenttest.Want{Err: "--kubeconfig is required", Code: agent.ExitBadInput}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			e := &agent.Env{Step: "wait-api", Root: root, Report: &report.Reporter{Out: &agenttest.Output{}}}
			srv, n := apiServer(t, 0)
			s := &Step{UnlessExists: "/etc/kubernetes/kubelet.conf", Timeout: 15 * time.Minute, Connect: kube.Clientset}
			if tt.kubeconfig {
				s.Kubeconfig = kubeconfig(t, e, srv)
			}
			if tt.joined {
				os.WriteFile(e.Path("/etc/kubernetes/kubelet.conf"), []byte("x"), 0o600)
			}
			agenttest.ExpectDryRun(t, e, s, tt.want)
			if n.Load() != 0 {
				t.Errorf("the API server was asked %d times", n.Load())
			}
		})
	}
}
