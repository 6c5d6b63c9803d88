// Package etcdtest runs a real etcd member (etcd's embed package) with
// client TLS for tests of the steps that talk to etcd, with a CA and
// certificates issued by the certificates step's own code, as a machine
// has them.
package etcdtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/steps/certificates"
)

// Paths of the member's PKI under the machine's root.
const (
	CACert     = "/etc/etcd/pki/ca.pem"
	CAKey      = "/etc/etcd/pki/ca-key.pem"
	ServerCert = "/etc/etcd/pki/server.pem"
	ServerKey  = "/etc/etcd/pki/server-key.pem"
	ClientCert = "/etc/etcd/pki/client.pem"
	ClientKey  = "/etc/etcd/pki/client-key.pem"
)

// Member is a running member.
type Member struct {
	// ClientURL is where it serves clients, with TLS.
	ClientURL string
	Etcd      *embed.Etcd
}

// Goal is the goal plan's etcd section for the member.
func (m *Member) Goal() *nodeplan.EtcdGoal {
	return &nodeplan.EtcdGoal{Endpoints: []string{m.ClientURL}, CACert: CACert, Cert: ClientCert, Key: ClientKey}
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Start issues the PKI under root and starts a one-member cluster that
// trusts only client certificates of its CA; it is stopped at the end of
// the test.
func Start(t testing.TB, root string) *Member {
	t.Helper()
	issuePKI(t, root)
	cfg := embed.NewConfig()
	cfg.Name = "etcd0"
	cfg.Dir = filepath.Join(t.TempDir(), "data")
	cfg.LogLevel = "error"
	cfg.LogOutputs = []string{filepath.Join(t.TempDir(), "etcd.log")}
	client, _ := url.Parse(fmt.Sprintf("https://127.0.0.1:%d", freePort(t)))
	peer, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", freePort(t)))
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ClientTLSInfo = transport.TLSInfo{
		CertFile: root + ServerCert, KeyFile: root + ServerKey, TrustedCAFile: root + CACert, ClientCertAuth: true,
	}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("starting etcd: %v", err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		t.Fatal("etcd did not get ready within 30s")
	}
	return &Member{ClientURL: client.String(), Etcd: e}
}

func issuePKI(t testing.TB, root string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "etcd-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalPKCS8PrivateKey(key)
	os.MkdirAll(filepath.Join(root, filepath.Dir(CACert)), 0o755)
	os.WriteFile(root+CACert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
	os.WriteFile(root+CAKey, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600)
	for _, c := range []certificates.Spec{
		{Certificate: nodeplan.Certificate{Name: "server", Cert: ServerCert, Key: ServerKey, Usages: []nodeplan.Usage{nodeplan.UsageServerAuth}},
			CommonName: "etcd0", IPs: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"}},
		{Certificate: nodeplan.Certificate{Name: "client", Cert: ClientCert, Key: ClientKey, Usages: []nodeplan.Usage{nodeplan.UsageClientAuth}},
			CommonName: "kube-aws-node"},
	} {
		c.CACert, c.CAKey, c.Validity = CACert, CAKey, time.Hour
		if _, err := certificates.Ensure(root, &c, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
}
