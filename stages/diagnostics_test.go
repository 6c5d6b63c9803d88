package stages

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
)

// A plugin's diagnostic with a config path gets the file, line and column
// of that path in cluster.yaml (issue 10, point 3), and a diagnostic about
// another plugin's contribution names that plugin, with the reporting
// plugin in its own field (issue 14, point 5): in the text form and in the
// JSON form kube-aws prints.
func TestPluginDiagnosticsArePlacedAndAttributed(t *testing.T) {
	h := newHarness(t)
	yaml := "clusterName: test\nplugins:\n  mine:\n    enabled: true\n    values:\n      pool: gpu\n"
	h.writeConfig(yaml)
	c, diags := config.Parse(filepath.Join(h.dir, "cluster.yaml"), []byte(yaml))
	if diags.HasFatal() {
		t.Fatal(diags)
	}
	h.cluster = c
	mine := h.add("mine", SourceUser, stage.Initialise)
	mine.run = func(context.Context, *stage.Input, func(stage.Event)) (*stage.Result, error) {
		return &stage.Result{Diagnostics: diag.List{
			diag.Warningf("node pool gpu has no GPUs").At("plugins.mine.values.pool"),
			// Not a config path: no position.
			diag.Warningf("unit odd").At("constructs.units[worker:a.service]"),
		}}, nil
	}
	helm := h.add("helm", SourceBuiltin, stage.Initialise)
	helm.run = func(context.Context, *stage.Input, func(stage.Event)) (*stage.Result, error) {
		return &stage.Result{Diagnostics: diag.List{diag.Warningf("chart of release x is old").About("mine")}}, nil
	}
	out, err := h.session().Run(context.Background(), stage.Initialise)
	if err != nil {
		t.Fatal(err)
	}
	byMsg := map[string]diag.Diagnostic{}
	for _, d := range out.Diagnostics {
		byMsg[d.Message] = d
	}
	placed := byMsg["node pool gpu has no GPUs"]
	file := filepath.Join(h.dir, "cluster.yaml")
	if placed.File != file || placed.Line != 6 || placed.Column != 13 || placed.Plugin != "mine" || placed.ReportedBy != "" {
		t.Errorf("placed: %+v", placed)
	}
	if s := placed.String(); !strings.Contains(s, file+":6:13 plugins.mine.values.pool") {
		t.Errorf("text: %s", s)
	}
	if d := byMsg["unit odd"]; d.File != "" || d.Line != 0 {
		t.Errorf("a construct path got a position: %+v", d)
	}
	about := byMsg["chart of release x is old"]
	if about.Plugin != "mine" || about.ReportedBy != "helm" || about.Stage != "initialise" {
		t.Errorf("attributed: %+v", about)
	}
	if s := about.String(); !strings.HasPrefix(s, "warning [mine/initialise, reported by helm]") {
		t.Errorf("text: %s", s)
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"file":"` + file + `","line":6,"column":13`, `"plugin":"mine","stage":"initialise"`, `"reportedBy":"helm"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s: %s", want, b)
		}
	}
}
