package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/plugins/plugintest"
)

// contribValues enables every contrib plugin with the values its README
// shows (sensitive ones from the environment).
const contribValues = `  bastion:
    enabled: true
    values:
      allowedCIDRs: [203.0.113.0/24]
      keyName: ops
  cluster-autoscaler:
    enabled: true
    values:
      runOn: controller
  customise:
    enabled: true
    values:
      tags: {cost-center: "1234"}
      iam:
        - actions: [s3:GetObject]
          resources: ["arn:aws:s3:::team-data/*"]
      apiAccessCIDRs: [203.0.113.0/24]
      sshAccessCIDRs: [192.0.2.10/32]
  datadog-agent:
    enabled: true
    values:
      apiKey: {valueFrom: {env: DD_API_KEY}}
      tags: [env:e2e]
  dex:
    enabled: true
    values:
      issuerURL: https://dex.example.com
      staticClients:
        - id: kubectl
          secret: {valueFrom: {env: DEX_KUBECTL_SECRET}}
          redirectURIs: [http://localhost:8000]
  kube2iam:
    enabled: true
    values:
      roleARNs: [arn:aws:iam::123456789012:role/k8s-*]
`

// With dex, the apiserver's anonymousAuth is rbac, as dex's README says:
// dex configures OIDC with --oidc-* flags, which kube-apiserver refuses
// beside the authentication configuration of the example's health.
const (
	exampleAnonymousAuth = "      anonymousAuth: health\n"
	dexAnonymousAuth     = "      anonymousAuth: rbac\n"
)

// cluster.yaml.example with every contrib plugin enabled, brought up against
// moto through deploy and validate; the cluster then matches its render, so
// diff --exit-code exits 0, and validate alone passes too.
func TestTheExampleWithEveryContribPluginComesUpAndValidates(t *testing.T) {
	l := newAWSLayout(t)
	enableEveryContribPlugin(l)

	stdout, stderr, code := l.run("up", "--endpoint-url", l.endpoint)
	if code != 0 || !strings.Contains(stdout+stderr, "validate: pki, kubernetes, deploy, bastion (4 plugin(s))") {
		t.Fatalf("up: exit %d, want 0 through the validate stage of pki, kubernetes, deploy and bastion\n%s\n%s", code, stdout, stderr)
	}
	if live := l.liveStacks(); len(live) != 7 || !slices.Contains(live, "demo-bastion") {
		t.Fatalf("deployed stacks %v, want the 6 built-in ones and demo-bastion", live)
	}
	if stdout, stderr, code := l.run("validate", "--endpoint-url", l.endpoint); code != 0 {
		t.Fatalf("validate: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if stdout, stderr, code := l.run("diff", "--exit-code", "--endpoint-url", l.endpoint); code != 0 {
		t.Fatalf("diff --exit-code after up: exit %d, want 0\n%s\n%s", code, stdout, stderr)
	}
}

// enableEveryContribPlugin installs every contrib plugin beside l's kube-aws
// and enables each in its cluster.yaml with contribValues, the sensitive
// values in kube-aws's environment.
func enableEveryContribPlugin(l *awsLayout) {
	t := l.t
	t.Helper()
	contribDir := filepath.Join(filepath.Dir(l.kubeAWS), "kube-aws-plugins", "contrib")
	entries, err := os.ReadDir(filepath.Join("..", "..", "contrib", "plugins"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.Contains(contribValues, "\n  "+e.Name()+":\n") && !strings.HasPrefix(contribValues, "  "+e.Name()+":\n") {
			t.Fatalf("contrib plugin %s is not enabled by this test: add it to contribValues", e.Name())
		}
		copyFile(t, plugintest.Build(t, "github.com/kube-aws/kube-aws/contrib/plugins/"+e.Name()), filepath.Join(contribDir, e.Name()))
	}
	l.edit("\n  deploy:\n    enabled: true\n", "\n  deploy:\n    enabled: true\n"+contribValues)
	l.edit(exampleAnonymousAuth, dexAnonymousAuth)
	l.env = append(l.env, "DD_API_KEY=dd-api-key-e2e", "DEX_KUBECTL_SECRET=dex-kubectl-secret-e2e")
}
