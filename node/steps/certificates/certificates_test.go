package certificates

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/report"
	"github.com/kube-aws/kube-aws/node/step"
	"github.com/kube-aws/kube-aws/test/agenttest"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// newCA writes a CA certificate and key under root.
func newCA(t *testing.T, root, name string, isCA bool, notAfter time.Time) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: now.Add(-time.Hour), NotAfter: notAfter,
		IsCA: isCA, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	os.MkdirAll(filepath.Join(root, "/etc/pki"), 0o755)
	os.WriteFile(filepath.Join(root, "/etc/pki", name+".pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(filepath.Join(root, "/etc/pki", name+"-key.pem"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
}

func env(t *testing.T) (*agent.Env, *agenttest.Output) {
	out := &agenttest.Output{}
	return &agent.Env{
		Step: "certificates", Root: t.TempDir(), Report: &report.Reporter{Out: out},
		Facts: nodeplan.Facts{nodeplan.FactPrivateIPv4: "10.0.1.23", nodeplan.FactHostname: "ip-10-0-1-23.ec2.internal", "member": "etcd1"},
	}, out
}

func etcdPeer() nodeplan.Certificate {
	return nodeplan.Certificate{
		Name: "etcd-peer", CACert: "/etc/pki/etcd-ca.pem", CAKey: "/etc/pki/etcd-ca-key.pem",
		Subject: nodeplan.Subject{CommonName: "{member}", Organizations: []string{"kube-aws"}},
		Usages:  []nodeplan.Usage{nodeplan.UsageServerAuth, nodeplan.UsageClientAuth}, Validity: "720h",
		DNSNames: []string{"{member}.demo.internal", "{hostname}"}, IPAddresses: []string{"{privateIPv4}", "127.0.0.1"},
		Cert: "/etc/etcd/peer.pem", Key: "/etc/etcd/peer-key.pem", Owner: "nobody",
		Kubeconfig: &nodeplan.Kubeconfig{Path: "/etc/etcd/peer.kubeconfig", Server: "https://{privateIPv4}:6443", User: "etcd"},
	}
}

func readCert(t *testing.T, p string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func ensure(t *testing.T, e *agent.Env, c nodeplan.Certificate, at time.Time) bool {
	t.Helper()
	s, err := Resolve(e, "certificates[0]", c)
	if err != nil {
		t.Fatal(err)
	}
	issued, err := Ensure(e.Root, s, at)
	if err != nil {
		t.Fatal(err)
	}
	return issued
}

func TestIssue(t *testing.T) {
	e, _ := env(t)
	newCA(t, e.Root, "etcd-ca", true, now.Add(10*365*24*time.Hour))
	if !ensure(t, e, etcdPeer(), now) {
		t.Fatal("nothing issued")
	}
	c := readCert(t, e.Path("/etc/etcd/peer.pem"))
	ca := readCert(t, e.Path("/etc/pki/etcd-ca.pem"))
	if err := c.CheckSignatureFrom(ca); err != nil {
		t.Errorf("not signed by the CA: %v", err)
	}
	if c.Subject.CommonName != "etcd1" || c.Subject.Organization[0] != "kube-aws" {
		t.Errorf("subject = %v", c.Subject)
	}
	if strings.Join(c.DNSNames, ",") != "etcd1.demo.internal,ip-10-0-1-23.ec2.internal" {
		t.Errorf("DNS names = %v", c.DNSNames)
	}
	if len(c.IPAddresses) != 2 || !c.IPAddresses[0].Equal(net.ParseIP("10.0.1.23")) || !c.IPAddresses[1].Equal(net.ParseIP("127.0.0.1")) {
		t.Errorf("IPs = %v", c.IPAddresses)
	}
	if len(c.ExtKeyUsage) != 2 || c.IsCA || c.NotAfter.Sub(now) != 720*time.Hour {
		t.Errorf("usages %v, CA %v, valid until %s", c.ExtKeyUsage, c.IsCA, c.NotAfter)
	}
	// A TLS stack accepts it for what it is for.
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	if _, err := c.Verify(x509.VerifyOptions{Roots: pool, DNSName: "etcd1.demo.internal", CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("verify: %v", err)
	}
	key, _ := os.Stat(e.Path("/etc/etcd/peer-key.pem"))
	if key.Mode().Perm() != 0o600 || key.Sys().(*syscall.Stat_t).Uid != 65534 {
		t.Errorf("key mode %v owner %d", key.Mode(), key.Sys().(*syscall.Stat_t).Uid)
	}
	kc, err := clientcmd.LoadFromFile(e.Path("/etc/etcd/peer.kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	if kc.Clusters["kubernetes"].Server != "https://10.0.1.23:6443" || kc.AuthInfos["etcd"].ClientCertificate != "/etc/etcd/peer.pem" || kc.Clusters["kubernetes"].CertificateAuthority != "/etc/pki/etcd-ca.pem" || kc.CurrentContext != "default" {
		t.Errorf("kubeconfig = %+v", kc)
	}

	serial := c.SerialNumber
	// Again: kept.
	if ensure(t, e, etcdPeer(), now.Add(time.Hour)) || readCert(t, e.Path("/etc/etcd/peer.pem")).SerialNumber.Cmp(serial) != 0 {
		t.Error("a current certificate was issued again")
	}
	tests := []struct {
		name   string
		change func(c *nodeplan.Certificate)
		at     time.Time
		setup  func()
	}{
		{"names changed", func(c *nodeplan.Certificate) { c.DNSNames = append(c.DNSNames, "localhost") }, now, nil},
		{"usages changed", func(c *nodeplan.Certificate) { c.Usages = []nodeplan.Usage{nodeplan.UsageServerAuth} }, now, nil},
		{"subject changed", func(c *nodeplan.Certificate) { c.Subject.Organizations = nil }, now, nil},
		{"two thirds of its life gone", func(*nodeplan.Certificate) {}, now.Add(481 * time.Hour), nil},
		{"another CA", func(*nodeplan.Certificate) {}, now, func() { newCA(t, e.Root, "etcd-ca", true, now.Add(1000*time.Hour)) }},
		{"key lost", func(*nodeplan.Certificate) {}, now, func() { os.Remove(e.Path("/etc/etcd/peer-key.pem")) }},
	}
	for _, tt := range tests {
		if tt.setup != nil {
			tt.setup()
		}
		before := readCert(t, e.Path("/etc/etcd/peer.pem")).SerialNumber
		c := etcdPeer()
		tt.change(&c)
		if !ensure(t, e, c, tt.at) || readCert(t, e.Path("/etc/etcd/peer.pem")).SerialNumber.Cmp(before) == 0 {
			t.Errorf("%s: not issued again", tt.name)
		}
		// Put it back for the next case.
		ensure(t, e, etcdPeer(), tt.at)
	}
}

func TestIssueRSAAndCappedValidity(t *testing.T) {
	e, _ := env(t)
	newCA(t, e.Root, "ca", true, now.Add(100*time.Hour))
	c := nodeplan.Certificate{Name: "apiserver", CACert: "/etc/pki/ca.pem", CAKey: "/etc/pki/ca-key.pem", Subject: nodeplan.Subject{CommonName: "kube-apiserver"},
		Usages: []nodeplan.Usage{nodeplan.UsageServerAuth}, KeyAlgorithm: nodeplan.KeyRSA2048, Cert: "/a.pem", Key: "/a-key.pem"}
	ensure(t, e, c, now)
	crt := readCert(t, e.Path("/a.pem"))
	if _, ok := crt.PublicKey.(*rsa.PublicKey); !ok {
		t.Errorf("key is %T", crt.PublicKey)
	}
	if !crt.NotAfter.Equal(now.Add(100 * time.Hour)) {
		t.Errorf("valid until %s, past its CA", crt.NotAfter)
	}
}

func TestRunAndErrors(t *testing.T) {
	e, out := env(t)
	newCA(t, e.Root, "etcd-ca", true, now.Add(time.Hour*24*3650))
	b, _ := nodeplan.Encode(&nodeplan.CertificatesPlan{Certificates: []nodeplan.Certificate{etcdPeer()}})
	os.MkdirAll(e.Path(nodeplan.Dir), 0o755)
	os.WriteFile(e.Path(nodeplan.CertificatesPath), b, 0o644)
	if err := step.Run(t.Context(), e, New()); err != nil {
		t.Fatal(err)
	}
	if err := step.Run(t.Context(), e, New()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "etcd-peer: issued /etc/etcd/peer.pem (CN etcd1") || !strings.Contains(out.String(), "etcd-peer: /etc/etcd/peer.pem is current, kept") {
		t.Errorf("output:\n%s", out)
	}

	tests := []struct {
		name   string
		setup  func(root string)
		change func(c *nodeplan.Certificate)
		want   string
		code   int
	}{
		{"not a CA", func(root string) { newCA(t, root, "etcd-ca", false, now.Add(time.Hour)) }, nil, "is not a CA certificate", agent.ExitBadInput},
		{"expired CA", func(root string) { newCA(t, root, "etcd-ca", true, now.Add(-time.Minute)) }, nil, "expired at", agent.ExitBadInput},
		{"key of another CA", func(root string) {
			newCA(t, root, "etcd-ca", true, now.Add(time.Hour))
			newCA(t, root, "other", true, now.Add(time.Hour))
			os.Rename(filepath.Join(root, "/etc/pki/other-key.pem"), filepath.Join(root, "/etc/pki/etcd-ca-key.pem"))
		}, nil, "does not belong to CA certificate", agent.ExitBadInput},
		{"marker not substituted", func(root string) {
			newCA(t, root, "etcd-ca", true, now.Add(time.Hour))
			os.WriteFile(filepath.Join(root, "/etc/pki/etcd-ca-key.pem"), []byte("((secret:credentials/etcdCAKey))\n"), 0o600)
		}, nil, "still holds a secret marker: run the secrets step first", agent.ExitBadInput},
		{"missing CA", func(string) {}, nil, "CA certificate: open", agent.ExitFailed},
		{"unknown fact", func(root string) { newCA(t, root, "etcd-ca", true, now.Add(time.Hour)) }, func(c *nodeplan.Certificate) { c.DNSNames = []string{"{zone}.x"} }, "certificates[0].dnsNames", agent.ExitBadInput},
		{"fact is not an IP", func(root string) { newCA(t, root, "etcd-ca", true, now.Add(time.Hour)) }, func(c *nodeplan.Certificate) { c.IPAddresses = []string{"{hostname}"} }, "is not an IP address", agent.ExitBadInput},
		{"unknown owner", func(root string) { newCA(t, root, "etcd-ca", true, now.Add(time.Hour)) }, func(c *nodeplan.Certificate) { c.Owner = "etcd-kube-aws-missing" }, `no user "etcd-kube-aws-missing"`, agent.ExitBadInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := env(t)
			tt.setup(e.Root)
			c := etcdPeer()
			if tt.change != nil {
				tt.change(&c)
			}
			s, err := Resolve(e, "certificates[0]", c)
			if err == nil {
				_, err = Ensure(e.Root, s, now)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) || agent.ExitCode(err) != tt.code {
				t.Fatalf("err = %v (exit %d), want %q (exit %d)", err, agent.ExitCode(err), tt.want, tt.code)
			}
			if _, err := os.Stat(e.Path(c.Cert)); err == nil {
				t.Error("a certificate was written")
			}
		})
	}
}

// The dry run says what would be issued or written, and changes nothing.
func TestDryRun(t *testing.T) {
	peer := "issue /etc/etcd/peer.pem: etcd-peer: CN etcd1, DNS [etcd1.demo.internal ip-10-0-1-23.ec2.internal], IP [10.0.1.23 127.0.0.1], until 2026-03-31T12:00:00Z"
	tests := []struct {
		name  string
		setup func(t *testing.T, e *agent.Env)
		want  agenttest.Want
	}{
		{name: "nothing issued yet", want: agenttest.Want{Changes: []string{peer}}},
		{name: "current", setup: func(t *testing.T, e *agent.Env) { ensure(t, e, etcdPeer(), now) }},
		{name: "a third of its life left", setup: func(t *testing.T, e *agent.Env) { ensure(t, e, etcdPeer(), now.Add(-500*time.Hour)) }, want: agenttest.Want{Changes: []string{peer}}},
		{name: "kubeconfig changed by hand", setup: func(t *testing.T, e *agent.Env) {
			ensure(t, e, etcdPeer(), now)
			os.WriteFile(e.Path("/etc/etcd/peer.kubeconfig"), []byte("edited"), 0o600)
		}, want: agenttest.Want{Changes: []string{"write /etc/etcd/peer.kubeconfig: etcd-peer: a kubeconfig with /etc/etcd/peer.pem"}}},
		{name: "CA key not decrypted yet", setup: func(t *testing.T, e *agent.Env) {
			os.WriteFile(e.Path("/etc/pki/etcd-ca-key.pem"), []byte("((secret:credentials/etcdCAKey))\n"), 0o600)
		}, want: agenttest.Want{Err: "run the secrets step first", Code: agent.ExitBadInput}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := env(t)
			newCA(t, e.Root, "etcd-ca", true, now.Add(10*365*24*time.Hour))
			b, _ := nodeplan.Encode(&nodeplan.CertificatesPlan{Certificates: []nodeplan.Certificate{etcdPeer()}})
			os.MkdirAll(e.Path(nodeplan.Dir), 0o755)
			os.WriteFile(e.Path(nodeplan.CertificatesPath), b, 0o644)
			if tt.setup != nil {
				tt.setup(t, e)
			}
			agenttest.ExpectDryRun(t, e, &Step{Now: func() time.Time { return now }}, tt.want)
		})
	}
}
