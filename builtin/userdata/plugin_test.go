package userdata

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/test/builtintest"
)

func TestMain(m *testing.M) { plugintest.Main(m) }

// TestPluginBinary renders through the built plugin and kube-aws's host code,
// so the files and diagnostics survive the protocol intact.
func TestPluginBinary(t *testing.T) {
	bin := builtintest.Path(t, "userdata")
	cluster := `{"clusterName":"demo","kubernetesVersion":"1.31.4","nodePools":[{"name":"a"},{"name":"b"}]}`
	set := &construct.Set{
		Units: []construct.Unit{
			{Target: construct.Target{Role: construct.Worker}, Name: "x.service", Enable: true, Content: "[Service]\nExecStart=/bin/true\n"},
		},
		Files: []construct.File{
			{Target: construct.Target{Role: construct.Worker, NodePool: "b"}, Path: "/etc/token", Sensitive: true, Content: "((secret:p/token))"},
		},
	}
	out := plugintest.Run(t, bin, &stage.Input{Config: json.RawMessage(cluster), Constructs: set}, stage.Render)
	res := out.Results[stage.Render]
	var paths []string
	for _, f := range res.Files {
		paths = append(paths, f.Path)
	}
	if got := strings.Join(paths, " "); got != "userdata/controller.yaml userdata/etcd.yaml userdata/nodepool-a.yaml userdata/nodepool-b.yaml" {
		t.Errorf("files %s", got)
	}
	// x.service is enabled but has no [Install]: one fatal naming the plugin,
	// the unit and its target.
	if len(res.Diagnostics) != 1 || !res.Diagnostics.HasFatal() {
		t.Fatalf("diagnostics %v", res.Diagnostics)
	}
	d := res.Diagnostics[0]
	if d.Plugin != "userdata" || !strings.Contains(d.Message, "x.service") || !strings.Contains(d.Message, "(worker)") {
		t.Errorf("diagnostic %s", d)
	}
	b := string(res.Files[3].Content)
	if !strings.Contains(b, "((secret:p/token))") || !strings.Contains(b, "/etc/kube-aws/secrets.json") {
		t.Errorf("pool b userdata lacks the marker file or the secrets plan:\n%s", b)
	}
	if strings.Contains(string(res.Files[2].Content), "/etc/token") {
		t.Errorf("pool a got pool b's file")
	}
}
