package pki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kube-aws/kube-aws/builtin/pki/internal/authority"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// memKeeper is the host's store in memory, counting writes.
type memKeeper struct {
	kept   map[string][]byte
	puts   int
	getErr error
}

func newKeeper() *memKeeper { return &memKeeper{kept: map[string][]byte{}} }

func (k *memKeeper) Get(name string) ([]byte, bool, error) {
	if k.getErr != nil {
		return nil, false, k.getErr
	}
	v, ok := k.kept[name]
	return v, ok, nil
}
func (k *memKeeper) Put(name string, v []byte) error { k.kept[name] = v; k.puts++; return nil }
func (k *memKeeper) Marker(name string) string       { return "((secret:pki/generated/" + name + "))" }
func (k *memKeeper) Where(name string) string        { return "credentials/pki/" + name }

func quiet(string) {}

func TestLoadMakesOnceAndReuses(t *testing.T) {
	k := newKeeper()
	var logs []string
	cr, d := Load(k, now, func(s string) { logs = append(logs, s) })
	if len(d) != 0 {
		t.Fatalf("first load: %v", d)
	}
	// Three CAs (cert and key), the service-account key, two leaves (cert and key).
	if k.puts != 11 || len(logs) != 6 {
		t.Fatalf("first load kept %d values and logged %v; want 11 values, 6 lines", k.puts, logs)
	}
	for _, name := range []string{KeepCAKey, KeepEtcdCAKey, KeepFrontProxyCAKey, KeepServiceAccountKey, KeepAdminKey, KeepAPIServerEtcdClientKey} {
		if cr.Markers[name] != k.Marker(name) {
			t.Errorf("marker of %s = %q", name, cr.Markers[name])
		}
	}
	first, err := Constructs(testCluster, cr)
	if err != nil {
		t.Fatal(err)
	}

	puts := k.puts
	cr2, d := Load(k, now.Add(24*time.Hour), quiet)
	if len(d) != 0 || k.puts != puts {
		t.Fatalf("second load: %v, %d new values kept; want none", d, k.puts-puts)
	}
	second, err := Constructs(testCluster, cr2)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Files) != len(second.Files) {
		t.Fatal("a second run changed the files")
	}
	for i := range first.Files {
		if first.Files[i] != second.Files[i] {
			t.Errorf("a second run changed %s on %s", first.Files[i].Path, first.Files[i].Target)
		}
	}

	// Past two thirds of the admin certificate's year it is issued again,
	// from the same CA.
	_, d = Load(k, now.Add(250*24*time.Hour), quiet)
	if len(d) != 0 || k.puts != puts+4 {
		t.Errorf("after 250 days: %v, %d values kept; want the two leaves again (4)", d, k.puts-puts)
	}
}

func TestConstructsNoPlainKey(t *testing.T) {
	k := newKeeper()
	cr, _ := Load(k, now, quiet)
	set, err := Constructs(testCluster, cr)
	if err != nil {
		t.Fatal(err)
	}
	byRole := map[construct.Role]int{}
	for _, f := range set.Files {
		byRole[f.Target.Role]++
		if strings.Contains(f.Content, "PRIVATE KEY") {
			t.Errorf("%s on %s holds a private key in plain text", f.Path, f.Target)
		}
		// Every kept credential is its marker; only the public key
		// derived from one, and the plans, are plain.
		plain := f.Path == names.PKIServiceAccountPub || f.Path == nodeplan.CertificatesPath
		if f.Sensitive == plain {
			t.Errorf("%s: sensitive is %v", f.Path, f.Sensitive)
		}
		if strings.HasSuffix(f.Path, ".key") != (f.Mode == "0600") {
			t.Errorf("%s: mode %s", f.Path, f.Mode)
		}
		if f.Sensitive && (!nodeplan.MarkerPattern.MatchString(f.Content) || f.Format != string(nodeplan.FormatWhole)) {
			t.Errorf("%s: %q (format %q) is not a whole-file marker", f.Path, f.Content, f.Format)
		}
	}
	if byRole[construct.Controller] != 10 || byRole[construct.Etcd] != 3 || byRole[construct.Worker] != 1 {
		t.Errorf("files by role: %v; want 10 controller (9 and the plan), 3 etcd, 1 worker", byRole)
	}
	timers := map[construct.Role]bool{}
	for _, u := range set.Units {
		if u.Name == RenewTimer && u.Enable {
			timers[u.Target.Role] = true
		}
	}
	if len(set.Units) != 4 || !timers[construct.Controller] || !timers[construct.Etcd] {
		t.Errorf("units %+v; want the renewal service and its enabled timer on controllers and etcd members", set.Units)
	}
}

