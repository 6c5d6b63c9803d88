package kubernetes

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/builtin/kubernetes/internal/upgrade"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/host"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/test/builtintest"
)

// runStages runs the built plugin's stages with its store in storeDir, as
// kube-aws keeps it (.kube-aws/store/kubernetes.json).
func runStages(t *testing.T, storeDir, config string, deploy *stage.DeployResult, stages ...stage.Name) *plugintest.Outcome {
	t.Helper()
	in := &stage.Input{Config: json.RawMessage(config), WorkDir: t.TempDir(), Deploy: deploy}
	out, err := plugintest.RunWith(t, builtintest.Path(t, "kubernetes"), host.Options{StoreDir: storeDir}, in, stages...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.Output)
	}
	return out
}

func withVersion(v string) string {
	return strings.Replace(clusterJSON, `"1.34.4"`, `"`+v+`"`, 1)
}

func storeOf(dir string) *host.Store { return host.NewStore(filepath.Join(dir, "kubernetes.json")) }

// TestPluginBinaryVersionSkew: a kubernetesVersion the version the cluster
// last deployed cannot change to (the upstream skew policy) is one fatal at
// kubernetesVersion naming both versions and the rule, with a hint, and
// contributes nothing; an allowed change (one minor up, any patch) passes.
func TestPluginBinaryVersionSkew(t *testing.T) {
	tests := []struct {
		deployed, configured string
		// want are fragments of the fatal, none when allowed.
		want []string
		hint string
	}{
		{deployed: "v1.33.13", configured: "1.34.4"},
		{deployed: "v1.34.4", configured: "1.34.4"},
		{deployed: "v1.34.9", configured: "1.34.4"}, // a patch downgrade within 1.34
		{deployed: "v1.34.4", configured: "1.33.13",
			want: []string{"this cluster last deployed Kubernetes v1.34.4 (.kube-aws/store/kubernetes.json)", "v1.34.4 -> v1.33.13 downgrades the minor version from 1.34 to 1.33", "upstream version skew policy"},
			hint: "keep kubernetesVersion at a 1.34.x release"},
		{deployed: "v1.32.9", configured: "1.34.4",
			want: []string{"this cluster last deployed Kubernetes v1.32.9", "v1.32.9 -> v1.34.4 skips 1.33", "one minor version at a time"},
			hint: "upgrade to 1.33 first"},
		{deployed: "1.34.x", configured: "1.34.4",
			want: []string{`"1.34.x"`, upgrade.StoreDeployedVersion, "does not parse"},
			hint: "the deploy plugin still checks the running cluster"},
	}
	for _, tt := range tests {
		t.Run(tt.deployed+"->"+tt.configured, func(t *testing.T) {
			dir := t.TempDir()
			if err := storeOf(dir).Put(upgrade.StoreDeployedVersion, []byte(tt.deployed)); err != nil {
				t.Fatal(err)
			}
			res := runStages(t, dir, withVersion(tt.configured), nil, stage.Initialise).Results[stage.Initialise]
			d := res.Diagnostics
			if tt.want == nil {
				if len(d) != 0 || res.Constructs.IsEmpty() {
					t.Fatalf("refused: %v", d)
				}
				return
			}
			if len(d) != 1 || d[0].Severity != diag.Fatal || d[0].Path != "kubernetesVersion" || d[0].Plugin != "kubernetes" ||
				d[0].Stage != "initialise" || !strings.Contains(d[0].Hint, tt.hint) {
				t.Fatalf("%v; want one fatal at kubernetesVersion with the hint %q", d, tt.hint)
			}
			for _, w := range tt.want {
				if !strings.Contains(d[0].Message, w) {
					t.Errorf("message %q lacks %q", d[0].Message, w)
				}
			}
			if !res.Constructs.IsEmpty() {
				t.Error("a refused version contributes nothing")
			}
		})
	}
}

