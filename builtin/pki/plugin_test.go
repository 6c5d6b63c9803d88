package pki

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/host"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/test/builtintest"
)

func TestMain(m *testing.M) { plugintest.Main(m) }

const clusterJSON = `{"clusterName":"demo","region":"us-east-1","kubernetes":{"serviceCIDR":"10.3.0.0/24","clusterDomain":"cluster.local"},
"apiEndpoint":{"dnsName":"api.demo.example.com"},"etcd":{"count":3}}`

func run(t *testing.T, bin, creds string, stages ...stage.Name) *plugintest.Outcome {
	t.Helper()
	out, err := plugintest.RunWith(t, bin, host.Options{Credentials: host.NewCredentials(creds)},
		&stage.Input{Config: json.RawMessage(clusterJSON)}, stages...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.Output)
	}
	return out
}

// TestPluginBinary runs the built plugin over the protocol with kube-aws's
// own store of generated secrets: the first run makes the CAs and keeps
// them in the credentials folder, the second reuses them and contributes
// byte for byte the same; nothing contributed holds a key.
func TestPluginBinary(t *testing.T) {
	bin := builtintest.Path(t, "pki")
	creds := t.TempDir()
	first := run(t, bin, creds, stage.Initialise, stage.Validate)
	ini := first.Results[stage.Initialise]
	if len(ini.Diagnostics) != 0 || ini.Constructs == nil {
		t.Fatalf("initialise: %+v", ini)
	}
	kept, err := os.ReadDir(filepath.Join(creds, "pki"))
	if err != nil || len(kept) != 11 {
		t.Fatalf("kept %d files (%v); want 3 CAs, the service-account key and 2 leaves (11)", len(kept), err)
	}
	plans := 0
	for _, f := range ini.Constructs.Files {
		if strings.Contains(f.Content, "PRIVATE KEY") {
			t.Errorf("%s holds a key", f.Path)
		}
		if f.Sensitive && !nodeplan.MarkerPattern.MatchString(f.Content) {
			t.Errorf("%s: %q", f.Path, f.Content)
		}
		if f.Path == nodeplan.CertificatesPath {
			plans++
			var p nodeplan.CertificatesPlan
			if err := nodeplan.Decode([]byte(f.Content), &p); err != nil {
				t.Errorf("%s plan: %v", f.Target, err)
			}
			if f.Target.Role == "controller" && !strings.Contains(f.Content, `"10.3.0.1"`) {
				t.Errorf("the API server's certificate lacks the first service IP:\n%s", f.Content)
			}
		}
	}
	if plans != 2 {
		t.Errorf("%d certificates plans; want the controllers' and the etcd members'", plans)
	}
	if d := first.Results[stage.Validate].Diagnostics; len(d) != 0 {
		t.Errorf("validate of fresh certificates: %v", d)
	}

	before, _ := os.ReadFile(filepath.Join(creds, "pki", "ca.key"))
	second := run(t, bin, creds, stage.Initialise)
	a, _ := json.Marshal(ini.Constructs)
	b, _ := json.Marshal(second.Results[stage.Initialise].Constructs)
	after, _ := os.ReadFile(filepath.Join(creds, "pki", "ca.key"))
	if !bytes.Equal(a, b) || !bytes.Equal(before, after) {
		t.Error("a second run changed what the plugin contributes or keeps")
	}
}

// TestPluginBinaryOperatorCA covers a CA the operator put in the
// credentials folder that is not a CA: a fatal naming the file, from the
// pki plugin, and nothing replaced.
func TestPluginBinaryOperatorCA(t *testing.T) {
	bin := builtintest.Path(t, "pki")
	creds := t.TempDir()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "not-a-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, _ := x509.CreateCertificate(rand.Reader, tpl, tpl, key.Public(), key)
	kb, _ := x509.MarshalPKCS8PrivateKey(key)
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	os.MkdirAll(filepath.Join(creds, "pki"), 0o700)
	os.WriteFile(filepath.Join(creds, "pki", "ca.crt"), certPEM, 0o600)
	os.WriteFile(filepath.Join(creds, "pki", "ca.key"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}), 0o600)

	d := run(t, bin, creds, stage.Initialise).Results[stage.Initialise].Diagnostics
	if f, _ := d.Count(); f != 1 || d[0].Severity != diag.Fatal || d[0].Plugin != "pki" ||
		!strings.Contains(d[0].Message, "credentials/pki/ca.crt is not a CA certificate") {
		t.Fatalf("got %v", d)
	}
	if now, _ := os.ReadFile(filepath.Join(creds, "pki", "ca.crt")); !bytes.Equal(now, certPEM) {
		t.Error("the operator's certificate was replaced")
	}
}

// TestPluginBinaryAdminCredential runs the admin-credential operation over
// the protocol: before any initialise it is a fatal and makes nothing;
// after, it returns the kept CA certificate, admin certificate and key.
func TestPluginBinaryAdminCredential(t *testing.T) {
	bin := builtintest.Path(t, "pki")
	creds := t.TempDir()
	res := run(t, bin, creds, stage.AdminCredential).Results[stage.AdminCredential]
	if !res.Diagnostics.HasFatal() || res.AdminCredential != nil || res.Diagnostics[0].Plugin != "pki" ||
		!strings.Contains(res.Diagnostics[0].Message, "no admin credential in credentials/pki/ yet: run kube-aws render first") {
		t.Fatalf("before initialise: %v, credential %v", res.Diagnostics, res.AdminCredential)
	}
	if kept, _ := os.ReadDir(creds); len(kept) != 0 {
		t.Fatalf("the operation made %d files", len(kept))
	}

	out := run(t, bin, creds, stage.Initialise, stage.AdminCredential)
	res = out.Results[stage.AdminCredential]
	if len(res.Diagnostics) != 0 || res.AdminCredential == nil {
		t.Fatalf("after initialise: %v, credential %v", res.Diagnostics, res.AdminCredential)
	}
	for name, got := range map[string][]byte{"ca.crt": res.AdminCredential.CACert, "admin.crt": res.AdminCredential.Cert, "admin.key": res.AdminCredential.Key} {
		if want, _ := os.ReadFile(filepath.Join(creds, "pki", name)); len(got) == 0 || !bytes.Equal(got, want) {
			t.Errorf("%s: the operation returned %d bytes that are not the kept ones", name, len(got))
		}
	}
	if strings.Contains(out.Output.String(), "PRIVATE KEY") {
		t.Errorf("the plugin logged a key:\n%s", out.Output)
	}
}