var testCluster = Cluster{Name: "demo", APIDNSName: "api.demo.example.com", ServiceIP: "10.3.0.1", ClusterDomain: "cluster.local"}

// TestCertificatesGolden pins each role's certificates plan; -update
// rewrites them.
func TestCertificatesGolden(t *testing.T) {
	for name, plan := range map[string]*nodeplan.CertificatesPlan{
		"controller": ControllerCertificates(testCluster),
		"etcd":       EtcdCertificates(testCluster),
	} {
		got, err := nodeplan.Encode(plan)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		golden := filepath.Join("testdata", name+"-certificates.json")
		if *update {
			if err := os.WriteFile(golden, got, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run go test -update)", err)
		}
		if string(got) != string(want) {
			t.Errorf("%s differs from %s (go test -update to accept):\n%s", name, golden, got)
		}
	}
}

// TestCertificatesIssueOnMachine issues each plan's leaves as a machine
// would (facts expanded) and checks what the API server and etcd need.
func TestCertificatesIssueOnMachine(t *testing.T) {
	facts := nodeplan.Facts{nodeplan.FactHostname: "ip-10-0-1-23.ec2.internal", nodeplan.FactPrivateIPv4: "10.0.1.23",
		names.FactAPILoadBalancerDNS: "demo-api-123.elb.us-east-1.amazonaws.com", names.FactEtcdMember: "etcd1"}
	for _, c := range ControllerCertificates(testCluster).Certificates {
		if c.Name != "apiserver" {
			continue
		}
		var dns []string
		for _, n := range c.DNSNames {
			v, err := facts.Expand(n)
			if err != nil {
				t.Fatal(err)
			}
			dns = append(dns, v)
		}
		joined := strings.Join(dns, " ")
		for _, want := range []string{"demo-api-123.elb.us-east-1.amazonaws.com", "api.demo.example.com", "kubernetes.default.svc.cluster.local"} {
			if !strings.Contains(joined, want) {
				t.Errorf("apiserver SANs %v lack %s", dns, want)
			}
		}
		if strings.Join(c.IPAddresses, " ") != "{privateIPv4} 127.0.0.1 10.3.0.1" {
			t.Errorf("apiserver IPs %v", c.IPAddresses)
		}
	}
	for _, c := range EtcdCertificates(testCluster).Certificates {
		if c.Name == "etcd-peer" {
			if v, _ := facts.Expand(c.DNSNames[0]); v != "etcd1.demo.internal" {
				t.Errorf("peer certificate's first name %s, want etcd1.demo.internal", v)
			}
		}
	}
}

// operatorCA writes a CA the way an operator's tool might.
func operatorCA(t *testing.T, isCA bool, notAfter time.Time) (certPEM, keyPEM []byte) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "operator"},
		NotBefore: now.Add(-48 * time.Hour), NotAfter: notAfter, IsCA: isCA, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := x509.MarshalECPrivateKey(key)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: b})
}

