package podidentitywebhook

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kube-aws/kube-aws/core/names"
)

// testCA is a CA of the test's own, as PEM and parsed.
func testCA(t *testing.T) (*x509.Certificate, crypto.Signer, []byte, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return ca, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk})
}

// trusting is an HTTPS client that trusts caPEM only, as the API server
// trusts the configuration's caBundle.
func trusting(t *testing.T, caPEM []byte) *http.Client {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		t.Fatal("the CA does not parse")
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
}

// The real server, its certificate from a test CA, answers an
// AdmissionReview posted by a client that trusts that CA only, on
// 127.0.0.1; the same client refuses a server of another CA.
func TestServeHTTPS(t *testing.T) {
	ca, caKey, caPEM, _ := testCA(t)
	m := &Mutator{Identity: testIdentity, Logf: t.Logf,
		ServiceAccounts: func(context.Context, string, string) (*corev1.ServiceAccount, error) {
			return sa("web", map[string]string{names.PodRoleARNAnnotation: roleARNValue}), nil
		}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var ready atomic.Bool
	go func() {
		done <- Serve(ctx, ln, (&Serving{CA: ca, CAKey: caKey}).GetCertificate, Handler(m, ready.Load))
	}()
	url := "https://" + ln.Addr().String() + "/mutate"

	// /healthz says whether the webhook is in service: what the add-ons
	// step waits for.
	for _, want := range []int{http.StatusServiceUnavailable, http.StatusOK} {
		if want == http.StatusOK {
			ready.Store(true)
		}
		resp, err := trusting(t, caPEM).Get("https://" + ln.Addr().String() + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("/healthz (ready %v): %s, want %d", ready.Load(), resp.Status, want)
		}
	}

	body, err := json.Marshal(request(pod(), admissionv1.Create, "pods"))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := trusting(t, caPEM).Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("posting the review: %v", err)
	}
	var out admissionv1.AdmissionReview
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("status %s, %v", resp.Status, err)
	}
	resp.Body.Close()
	if out.Response == nil || !out.Response.Allowed || out.Response.UID != "uid-1" || out.Kind != "AdmissionReview" {
		t.Fatalf("response %+v", out)
	}
	if got := applyPatch(t, mustJSON(t, pod()), out.Response.Patch); got.Spec.Containers[0].Env[0].Value != roleARNValue {
		t.Errorf("patched pod %+v", got.Spec)
	}
	cert := resp.TLS.PeerCertificates[0]
	if len(cert.IPAddresses) != 1 || !cert.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)) || len(cert.DNSNames) != 0 {
		t.Errorf("serving certificate names %v %v, want 127.0.0.1 only", cert.IPAddresses, cert.DNSNames)
	}

	for _, bad := range []struct {
		contentType, body string
		status            int
	}{
		{"text/plain", string(body), http.StatusUnsupportedMediaType},
		{"application/json", "{", http.StatusBadRequest},
		{"application/json", `{"kind": "AdmissionReview"}`, http.StatusBadRequest},
	} {
		resp, err := trusting(t, caPEM).Post(url, bad.contentType, strings.NewReader(bad.body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != bad.status {
			t.Errorf("%s %q: %s, want %d", bad.contentType, bad.body, resp.Status, bad.status)
		}
	}

	_, _, otherPEM, _ := testCA(t)
	if _, err := trusting(t, otherPEM).Post(url, "application/json", bytes.NewReader(body)); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client trusting another CA: %v, want a certificate error", err)
	}

	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve after its context ended: %v", err)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The serving certificate is kept for two thirds of its life, then a new
// one is issued.
func TestServingRenews(t *testing.T) {
	ca, caKey, _, _ := testCA(t)
	now := time.Now()
	s := &Serving{CA: ca, CAKey: caKey, Now: func() time.Time { return now }}
	first, err := s.GetCertificate(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Leaf.CheckSignatureFrom(ca); err != nil || first.Leaf.NotAfter.Sub(now) < CertLifetime-time.Minute {
		t.Fatalf("certificate %v, not after %s: %v", first.Leaf.Subject, first.Leaf.NotAfter, err)
	}
	now = now.Add(CertLifetime / 2)
	if again, _ := s.GetCertificate(nil); again != first {
		t.Error("a new certificate half way through the first's life")
	}
	now = now.Add(CertLifetime/6 + time.Minute)
	if renewed, err := s.GetCertificate(nil); err != nil || renewed == first || !renewed.Leaf.NotAfter.After(first.Leaf.NotAfter) {
		t.Errorf("no new certificate in the last third of the first's life (%v)", err)
	}
}
