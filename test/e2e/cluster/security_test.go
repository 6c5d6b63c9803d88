//go:build e2ecluster

package cluster

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// warnings collects the warnings the API server sends a client.
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, text)
}

func (w *warnings) all() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.msgs, "; ")
}

// securityDefaults checks the API server and kubelet defaults of
// docs/security.md on the booted cluster: Pod Security baseline enforced
// and restricted warned in default, the audit log written on the
// controllers, the kubelets' API refusing anonymous requests and serving a
// certificate of the cluster CA, and anonymous requests through the load
// balancer reaching /readyz and nothing else.
func (e *example) securityDefaults(ctx context.Context, t *testing.T) {
	_, cfg, err := e.kube(ctx)
	if err != nil {
		t.Fatal(err)
	}
	w := &warnings{}
	wcfg := rest.CopyConfig(cfg)
	wcfg.WarningHandler = w
	cs, err := kubernetes.NewForConfig(wcfg)
	if err != nil {
		t.Fatal(err)
	}
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	pod := func(name string, privileged bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "c", Image: probeImage, ImagePullPolicy: corev1.PullNever}}}}
		if privileged {
			p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: &privileged}
		}
		return p
	}

	// Pod Security: baseline refuses a privileged pod in default.
	_, err = cs.CoreV1().Pods("default").Create(ctx, pod("e2e-privileged", true), dry)
	switch {
	case err == nil:
		t.Errorf("a privileged pod in default was admitted; Pod Security baseline must refuse it")
	case !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `violates PodSecurity "baseline:latest"`):
		t.Errorf("a privileged pod in default: %v; want forbidden, naming PodSecurity baseline", err)
	default:
		t.Logf("Pod Security: a privileged pod in default is refused: %v", err)
	}
	// A pod baseline admits but restricted does not: admitted, warned.
	w.mu.Lock()
	w.msgs = nil
	w.mu.Unlock()
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod("e2e-unrestricted", false), dry); err != nil {
		t.Errorf("a baseline pod in default was refused: %v", err)
	} else if got := w.all(); !strings.Contains(got, `would violate PodSecurity "restricted:latest"`) {
		t.Errorf("a baseline pod in default was admitted with warnings %q; want one naming PodSecurity restricted", got)
	} else {
		t.Logf("Pod Security: a pod baseline admits but restricted does not is admitted, warned: %s", got)
	}

	// The audit log on every controller, with the restricted level's
	// violations annotated on some controller (the one that served the
	// dry run).
	annotated := 0
	for _, c := range e.live(ctx, t, "-control-plane") {
		out, err := e.inMachine(ctx, c.id, "sh", "-c", "wc -l < /var/log/kube-apiserver/audit.log; grep -c 'pod-security.kubernetes.io/audit-violations' /var/log/kube-apiserver/audit.log || true; ls -l /var/log/kube-apiserver/audit.log")
		if err != nil {
			t.Errorf("%s: the audit log: %v", c.id, err)
			continue
		}
		var lines, violations int
		if _, err := fmt.Sscan(out, &lines, &violations); err != nil || lines == 0 {
			t.Errorf("%s: the audit log /var/log/kube-apiserver/audit.log has no entries: %q", c.id, out)
			continue
		}
		annotated += violations
		t.Logf("audit log on %s: %d entries, %d annotated with Pod Security restricted violations", c.id, lines, violations)
	}
	if annotated == 0 {
		t.Errorf("no controller's audit log annotates the restricted violation of the dry-run pod")
	}

	// The kubelets: anonymous requests refused, serving certificates of
	// the cluster CA.
	roots, err := clusterCA(cfg)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes.Items {
		var ip string
		for _, a := range n.Status.Addresses {
			if a.Type == corev1.NodeInternalIP {
				ip = a.Address
			}
		}
		if ip == "" {
			t.Errorf("node %s has no InternalIP", n.Name)
			continue
		}
		var code int
		var chain string
		kctx, cancel := context.WithTimeout(ctx, time.Minute)
		err := eventually(kctx, "the kubelet of "+n.Name, func() error {
			var err error
			code, chain, err = e.anonymousKubelet(kctx, ip, roots)
			return err
		})
		cancel()
		switch {
		case err != nil:
			t.Errorf("node %s: %v", n.Name, err)
		case code != http.StatusUnauthorized && code != http.StatusForbidden:
			t.Errorf("node %s: an anonymous GET /pods from its kubelet (%s:10250) answered %d, want 401 or 403", n.Name, ip, code)
		default:
			t.Logf("kubelet of %s: anonymous GET /pods answered %d; serving certificate %s", n.Name, code, chain)
		}
	}

	// Anonymous requests through the load balancer: /readyz (the load
	// balancer's health check) answers, nothing else does, /version
	// included, which RBAC alone would let through.
	hc := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: cfg.Dial, TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: true}}
	get := func(path string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(cfg.Host, "/")+path, nil)
		if err != nil {
			return 0, "", err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String(), nil
	}
	code, body, err := get("/readyz")
	if err != nil || code != 200 || body != "ok" {
		t.Errorf("anonymous /readyz through the load balancer: %d %q (%v), want 200 ok", code, body, err)
	}
	for _, p := range []string{"/version", "/api"} {
		c, b, err := get(p)
		if err != nil || c != http.StatusUnauthorized {
			t.Errorf("anonymous %s through the load balancer: %d %q (%v), want 401: anonymous requests reach the health endpoints only", p, c, b, err)
		}
	}
	t.Logf("anonymous requests through the load balancer: /readyz %d %q; /version and /api 401", code, body)
}

// clusterCA is the cluster CA of the admin kubeconfig.
func clusterCA(cfg *rest.Config) (*x509.CertPool, error) {
	pem := cfg.TLSClientConfig.CAData
	if len(pem) == 0 && cfg.TLSClientConfig.CAFile != "" {
		var err error
		if pem, err = os.ReadFile(cfg.TLSClientConfig.CAFile); err != nil {
			return nil, err
		}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("the admin kubeconfig holds no CA certificate")
	}
	return pool, nil
}

// anonymousKubelet asks the kubelet at ip for its pods without credentials
// and returns the answer's status and its serving certificate, verified
// against roots for ip.
func (e *example) anonymousKubelet(ctx context.Context, ip string, roots *x509.CertPool) (int, string, error) {
	addr := net.JoinHostPort(ip, "10250")
	var leaf *x509.Certificate
	tr := &http.Transport{
		DialContext: e.h.NS.DialContext, DisableKeepAlives: true,
		TLSClientConfig: &tls.Config{ServerName: ip, RootCAs: roots, VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) > 0 {
				leaf = cs.PeerCertificates[0]
			}
			return nil
		}},
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/pods", nil)
	if err != nil {
		return 0, "", err
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second, Transport: tr}).Do(req)
	if err != nil {
		// Verification failed, or the kubelet serves no certificate yet.
		if leaf != nil {
			return 0, "", fmt.Errorf("serving certificate %q (issuer %q) does not verify against the cluster CA for %s: %w", leaf.Subject, leaf.Issuer, ip, err)
		}
		return 0, "", err
	}
	defer resp.Body.Close()
	return resp.StatusCode, fmt.Sprintf("%q issued by %q, verified against the cluster CA for %s", leaf.Subject.CommonName, leaf.Issuer.CommonName, ip), nil
}
