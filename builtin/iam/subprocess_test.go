package iam

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/test/builtintest"
)

func TestMain(m *testing.M) { plugintest.Main(m) }

// TestBinaryThroughProtocol runs the built plugin as a go-plugin subprocess:
// initialise's statements flow into render as kube-aws passes them on, and
// iam.json must equal the golden file byte for byte.
func TestBinaryThroughProtocol(t *testing.T) {
	bin := builtintest.Path(t, "iam")
	cfg, _ := loadFixture(t, "minimal")
	out := plugintest.Run(t, bin, &stage.Input{Config: cfg})
	res := out.Results[stage.Render]
	if res == nil || res.Diagnostics.HasFatal() || len(res.Files) != 1 {
		t.Fatalf("render: %+v", res)
	}
	want, err := os.ReadFile(filepath.Join("testdata", "golden", "minimal.iam.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(want, res.Files[0].Content) {
		t.Error("iam.json through the protocol differs from the golden file")
	}
	if len(res.Stacks) != 1 || res.Stacks[0].Name != "iam" || res.Stacks[0].Template != "stacks/iam.json" {
		t.Errorf("stack specs %+v", res.Stacks)
	}
}
