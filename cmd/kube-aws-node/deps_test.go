package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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

// An AWS SDK client that reaches an interface, or a struct that does, keeps
// every operation of its service in kube-aws-node (Helm's templates call
// methods by name, so the linker keeps every exported method of such a
// type): EC2's alone were 20 MB of the binary every machine downloads at
// boot. node/awsenv's function types hold the operations the agent calls;
// this keeps them the only ones linked. (S3's and STS's clients are the
// SDK's own business: it puts them in interfaces itself.)
func TestLinksOnlyTheAWSOperationsItCalls(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "kube-aws-node")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command("go", "tool", "nm", bin).Output()
	if err != nil {
		t.Fatalf("go tool nm: %v", err)
	}
	operation := regexp.MustCompile(`github\.com/aws/aws-sdk-go-v2/service/([a-z0-9]+)\.\(\*Client\)\.([A-Z][A-Za-z0-9]*)$`)
	linked := map[string][]string{}
	for _, line := range strings.Split(string(out), "\n") {
		if m := operation.FindStringSubmatch(line); m != nil && m[2] != "Options" {
			linked[m[1]] = append(linked[m[1]], m[2])
		}
	}
	if len(linked["ec2"]) == 0 {
		t.Fatalf("no EC2 operation found in the binary's symbols; has the check gone stale?\n%v", linked)
	}
	// Each service's calls, with room for a few more; a service whose
	// client reached an interface links them all (EC2: over 800).
	for _, svc := range []string{"ec2", "autoscaling", "route53", "kms"} {
		if ops := linked[svc]; len(ops) > 20 {
			t.Errorf("kube-aws-node links %d operations of %s, not only those it calls: a *%s.Client reaches an interface "+
				"(pass the operations as node/awsenv's function types instead)", len(ops), svc, svc)
		}
	}
}
