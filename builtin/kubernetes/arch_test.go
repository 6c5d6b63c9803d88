package kubernetes

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/builtin/kubernetes/internal/node"
	"github.com/kube-aws/kube-aws/builtin/kubernetes/internal/versions"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/test/builtintest"
)

// TestAnArchitectureWithoutArtifactsIsFatal runs kube-aws itself with this
// plugin as its only built-in: an air-gapped cluster with an a1 (arm64) node
// pool whose artifact folder holds only amd64 files is refused at
// initialise, naming every arm64 file the pool's machines would install and
// none of the controllers' (t3, amd64).
func TestAnArchitectureWithoutArtifactsIsFatal(t *testing.T) {
	root := t.TempDir()
	builtin := filepath.Join(root, "builtin")
	if err := os.MkdirAll(builtin, 0o755); err != nil {
		t.Fatal(err)
	}
	copyExecutable(t, builtintest.Path(t, "kubernetes"), filepath.Join(builtin, "kubernetes"))
	kubeAWS := plugintest.Build(t, "github.com/kube-aws/kube-aws/cmd/kube-aws")

	cluster := filepath.Join(root, "cluster")
	r, _ := versions.For("1.34.4")
	for _, a := range r.Artifacts(true, node.CNIBinDir, node.KubeletBinary) {
		for _, f := range a.MirrorFiles() {
			p := filepath.Join(cluster, "mirror", filepath.FromSlash(a.MirrorPath("amd64", f)))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(a.Name+" "+f), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	yaml := `clusterName: e2e
region: eu-west-1
availabilityZones: [eu-west-1a]
s3URI: s3://e2e-bucket/e2e
kubernetesVersion: "1.34.4"
artifacts:
  mirror: mirror
apiEndpoint:
  dnsName: k8s.e2e.example.com
controller: {count: 1, instanceType: t3.medium}
etcd: {count: 1, instanceType: t3.medium}
nodePools:
  - {name: arm, instanceType: a1.large, minSize: 1, desiredCapacity: 1, maxSize: 1}
`
	if err := os.WriteFile(filepath.Join(cluster, "cluster.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(kubeAWS, "stage", "initialise")
	cmd.Dir = cluster
	cmd.Env = append(os.Environ(), "KUBE_AWS_BUILTIN_DIR="+builtin, "KUBE_AWS_CONTRIB_DIR="+filepath.Join(root, "none"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("kube-aws stage initialise: %v, want exit 1\n%s", err, stderr.String())
	}
	out := stderr.String()
	for _, want := range []string{"lacks", "kubelet/v1.34.4/linux-arm64/kubelet", "cni-plugins/v0.9.1/linux-arm64/flannel",
		"pause/3.10.1/linux-arm64/image.tar", "kube-proxy/v1.34.4/linux-arm64/image.tar", "plugin kubernetes"} {
		if !strings.Contains(out, want) {
			t.Errorf("the fatal does not name %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "kube-apiserver/v1.34.4/linux-arm64") {
		t.Errorf("the controllers run amd64; their images are not missing for arm64:\n%s", out)
	}
}

func copyExecutable(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}