// TestOperatorCA covers a CA the operator put in credentials/pki/: used
// when good, a fatal naming the file otherwise, nothing kept either way.
func TestOperatorCA(t *testing.T) {
	good, goodKey := operatorCA(t, true, now.Add(365*24*time.Hour))
	expired, expiredKey := operatorCA(t, true, now.Add(-time.Hour))
	notCA, notCAKey := operatorCA(t, false, now.Add(365*24*time.Hour))
	_, otherKey := operatorCA(t, true, now.Add(365*24*time.Hour))
	tests := []struct {
		name      string
		cert, key []byte
		want      string // in the one fatal; "" for none
		hint      string
	}{
		{"a good CA is used", good, goodKey, "", ""},
		{"expired", expired, expiredKey, "credentials/pki/ca.crt expired on", "restore the CA"},
		{"not a CA", notCA, notCAKey, "credentials/pki/ca.crt is not a CA certificate", "restore the CA"},
		{"key of another CA", good, otherKey, "credentials/pki/ca.key does not belong to the CA certificate", "restore the CA"},
		{"certificate without key", good, nil, "credentials/pki/ca.key is missing while credentials/pki/ca.crt is there", "restore credentials/pki/ca.key"},
		{"garbage", []byte("hello"), goodKey, "credentials/pki/ca.crt holds no PEM certificate", "restore the CA"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := newKeeper()
			k.kept[KeepCACert] = tc.cert
			if tc.key != nil {
				k.kept[KeepCAKey] = tc.key
			}
			cr, d := Load(k, now, quiet)
			if tc.want == "" {
				if len(d) != 0 {
					t.Fatalf("%v", d)
				}
				if string(cr.CA.CertPEM) != string(good) || string(k.kept[KeepCACert]) != string(good) {
					t.Error("the operator's CA was replaced")
				}
				if err := checkSignedBy(cr.AdminCert, good); err != nil {
					t.Errorf("admin certificate: %v", err)
				}
				return
			}
			if f, _ := d.Count(); f != 1 {
				t.Fatalf("want one fatal, got %v", d)
			}
			if !strings.Contains(d[0].Message, tc.want) || !strings.Contains(d[0].Hint, tc.hint) {
				t.Errorf("got %q (hint %q), want %q (hint %q)", d[0].Message, d[0].Hint, tc.want, tc.hint)
			}
			if string(k.kept[KeepCACert]) != string(tc.cert) {
				t.Error("the operator's certificate was overwritten")
			}
			if _, ok := k.kept[KeepAdminCert]; ok {
				t.Error("a leaf was issued from a bad CA")
			}
		})
	}
}

func checkSignedBy(leafPEM, caPEM []byte) error {
	leaf, err := authority.ParseCertificate(leafPEM)
	if err != nil {
		return err
	}
	ca, err := authority.ParseCertificate(caPEM)
	if err != nil {
		return err
	}
	return leaf.CheckSignatureFrom(ca)
}

func TestLoadStoreFails(t *testing.T) {
	k := newKeeper()
	k.getErr = errors.New("permission denied")
	_, d := Load(k, now, quiet)
	if !d.HasFatal() || !strings.Contains(d[0].Message, "reading credentials/pki/ca.crt: permission denied") {
		t.Errorf("got %v", d)
	}
	var _ diag.List = d
}

func TestExpiring(t *testing.T) {
	k := newKeeper()
	if _, d := Load(k, now, quiet); len(d) != 0 {
		t.Fatal(d)
	}
	tests := []struct {
		name   string
		at     time.Time
		fatals int
		warns  int
		want   string
	}{
		{"fresh", now, 0, 0, ""},
		{"80 days before the leaves expire", now.Add(285 * 24 * time.Hour), 0, 2, "the admin certificate (credentials/pki/admin.crt) expires on 2027-03-01, in 80 days"},
		{"the leaves expired", now.Add(366 * 24 * time.Hour), 2, 0, "expired on 2027-03-01"},
		{"80 days before the CAs expire", now.Add((3650 - 80) * 24 * time.Hour), 2, 3, "the cluster CA (credentials/pki/ca.crt) expires on"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := Expiring(k, tc.at)
			f, w := d.Count()
			if f != tc.fatals || w != tc.warns {
				t.Fatalf("got %d fatals and %d warnings, want %d and %d: %v", f, w, tc.fatals, tc.warns, d)
			}
			if tc.want != "" && !strings.Contains(fmt.Sprint(d), tc.want) {
				t.Errorf("%v lacks %q", d, tc.want)
			}
			for _, x := range d {
				if x.Hint == "" {
					t.Errorf("no hint: %s", x)
				}
			}
		})
	}
}

