package kube

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// kubeconfig writes a kubeconfig for server.
func kubeconfig(t *testing.T, server string) string {
	p := filepath.Join(t.TempDir(), "kubeconfig")
	os.WriteFile(p, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`, server)), 0o600)
	return p
}

// An API server that answers /readyz with 500, then not ok, then ok.
func TestWaitReady(t *testing.T) {
	var calls atomic.Int64
	var broken atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readyz" {
			http.NotFound(w, r)
			return
		}
		switch n := calls.Add(1); {
		case broken.Load():
			http.Error(w, "etcd is gone", http.StatusInternalServerError)
		case n == 1:
			http.Error(w, "etcd not ready", http.StatusInternalServerError)
		case n == 2:
			fmt.Fprint(w, "[-]etcd failed")
		default:
			fmt.Fprint(w, "ok")
		}
	}))
	defer srv.Close()
	cs, err := Clientset(kubeconfig(t, srv.URL))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	if err := WaitReady(ctx, cs, t.Logf); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 3 {
		t.Errorf("%d calls", calls.Load())
	}
	// Never ready: the error says why.
	broken.Store(true)
	ctx, cancel = context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	if err := WaitReady(ctx, cs, t.Logf); err == nil || !strings.Contains(err.Error(), "the API server is not ready") {
		t.Errorf("err = %v", err)
	}
}

func TestConfigErrors(t *testing.T) {
	if _, err := Config("/nonexistent/kubeconfig"); err == nil || !strings.Contains(err.Error(), "kubeconfig /nonexistent/kubeconfig") {
		t.Errorf("err = %v", err)
	}
}
