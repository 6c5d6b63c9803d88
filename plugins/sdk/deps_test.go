package sdk

import (
	"os/exec"
	"strings"
	"testing"
)

// Every plugin process pays the package init of everything the SDK imports
// before it can answer the handshake, so heavy libraries must stay out of
// its import graph (docs/design.md). This test fails the moment one sneaks in,
// for example through core/config.
func TestImportGraphStaysLean(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/kube-aws/kube-aws/plugins/sdk").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	forbidden := []string{
		"helm.sh/",
		"github.com/aws/aws-sdk-go-v2",
		"github.com/awslabs/goformation",
		"github.com/santhosh-tekuri/jsonschema",
		"k8s.io/client-go",
		"oras.land/",
		"github.com/sigstore/",
		"github.com/distribution/",
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if strings.HasPrefix(dep, f) {
				t.Errorf("plugins/sdk imports %s (via its import graph); keep heavy packages out of the SDK: every plugin process would pay their init time", dep)
			}
		}
	}
}
