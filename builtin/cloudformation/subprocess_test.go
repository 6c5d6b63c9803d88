package cloudformation

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/test/builtintest"
)

func TestMain(m *testing.M) { plugintest.Main(m) }

// TestBinaryThroughProtocol runs the built plugin as kube-aws does, as a
// go-plugin subprocess over gRPC, and wants every rendered template to be
// byte for byte the golden file: nothing may be lost or reordered on the
// wire, and the binary must register with the stages it implements.
func TestBinaryThroughProtocol(t *testing.T) {
	bin := builtintest.Path(t, "cloudformation")
	cfg, c := loadFixture(t, "minimal")
	values, diags := config.EffectiveValues(c, "testdata")
	if diags.HasFatal() {
		t.Fatal(diags)
	}
	out := plugintest.Run(t, bin, &stage.Input{Config: cfg, Values: values}, stage.Initialise)
	if got := out.Plugin.Info.Stages; len(got) != 2 || got[0] != stage.Initialise || got[1] != stage.Render {
		t.Errorf("stages %v", got)
	}
	// Render gets the merged constructs, with the iam plugin's late stack,
	// as kube-aws passes them on.
	set := merged(t, out.Results[stage.Initialise].Constructs)
	out = plugintest.Run(t, bin, &stage.Input{Config: cfg, Values: values, Constructs: set}, stage.Render)
	res := out.Results[stage.Render]
	if res == nil || res.Diagnostics.HasFatal() {
		t.Fatalf("render: %v", res.Diagnostics)
	}
	if len(res.Files) != 4 || len(res.Stacks) != 4 {
		t.Fatalf("%d files, %d stacks", len(res.Files), len(res.Stacks))
	}
	for _, f := range res.Files {
		want, err := os.ReadFile(filepath.Join("testdata", "golden", "minimal", f.Path))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(want, f.Content) {
			t.Errorf("%s through the protocol differs from the golden file", f.Path)
		}
	}
}