// TestPluginBinaryRecordsDeployedVersion: validate, given a deploy result
// with the control-plane stack, records the configured version; a validate
// without a deploy result or without that stack records nothing; the next
// initialise checks against the record.
func TestPluginBinaryRecordsDeployedVersion(t *testing.T) {
	dir := t.TempDir()
	recorded := func() string {
		t.Helper()
		v, ok, err := storeOf(dir).Get(upgrade.StoreDeployedVersion)
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return ""
		}
		return string(v)
	}
	old := withVersion("1.33.13")
	// Initialise and render never record: nothing was deployed.
	runStages(t, dir, old, nil, stage.Initialise)
	if v := recorded(); v != "" {
		t.Fatalf("initialise recorded %q", v)
	}
	// A deploy result without the control-plane stack deployed no version.
	network := &stage.DeployResult{Stacks: []stage.StackStatus{{Name: names.StackName("demo", names.StackNetwork), Status: "CREATE_COMPLETE"}}}
	runStages(t, dir, old, network, stage.Validate)
	runStages(t, dir, old, nil, stage.Validate)
	if v := recorded(); v != "" {
		t.Fatalf("validate without the control plane deployed recorded %q", v)
	}
	deployed := &stage.DeployResult{Stacks: []stage.StackStatus{
		network.Stacks[0],
		{Name: names.StackName("demo", names.StackControlPlane), Status: "CREATE_COMPLETE"},
	}}
	out := runStages(t, dir, old, deployed, stage.Validate)
	if v := recorded(); v != "v1.33.13" {
		t.Fatalf("recorded %q after a deploy of 1.33.13", v)
	}
	if !strings.Contains(out.Output.String()+eventsText(out.Events[stage.Validate]), "recorded Kubernetes v1.33.13") {
		t.Errorf("validate did not say what it recorded: %s %v", out.Output, out.Events)
	}
	// From 1.33.13 the next minor is allowed, going back to 1.32 or on to
	// 1.35 would not be (checked in TestPluginBinaryVersionSkew).
	if d := runStages(t, dir, clusterJSON, nil, stage.Initialise).Results[stage.Initialise].Diagnostics; len(d) != 0 {
		t.Fatalf("1.33.13 -> 1.34.4 refused: %v", d)
	}
	runStages(t, dir, clusterJSON, deployed, stage.Validate)
	if v := recorded(); v != "v1.34.4" {
		t.Fatalf("recorded %q after a deploy of 1.34.4", v)
	}
	if d := runStages(t, dir, old, nil, stage.Initialise).Results[stage.Initialise].Diagnostics; len(d) != 1 || !strings.Contains(d[0].Message, "downgrades") {
		t.Fatalf("1.34.4 -> 1.33.13 after the upgrade: %v", d)
	}
}

func eventsText(evs []stage.Event) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString(e.Message + "\n")
	}
	return b.String()
}

// TestPluginBinaryVersionOutput: the control-plane stack carries the
// Kubernetes version as an output, for the deploy plugin to read from the
// running cluster.
func TestPluginBinaryVersionOutput(t *testing.T) {
	for _, v := range []string{"1.33.13", "1.34.4"} {
		set := initialise(t, withVersion(v)).Constructs
		found := false
		for _, st := range set.Stacks {
			raw, ok := st.Outputs[names.OutputKubernetesVersion]
			if !ok {
				continue
			}
			var o struct{ Value string }
			if err := json.Unmarshal(raw, &o); err != nil {
				t.Fatal(err)
			}
			if st.Name != names.StackControlPlane || o.Value != "v"+v {
				t.Errorf("output %s on stack %s = %q, want v%s on %s", names.OutputKubernetesVersion, st.Name, o.Value, v, names.StackControlPlane)
			}
			found = true
		}
		if !found {
			t.Errorf("%s: no stack has the output %s", v, names.OutputKubernetesVersion)
		}
	}
}
