package flannel

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/test/builtintest"
)

func TestMain(m *testing.M) { plugintest.Main(m) }

// TestPluginBinary runs the built plugin over the protocol: it provides the
// cni capability and contributes its release with a chart on disk.
func TestPluginBinary(t *testing.T) {
	bin := builtintest.Path(t, "flannel")
	in := &stage.Input{WorkDir: t.TempDir(), Config: json.RawMessage(`{"clusterName":"demo","kubernetesVersion":"1.34.4",
		"kubernetes":{"podCIDR":"10.2.0.0/16","serviceCIDR":"10.3.0.0/24","clusterDomain":"cluster.local"}}`)}
	out := plugintest.Run(t, bin, in, stage.Initialise)
	if caps := out.Plugin.Info.Capabilities; len(caps) != 1 || caps[0] != "cni" {
		t.Errorf("capabilities %v, want cni", caps)
	}
	res := out.Results[stage.Initialise]
	if len(res.Diagnostics) != 0 || res.Constructs == nil || len(res.Constructs.HelmReleases) != 1 {
		t.Fatalf("initialise: %+v", res)
	}
	r := res.Constructs.HelmReleases[0]
	var v map[string]string
	if err := json.Unmarshal(r.Values, &v); err != nil || v["podCIDR"] != "10.2.0.0/16" {
		t.Errorf("values %s (%v)", r.Values, err)
	}
	if _, err := os.Stat(filepath.Join(r.Chart.Path, "Chart.yaml")); err != nil {
		t.Errorf("chart: %v", err)
	}
}
