package action

import (
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

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/stages"
)

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

// kubeconfigFolder writes cluster.yaml (plus extra) and, unless without names it,
// the pki plugin's kept files, and returns the folder.
func kubeconfigFolder(t *testing.T, extra string, without string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(kubeconfigCluster+extra), 0o644); err != nil {
		t.Fatal(err)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "kubernetes"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, _ := x509.CreateCertificate(rand.Reader, tpl, tpl, key.Public(), key)
	kb, _ := x509.MarshalPKCS8PrivateKey(key)
	pki := filepath.Join(dir, "credentials", "pki")
	os.MkdirAll(pki, 0o700)
	for name, b := range map[string][]byte{
		"ca.crt":    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"admin.crt": pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		"admin.key": pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kb}),
	} {
		if name != without {
			os.WriteFile(filepath.Join(pki, name), b, 0o600)
		}
	}
	return dir
}

func TestKubeconfig(t *testing.T) {
	deployState := func(dir string) {
		st := stages.State{Version: stages.StateVersion, Stage: stage.Deploy,
			Result: stages.StageResult{Deploy: &stage.DeployResult{Outputs: map[string]string{"APIEndpoint": "https://demo-api.elb.example.com"}}}}
		b, _ := json.Marshal(st)
		os.MkdirAll(filepath.Join(dir, ".kube-aws", "state"), 0o700)
		os.WriteFile(filepath.Join(dir, ".kube-aws", "state", "deploy.json"), b, 0o600)
	}
	tests := []struct {
		name    string
		extra   string
		without string
		deploy  bool
		server  string
		want    string // the server, or the error
		wantErr bool
	}{
		{"endpoint's DNS name", "apiEndpoint:\n  dnsName: api.demo.example.com\n", "", false, "", "https://api.demo.example.com", false},
		{"deployed endpoint", "", "", true, "", "https://demo-api.elb.example.com", false},
		{"flag wins", "apiEndpoint:\n  dnsName: api.demo.example.com\n", "", true, "https://10.0.0.1", "https://10.0.0.1", false},
		{"endpoint unknown", "", "", false, "", "pass --server", true},
		{"not https", "", "", false, "http://x", "is not https://", true},
		{"no admin key", "", "admin.key", true, "", "credentials/pki/admin.key not found: run kube-aws render first", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := kubeconfigFolder(t, tc.extra, tc.without)
			if tc.deploy {
				deployState(dir)
			}
			a := &Kubeconfig{Config: Config{Options: stages.Options{ConfigPath: filepath.Join(dir, "cluster.yaml")}}, Server: tc.server}
			path, err := a.Run()
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("got %v, want an error with %q", err, tc.want)
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
			cfg, err := clientcmd.LoadFromFile(path)
			if err != nil {
				t.Fatal(err)
			}
			ca, _ := os.ReadFile(filepath.Join(dir, "credentials", "pki", "ca.crt"))
			key, _ := os.ReadFile(filepath.Join(dir, "credentials", "pki", "admin.key"))
			if cfg.CurrentContext != "demo" || cfg.Clusters["demo"].Server != tc.want ||
				string(cfg.Clusters["demo"].CertificateAuthorityData) != string(ca) || string(cfg.AuthInfos["demo-admin"].ClientKeyData) != string(key) {
				t.Errorf("kubeconfig %+v", cfg)
			}
		})
	}
}
