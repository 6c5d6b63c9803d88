package helm

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/test/builtintest"
)

func TestMain(m *testing.M) { plugintest.Main(m) }

// TestPluginBinary runs render through the built plugin: it renders both
// test charts, packaging the good one and failing on the broken one by
// contributing plugin, release and template. The plugin has no initialise:
// what installs the releases is the controllers' add-ons plan.
func TestPluginBinary(t *testing.T) {
	bin := builtintest.Path(t, "helm")
	abs := func(name string) string {
		p, err := filepath.Abs(filepath.Join("testdata", "charts", name))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	set := &construct.Set{}
	set.HelmReleases = []construct.HelmRelease{
		{Name: "hello", Namespace: "default", Chart: construct.Chart{Path: abs("hello")}},
		// Plugin is what the merge fills in; it must cross the protocol.
		{Name: "oops", Namespace: "default", Chart: construct.Chart{Path: abs("broken")}, Plugin: "extras"},
	}
	out := plugintest.Run(t, bin, &stage.Input{Config: json.RawMessage(`{"kubernetesVersion":"1.31.4"}`), Constructs: set}, stage.Render)
	res := out.Results[stage.Render]
	var paths []string
	for _, f := range res.Files {
		paths = append(paths, f.Path)
	}
	if got := strings.Join(paths, " "); got != "charts/hello-0.1.0.tgz charts/releases.json" {
		t.Errorf("files %s", got)
	}
	if len(res.Diagnostics) != 1 {
		t.Fatalf("diagnostics %v", res.Diagnostics)
	}
	d := res.Diagnostics[0]
	if d.Severity != "fatal" || !strings.Contains(d.Message, `plugin "extras": release "oops"`) || d.File != "broken/templates/deployment.yaml" {
		t.Errorf("diagnostic %s (file %s)", d, d.File)
	}
}
