package addons

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/test/agenttest"
)

// On a controller that runs the pod identity webhook, the releases wait
// until it says it is in service; elsewhere nothing is waited for; and a
// webhook that never comes fails the step, naming it.
func TestWaitWebhook(t *testing.T) {
	var calls atomic.Int32
	readyAfter := int32(2)
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		if calls.Add(1) <= readyAfter {
			http.Error(w, "not yet", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})

	tests := []struct {
		name     string
		plan     bool
		never    bool
		wantErr  string
		minCalls int32
	}{
		{name: "no webhook on this machine", plan: false},
		{name: "waits until in service", plan: true, minCalls: 3},
		{name: "never in service", plan: true, never: true, wantErr: "was not in service after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls.Store(0)
			readyAfter = 2
			if tt.never {
				readyAfter = 1 << 30
			}
			e, _ := agenttest.Machine(t, motoURL, "controller", nodeplan.StepAddons)
			if err := os.MkdirAll(filepath.Dir(e.Path(names.PKICACert)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(e.Path(names.PKICACert), caPEM, 0o644); err != nil {
				t.Fatal(err)
			}
			if tt.plan {
				agenttest.WritePlan(t, e, nodeplan.PodIdentityWebhookPath, &nodeplan.PodIdentityWebhookPlan{
					Kubeconfig: names.KubeconfigAdmin, CACert: names.PKICACert, CAKey: names.PKICAKey})
			}
			s := &Step{APITimeout: 4 * time.Second, WebhookHealth: srv.URL + "/healthz"}
			err := s.waitWebhook(context.Background(), e)
			switch {
			case tt.wantErr != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "journalctl -u kube-aws-pod-identity-webhook") {
					t.Fatalf("error %v, want one containing %q and naming the unit", err, tt.wantErr)
				}
			case err != nil:
				t.Fatal(err)
			}
			if got := calls.Load(); got < tt.minCalls || (!tt.plan && got != 0) {
				t.Errorf("%d health checks, want at least %d (none without the plan)", got, tt.minCalls)
			}
		})
	}
}
