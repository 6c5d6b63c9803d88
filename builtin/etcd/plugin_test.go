package etcd

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/test/builtintest"
)

func TestMain(m *testing.M) { plugintest.Main(m) }

const clusterJSON = `{"clusterName":"demo","region":"us-east-1","availabilityZones":["us-east-1a","us-east-1b"],
"s3URI":"s3://demo-assets/kube-aws","kmsKeyArn":"arn:aws:kms:us-east-1:123456789012:key/demo","network":{"vpcCIDR":"10.0.0.0/16"},"etcd":{"count":%d,"instanceType":"t3.medium"}}`

func run(t *testing.T, bin string, count int, values string) *stage.Result {
	t.Helper()
	in := &stage.Input{Config: json.RawMessage(strings.Replace(clusterJSON, "%d", string(rune('0'+count)), 1))}
	if values != "" {
		in.Values = map[string]stage.PluginValues{"etcd": {Values: json.RawMessage(values)}}
	}
	out := plugintest.Run(t, bin, in, stage.Initialise)
	return out.Results[stage.Initialise]
}

// TestPluginBinary runs the built plugin through kube-aws's host code: the
// etcd stack's members, the role's units and plans, and the warning a
// single member gets.
func TestPluginBinary(t *testing.T) {
	bin := builtintest.Path(t, "etcd")
	res := run(t, bin, 3, `{"dataVolumeSize": 50}`)
	if len(res.Diagnostics) != 0 || res.Constructs == nil {
		t.Fatalf("initialise: %+v", res)
	}
	set := res.Constructs
	if len(set.Stacks) != 1 || set.Stacks[0].Name != names.StackEtcd {
		t.Fatalf("stacks %+v", set.Stacks)
	}
	groups, volumes := 0, 0
	for _, r := range set.Stacks[0].Resources {
		var body struct{ Type string }
		if err := json.Unmarshal(r, &body); err != nil {
			t.Fatal(err)
		}
		switch body.Type {
		case "AWS::AutoScaling::AutoScalingGroup":
			groups++
		case "AWS::EC2::Volume":
			volumes++
			if !strings.Contains(string(r), `"Size":50`) {
				t.Errorf("volume without the size from values: %s", r)
			}
		}
	}
	if groups != 3 || volumes != 3 {
		t.Errorf("%d groups and %d volumes; want one of each per member", groups, volumes)
	}
	plans := map[string]bool{}
	for _, f := range set.Files {
		plans[f.Path] = true
	}
	for _, p := range []string{nodeplan.VolumesPath, nodeplan.DNSPath, nodeplan.GoalPath} {
		if !plans[p] {
			t.Errorf("no %s", p)
		}
	}
	if len(set.Artifacts) != 1 || set.Artifacts[0].Name != "etcd" || len(set.Artifacts[0].Files) != 3 || len(set.Artifacts[0].Sources) != 2 {
		t.Errorf("artifacts %+v; want the etcd release for amd64 and arm64", set.Artifacts)
	}
	if len(set.Units) != 3 || set.Units[0].Name != "etcd.service" {
		t.Errorf("units %+v", set.Units)
	}

	res = run(t, bin, 1, `{"snapshotInterval": "0"}`)
	if len(res.Diagnostics) != 1 || res.Diagnostics[0].Severity != diag.Warning || res.Diagnostics[0].Path != "etcd.count" ||
		res.Diagnostics[0].Plugin != "etcd" {
		t.Errorf("one member: %v", res.Diagnostics)
	}
	if len(res.Constructs.Units) != 1 {
		t.Errorf("snapshots off still has units %+v", res.Constructs.Units)
	}
}