// BenchmarkLoadKept is the pki plugin's work in a render after the first:
// load and check the kept CAs and leaves, and build every role's files and
// plans.
func BenchmarkLoadKept(b *testing.B) {
	k := newKeeper()
	if _, d := Load(k, now, quiet); len(d) != 0 {
		b.Fatal(d)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cr, d := Load(k, now, quiet)
		if len(d) != 0 {
			b.Fatal(d)
		}
		if _, err := Constructs(testCluster, cr); err != nil {
			b.Fatal(err)
		}
	}
}

// Admin returns the kept admin credential as it is, makes nothing, and
// refuses parts that are missing, do not belong together or expired.
func TestAdmin(t *testing.T) {
	made := newKeeper()
	if _, d := Load(made, now, quiet); len(d) != 0 {
		t.Fatal(d)
	}
	other := newKeeper()
	if _, d := Load(other, now, quiet); len(d) != 0 {
		t.Fatal(d)
	}
	tests := []struct {
		name   string
		change func(k *memKeeper)
		at     time.Time
		want   string // the first fatal; "" for the credential
	}{
		{"as kept", func(*memKeeper) {}, now, ""},
		{"nothing made yet", func(k *memKeeper) { k.kept = map[string][]byte{} }, now,
			"no admin credential in credentials/pki/ yet: run kube-aws render first (it makes one), or restore credentials/pki/ from your copy"},
		{"no key", func(k *memKeeper) { delete(k.kept, KeepAdminKey) }, now, "credentials/pki/admin.key not found"},
		{"another CA's certificate", func(k *memKeeper) { k.kept[KeepAdminCert] = other.kept[KeepAdminCert] }, now,
			"credentials/pki/admin.crt was not issued by the cluster CA credentials/pki/ca.crt"},
		{"another certificate's key", func(k *memKeeper) { k.kept[KeepAdminKey] = k.kept[KeepAPIServerEtcdClientKey] }, now,
			"credentials/pki/admin.key does not belong to credentials/pki/admin.crt"},
		{"not a certificate", func(k *memKeeper) { k.kept[KeepAdminCert] = []byte("garbage") }, now, "credentials/pki/admin.crt holds no PEM certificate"},
		{"expired", func(*memKeeper) {}, now.Add(366 * 24 * time.Hour), "the admin certificate (credentials/pki/admin.crt) expired on 2027-03-01"},
		{"unreadable", func(k *memKeeper) { k.getErr = errors.New("permission denied") }, now, "reading credentials/pki/ca.crt: permission denied"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			k := newKeeper()
			for n, v := range made.kept {
				k.kept[n] = v
			}
			tc.change(k)
			ca, cert, key, d := Admin(k, tc.at)
			if k.puts != 0 {
				t.Errorf("Admin kept %d values; it must make nothing", k.puts)
			}
			if tc.want == "" {
				if len(d) != 0 || string(ca) != string(made.kept[KeepCACert]) || string(cert) != string(made.kept[KeepAdminCert]) || string(key) != string(made.kept[KeepAdminKey]) {
					t.Fatalf("got %v and a credential that is not the kept one", d)
				}
				return
			}
			if !d.HasFatal() || !strings.Contains(d[0].Message, tc.want) || ca != nil || cert != nil || key != nil {
				t.Fatalf("got %v (credential returned: %v), want a fatal with %q", d, key != nil, tc.want)
			}
		})
	}
}
