package apiserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/test/builtintest"
)

func TestMain(m *testing.M) { plugintest.Main(m) }

const clusterJSON = `{"clusterName":"demo","region":"eu-west-1","s3URI":"s3://assets/demo","kubernetesVersion":"1.34.4","etcd":{"count":3},"kubernetes":{"podCIDR":"10.2.0.0/16","serviceCIDR":"10.3.0.0/24","clusterDomain":"cluster.local"}}`

// TestPluginBinary runs the built plugin through kube-aws's own host code:
// registration, initialise (defaults plus the user's flags from values),
// render (checks on what initialise produced).
func TestPluginBinary(t *testing.T) {
	bin := builtintest.Path(t, "apiserver")
	in := &stage.Input{
		Config: json.RawMessage(clusterJSON),
		Values: map[string]stage.PluginValues{"apiserver": {Values: json.RawMessage(`{"flags":{"v":"2"}}`)}},
	}
	out := plugintest.Run(t, bin, in)
	if got := out.Plugin.Info.Stages; len(got) != 2 || got[0] != stage.Initialise || got[1] != stage.Render {
		t.Fatalf("stages = %v, want initialise and render", got)
	}
	ini := out.Results[stage.Initialise]
	if ini.Constructs == nil || len(ini.Diagnostics) != 0 {
		t.Fatalf("initialise: %+v", ini)
	}
	var v struct{ EtcdEndpoints []string }
	if err := json.Unmarshal(ini.Values, &v); err != nil || len(v.EtcdEndpoints) != 3 {
		t.Errorf("effective values %s: want three etcd endpoints (%v)", ini.Values, err)
	}
	found := false
	for _, f := range ini.Constructs.APIServer.Flags {
		found = found || (f.Name == "v" && f.Value == "2")
	}
	if !found {
		t.Errorf("the user's flag from values is missing: %+v", ini.Constructs.APIServer.Flags)
	}
	if d := out.Results[stage.Render].Diagnostics; len(d) != 0 {
		t.Errorf("render of the defaults: %v", d)
	}
}

func TestPluginBinaryChecksMergedFlags(t *testing.T) {
	bin := builtintest.Path(t, "apiserver")
	set := &construct.Set{APIServer: construct.APIServer{Flags: []construct.Flag{
		{Name: "etcd-servers", Value: "https://etcd0:2379"},
		{Name: "insecure-port", Value: "0"},
		{Name: "admission-control", Value: "NodeRestriction"},
		{Name: "etcd-server", Value: "https://etcd0:2379"},
	}}}
	out := plugintest.Run(t, bin, &stage.Input{Config: json.RawMessage(clusterJSON), Constructs: set}, stage.Render)
	d := out.Results[stage.Render].Diagnostics
	if f, w := d.Count(); f != 2 || w != 1 {
		t.Fatalf("got %v; want fatals for insecure-port and etcd-server, a warning for admission-control", d)
	}
	for _, x := range d {
		if x.Plugin != "apiserver" || x.Stage != "render" {
			t.Errorf("diagnostic from %q", x.Plugin)
		}
		if x.Severity == diag.Warning && !strings.Contains(x.Hint, "--enable-admission-plugins") {
			t.Errorf("deprecation without its replacement: %s", x)
		}
	}
}
