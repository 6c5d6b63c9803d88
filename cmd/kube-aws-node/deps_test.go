package main

import (
	"os/exec"
	"strings"
	"testing"
)

// kube-aws-node links Helm's action library, client-go, etcd's client and
// more AWS services; every other binary starts faster without them
// (package init is start-up time), and none needs them.
func TestOtherBinariesStayLean(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{if eq .Name \"main\"}}{{.ImportPath}}{{end}}",
		"github.com/kube-aws/kube-aws/cmd/...", "github.com/kube-aws/kube-aws/builtin/...", "github.com/kube-aws/kube-aws/contrib/plugins/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	// Prefixes; a trailing "$" asks for the package itself only (the helm
	// plugin already uses client-go's scheme, not its clientset).
	forbidden := []string{
		"github.com/kube-aws/kube-aws/node",
		"helm.sh/helm/v3/pkg/action",
		"k8s.io/client-go/kubernetes$",
		"go.etcd.io/etcd/client",
		"github.com/aws/aws-sdk-go-v2/service/route53",
	}
	mains := strings.Fields(string(out))
	if len(mains) < 5 {
		t.Fatalf("found only %v", mains)
	}
	for _, m := range mains {
		if strings.HasSuffix(m, "/cmd/kube-aws-node") {
			continue
		}
		deps, err := exec.Command("go", "list", "-deps", m).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", m, err, deps)
		}
		for _, d := range strings.Fields(string(deps)) {
			for _, f := range forbidden {
				if exact, ok := strings.CutSuffix(f, "$"); (ok && d == exact) || (!ok && strings.HasPrefix(d, f)) {
					t.Errorf("%s imports %s: keep kube-aws-node's libraries out of it", m, d)
				}
			}
		}
	}
}
