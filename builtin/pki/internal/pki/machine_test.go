package pki

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/steps/certificates"
)

// machine lays out a role's files under a fresh root as a machine has them
// after the secrets step (each marker replaced by the kept plain text),
// then runs kube-aws-node's own certificates code over the role's plan with
// the machine's facts.
func machine(t *testing.T, k *memKeeper, set *construct.Set, role construct.Role, facts nodeplan.Facts) string {
	t.Helper()
	root := t.TempDir()
	plain := map[string]string{}
	for name := range k.kept {
		plain[k.Marker(name)] = string(k.kept[name])
	}
	var plan nodeplan.CertificatesPlan
	for _, f := range set.Files {
		if f.Target.Role != role {
			continue
		}
		content := f.Content
		if f.Sensitive {
			v, ok := plain[content]
			if !ok {
				t.Fatalf("%s: marker %s stands for nothing kept", f.Path, content)
			}
			content = v
		}
		if f.Path == nodeplan.CertificatesPath {
			if err := nodeplan.Decode([]byte(content), &plan); err != nil {
				t.Fatal(err)
			}
			continue
		}
		p := filepath.Join(root, f.Path)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := &agent.Env{Root: root, Facts: facts}
	for _, c := range plan.Certificates {
		spec, err := certificates.Resolve(env, c.Name, c)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		if _, err := certificates.Ensure(root, spec, time.Now()); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
	}
	return root
}

func pool(t *testing.T, root, caPath string) *x509.CertPool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, caPath))
	if err != nil {
		t.Fatal(err)
	}
	p := x509.NewCertPool()
	if !p.AppendCertsFromPEM(b) {
		t.Fatalf("%s holds no certificate", caPath)
	}
	return p
}

func leaf(t *testing.T, root, path string) *x509.Certificate {
	t.Helper()
	kp, err := tls.LoadX509KeyPair(filepath.Join(root, path), filepath.Join(root, path[:len(path)-len(".crt")]+".key"))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	c, err := x509.ParseCertificate(kp.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestMachinesIssue runs the plugin's output through the machine's own
// certificates step: every leaf verifies against the CA the plugin kept, for
// the names clients use, and an etcd member and its health check client
// complete a mutual TLS handshake.
func TestMachinesIssue(t *testing.T) {
	k := newKeeper()
	cr, d := Load(k, time.Now(), quiet)
	if len(d) != 0 {
		t.Fatal(d)
	}
	set, err := Constructs(testCluster, cr)
	if err != nil {
		t.Fatal(err)
	}

	ctl := machine(t, k, set, construct.Controller, nodeplan.Facts{nodeplan.FactHostname: "ip-10-0-1-23.ec2.internal",
		nodeplan.FactPrivateIPv4: "10.0.1.23", names.FactAPILoadBalancerDNS: "demo-api-1.elb.us-east-1.amazonaws.com"})
	cas := pool(t, ctl, names.PKICACert)
	api := leaf(t, ctl, names.PKIAPIServerCert)
	for _, name := range []string{"kubernetes.default.svc.cluster.local", "api.demo.example.com", "demo-api-1.elb.us-east-1.amazonaws.com", "10.3.0.1", "127.0.0.1", "10.0.1.23"} {
		if _, err := api.Verify(x509.VerifyOptions{Roots: cas, DNSName: name}); err != nil {
			t.Errorf("the API server's certificate for %s: %v", name, err)
		}
	}
	for path, cn := range map[string]string{
		names.PKIKubeletClientCert:          "system:node:ip-10-0-1-23.ec2.internal",
		names.PKIControllerManagerCert:      names.UserControllerManager,
		names.PKIAPIServerKubeletClientCert: names.UserAPIServerKubeletClient,
		names.PKIAdminCert:                  "kubernetes-admin",
	} {
		c := leaf(t, ctl, path)
		if _, err := c.Verify(x509.VerifyOptions{Roots: cas, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil || c.Subject.CommonName != cn {
			t.Errorf("%s: CN %s (%v); want %s", path, c.Subject.CommonName, err, cn)
		}
	}
	etcdClient := leaf(t, ctl, names.PKIAPIServerEtcdClientCert)
	if _, err := os.Stat(filepath.Join(ctl, names.KubeconfigAdmin)); err != nil {
		t.Errorf("no admin kubeconfig on the controller: %v", err)
	}
	if _, err := etcdClient.Verify(x509.VerifyOptions{Roots: pool(t, ctl, names.PKIEtcdCACert), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the API server's etcd client certificate: %v", err)
	}

	member := machine(t, k, set, construct.Etcd, nodeplan.Facts{nodeplan.FactHostname: "ip-10-0-2-9.ec2.internal",
		nodeplan.FactPrivateIPv4: "10.0.2.9", names.FactEtcdMember: "etcd1"})
	etcdCAs := pool(t, member, names.PKIEtcdCACert)
	for _, name := range []string{"etcd1.demo.internal", "10.0.2.9", "localhost"} {
		if _, err := leaf(t, member, names.PKIEtcdPeerCert).Verify(x509.VerifyOptions{Roots: etcdCAs, DNSName: name,
			KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("the peer certificate for %s: %v", name, err)
		}
	}

	// The member serves with its server certificate and demands a client
	// certificate of its CA, as etcd.service's flags say; the health check
	// client (kube-aws-node's goal) gets through.
	server, err := tls.LoadX509KeyPair(filepath.Join(member, names.PKIEtcdServerCert), filepath.Join(member, names.PKIEtcdServerKey))
	if err != nil {
		t.Fatal(err)
	}
	client, err := tls.LoadX509KeyPair(filepath.Join(member, names.PKIEtcdHealthcheckClientCert), filepath.Join(member, names.PKIEtcdHealthcheckClientKey))
	if err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	done := make(chan error, 1)
	go func() {
		s := tls.Server(a, &tls.Config{Certificates: []tls.Certificate{server}, ClientCAs: etcdCAs, ClientAuth: tls.RequireAndVerifyClientCert})
		done <- s.Handshake()
		s.Close()
	}()
	c := tls.Client(b, &tls.Config{Certificates: []tls.Certificate{client}, RootCAs: etcdCAs, ServerName: "etcd1.demo.internal"})
	if err := c.Handshake(); err != nil {
		t.Fatalf("client handshake: %v", err)
	}
	c.Close()
	if err := <-done; err != nil {
		t.Fatalf("server handshake: %v", err)
	}
}
