package action

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/stages"
	"github.com/kube-aws/kube-aws/test/builtintest"
)

func TestMain(m *testing.M) { plugintest.Main(m) }

const kubeconfigCluster = `clusterName: demo
region: us-east-1
availabilityZones: [us-east-1a, us-east-1b]
kubernetesVersion: "1.31.4"
s3URI: s3://demo-assets/kube-aws
network:
  vpcCIDR: 10.0.0.0/16
  natGateways: true
controller:
  count: 1
  instanceType: t3.medium
etcd:
  count: 3
  instanceType: t3.medium
nodePools:
  - name: workers
    instanceType: t3.large
    minSize: 1
    maxSize: 3
    desiredCapacity: 2
`

// kubeconfigFolder writes cluster.yaml (plus extra) in a folder of its own
// and returns its path; kube-aws finds only the pki built-in.
func kubeconfigFolder(t *testing.T, extra string) string {
	t.Helper()
	plugins := filepath.Join(t.TempDir(), "kube-aws-plugins")
	builtintest.Install(t, plugins, "pki")
	t.Setenv("KUBE_AWS_BUILTIN_DIR", filepath.Join(plugins, "builtin"))
	t.Setenv("KUBE_AWS_CONTRIB_DIR", filepath.Join(plugins, "contrib"))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(kubeconfigCluster+extra), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The admin kubeconfig is made from what the pki plugin returns through
// the admin-credential operation once a render has made the credential,
// and reaches the API at --server, apiEndpoint.dnsName or the deployed
// endpoint, in that order.
func TestKubeconfig(t *testing.T) {
	deployState := func(dir string) {
		st := stages.State{Version: stages.StateVersion, Stage: stage.Deploy,
			Result: stages.StageResult{Deploy: &stage.DeployResult{Outputs: map[string]string{names.ClusterOutputAPIEndpoint: "https://demo-api.elb.example.com"}}}}
		b, _ := json.Marshal(st)
		os.MkdirAll(filepath.Join(dir, ".kube-aws", "state"), 0o700)
		os.WriteFile(filepath.Join(dir, ".kube-aws", "state", "deploy.json"), b, 0o600)
	}
	tests := []struct {
		name    string
		extra   string
		render  bool
		deploy  bool
		server  string
		want    string // the server, or the error
		wantErr bool
		code    int
	}{
		{"endpoint's DNS name", "apiEndpoint:\n  dnsName: api.demo.example.com\n", true, false, "", "https://api.demo.example.com", false, 0},
		{"deployed endpoint", "", true, true, "", "https://demo-api.elb.example.com", false, 0},
		{"flag wins", "apiEndpoint:\n  dnsName: api.demo.example.com\n", true, true, "https://10.0.0.1", "https://10.0.0.1", false, 0},
		{"endpoint unknown", "", true, false, "", "pass --server", true, stages.ExitUsage},
		{"not https", "", true, false, "http://x", "is not https://", true, stages.ExitUsage},
		{"no render yet", "", false, true, "", "no admin credential in credentials/pki/ yet: run kube-aws render first", true, stages.ExitFatal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := kubeconfigFolder(t, tc.extra)
			cfg := Config{Options: stages.Options{ConfigPath: filepath.Join(dir, "cluster.yaml")}}
			ctx := context.Background()
			if tc.render {
				if _, err := (&Render{Config: cfg, OutDir: filepath.Join(dir, "rendered")}).Run(ctx); err != nil {
					t.Fatalf("render: %v", err)
				}
			}
			if tc.deploy {
				deployState(dir)
			}
			a := &Kubeconfig{Config: cfg, Server: tc.server}
			path, _, err := a.Run(ctx)
			if tc.wantErr {
				var diags string
				if e, ok := err.(*stages.Error); ok {
					diags = e.Diagnostics.Error()
				}
				if err == nil || !strings.Contains(err.Error()+diags, tc.want) || stages.ExitCode(err) != tc.code {
					t.Fatalf("got %v (exit %d)\n%s\nwant an error with %q, exit %d", err, stages.ExitCode(err), diags, tc.want, tc.code)
				}
				if _, err := os.Stat(filepath.Join(dir, DefaultKubeconfig)); err == nil {
					t.Error("a kubeconfig was written anyway")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 || path != filepath.Join(dir, DefaultKubeconfig) {
				t.Fatalf("%s: %v %v", path, fi.Mode(), err)
			}
			kc, err := clientcmd.LoadFromFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if kc.CurrentContext != "demo" || kc.Clusters["demo"].Server != tc.want {
				t.Errorf("kubeconfig %+v", kc)
			}
			checkAdmin(t, kc.Clusters["demo"].CertificateAuthorityData, kc.AuthInfos["demo-admin"].ClientCertificateData, kc.AuthInfos["demo-admin"].ClientKeyData)
		})
	}
}

// checkAdmin checks an admin credential by what it is, not by where the
// pki plugin keeps it: a CA, a client certificate it signed in the
// system:masters group, and the key of that certificate.
func checkAdmin(t *testing.T, caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	parse := func(what string, b []byte) *x509.Certificate {
		block, _ := pem.Decode(b)
		if block == nil {
			t.Fatalf("%s is not PEM: %q", what, b)
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return c
	}
	ca, cert := parse("the CA", caPEM), parse("the client certificate", certPEM)
	if !ca.IsCA || cert.CheckSignatureFrom(ca) != nil {
		t.Errorf("the client certificate (issuer %s) is not signed by the CA %s", cert.Issuer, ca.Subject)
	}
	if len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != names.GroupMasters {
		t.Errorf("the client certificate's groups are %v, want %s", cert.Subject.Organization, names.GroupMasters)
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		t.Errorf("the key does not belong to the certificate: %v", err)
	}
}
