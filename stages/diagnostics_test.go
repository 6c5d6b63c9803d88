package stages

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/source"
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
	mine := h.add("mine", source.User, stage.Initialise)
	mine.run = func(context.Context, *stage.Input, func(stage.Event)) (*stage.Result, error) {
		return &stage.Result{Diagnostics: diag.List{
			diag.Warningf("node pool gpu has no GPUs").At("plugins.mine.values.pool"),
			// Not a config path: no position.
			diag.Warningf("unit odd").At("constructs.units[worker:a.service]"),
		}}, nil
	}
	helm := h.add("helm", source.Builtin, stage.Initialise)
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

// The AWS flags reach, typed in the stage input, the plugins that declare
// they reach AWS, and no other plugin (they used to travel in every
// plugin's environment).
func TestAWSSettingsOnlyForPluginsThatReachAWS(t *testing.T) {
	h := newHarness(t)
	aws := h.add("deploy", source.Builtin, stage.Initialise)
	aws.info.ReachesAWS = true
	other := h.add("mine", source.User, stage.Initialise)
	h.enable("mine", true)
	h.opts.AWS = &stage.AWSSettings{Profile: "prod", Region: "eu-west-1", EndpointURL: "http://127.0.0.1:5000"}
	if _, err := h.session().Run(context.Background(), stage.Initialise); err != nil {
		t.Fatal(err)
	}
	var got stage.Input
	if err := json.Unmarshal(aws.input(stage.Initialise), &got); err != nil {
		t.Fatal(err)
	}
	if got.AWS == nil || *got.AWS != *h.opts.AWS {
		t.Errorf("the plugin that reaches AWS got %+v", got.AWS)
	}
	if strings.Contains(string(other.input(stage.Initialise)), `"aws"`) {
		t.Errorf("another plugin got the AWS settings: %s", other.input(stage.Initialise))
	}
}

// diff and destroy are operations: after initialise and render, every
// plugin that implements one is called on the render output; destroy runs
// in reverse plugin order; the results are combined in the Outcome.
func TestOperations(t *testing.T) {
	h := newHarness(t)
	var mu sync.Mutex
	var order []string
	for _, name := range []string{"cloudformation", "deploy", "extra"} {
		name := name
		p := h.add(name, source.Builtin, stage.Initialise, stage.Render, stage.Diff, stage.Destroy)
		p.run = func(_ context.Context, in *stage.Input, _ func(stage.Event)) (*stage.Result, error) {
			switch in.Stage {
			case stage.Render:
				return fileResult(name+".txt", name), nil
			case stage.Diff:
				if in.Rendered == nil {
					t.Errorf("%s: diff without the render output", name)
				}
				d := &stage.DiffResult{Stacks: []stage.StackDiff{{Stack: name, Action: stage.ActionNone}}, Changed: name == "extra"}
				if name == "deploy" {
					d.Machines = []stage.MachineDiff{{Stack: "nodepool-a", Role: "nodepool-a", InstanceID: "i-1", Reasons: []string{"plugin extra changed"}}}
				}
				return &stage.Result{Diff: d}, nil
			case stage.Destroy:
				mu.Lock()
				order = append(order, name)
				mu.Unlock()
				return &stage.Result{Destroy: &stage.DestroyResult{Deleted: []string{name}}}, nil
			}
			return &stage.Result{}, nil
		}
	}
	out, err := h.session().Operate(context.Background(), stage.Diff)
	if err != nil {
		t.Fatal(err)
	}
	if out.Diff == nil || len(out.Diff.Stacks) != 3 || !out.Diff.Changed || out.Rendered == nil || out.Stages[2].Stage != stage.Diff ||
		len(out.Diff.Machines) != 1 || out.Diff.Machines[0].InstanceID != "i-1" {
		t.Errorf("diff outcome %+v", out)
	}
	out, err = h.session().Operate(context.Background(), stage.Destroy)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(order, ",") != "extra,deploy,cloudformation" || strings.Join(out.Destroy.Deleted, ",") != "extra,deploy,cloudformation" {
		t.Errorf("destroy order %v, deleted %v", order, out.Destroy.Deleted)
	}
	if _, err := os.Stat(filepath.Join(h.dir, ".kube-aws", "state", "destroy.json")); err == nil {
		t.Error("an operation persisted state")
	}
}
