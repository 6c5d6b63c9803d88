package main

import (
	"os/exec"
	"strings"
	"testing"
)

// kube-aws pays the package init of everything it links on every command,
// render and version included (docs/design.md): the registry client and
// sigstore live in the kube-aws-oci helper, and this test fails the moment
// one of them is linked into kube-aws itself.
func TestKubeAWSDoesNotLinkTheRegistryLibraries(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/kube-aws/kube-aws/cmd/kube-aws").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range []string{"oras.land/", "github.com/sigstore/", "github.com/opencontainers/", "github.com/google/go-containerregistry"} {
			if strings.HasPrefix(dep, f) {
				t.Errorf("kube-aws links %s: keep the registry and signature libraries in the kube-aws-oci helper (plugins/oci)", dep)
			}
		}
	}
}
