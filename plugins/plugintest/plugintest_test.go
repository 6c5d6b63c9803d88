package plugintest_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/host"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
)

func TestMain(m *testing.M) { plugintest.Main(m) }

// A plugin's source may sit in a folder named otherwise (here plugin/, as
// an author's repository may have it): Build names the binary after the
// plugin's Info, so Run calls it by its name and it reads the values given
// under that name. A binary named otherwise is refused, as kube-aws refuses
// it, instead of running with values meant for another name.
func TestBuildNamesThePluginAfterItsInfo(t *testing.T) {
	bin := plugintest.Build(t, "../testdata/plugin")
	if filepath.Base(bin) != "audit-trail" {
		t.Fatalf("Build named the binary %s, want audit-trail (the plugin's Info name)", bin)
	}
	in := &stage.Input{Values: map[string]stage.PluginValues{"audit-trail": {Values: json.RawMessage(`{"retentionDays": 7}`)}}}
	out := plugintest.Run(t, bin, in)
	if out.Plugin.Name != "audit-trail" {
		t.Errorf("the plugin ran as %q", out.Plugin.Name)
	}
	files := out.Results[stage.Initialise].Constructs.Files
	if len(files) != 1 || files[0].Content != "7\n" {
		t.Errorf("the plugin did not read its values: %+v", files)
	}

	renamed := filepath.Join(t.TempDir(), "plugin")
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(renamed, b, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err = plugintest.RunWith(t, renamed, host.Options{}, in)
	if err == nil || !strings.Contains(err.Error(), `says its name is "audit-trail", but its executable is named "plugin"`) ||
		!strings.Contains(err.Error(), `name the file "audit-trail"`) {
		t.Fatalf("a binary named otherwise than its plugin: %v", err)
	}
}

// The echo test plugin goes through every stage it implements: its values
// come back from initialise, its construct reaches render, its events arrive
// in order, and the store it writes survives into the next stage.
func TestRunEcho(t *testing.T) {
	bin := plugintest.Build(t, "../testdata/echo")
	if again := plugintest.Build(t, "../testdata/echo"); again != bin {
		t.Errorf("second Build returned %s, want the cached %s", again, bin)
	}
	in := &stage.Input{
		Config: json.RawMessage(`{"clusterName":"c1"}`),
		Values: map[string]stage.PluginValues{"echo": {Values: json.RawMessage(`{"greeting":"hi"}`)}},
	}
	out := plugintest.Run(t, bin, in)

	if got := out.Plugin.Info; got.Name != "echo" || got.Version != "1.2.3" ||
		len(got.Stages) != 2 || got.Stages[0] != stage.Initialise || got.Stages[1] != stage.Render {
		t.Errorf("info: %+v", got)
	}
	init := out.Results[stage.Initialise]
	if init == nil {
		t.Fatal("no initialise result")
	}
	var vals map[string]any
	if err := json.Unmarshal(init.Values, &vals); err != nil || vals["greeting"] != "hi" || vals["runs"] != float64(1) {
		t.Errorf("initialise values: %s (%v)", init.Values, err)
	}
	if init.Constructs == nil || len(init.Constructs.Units) != 1 || init.Constructs.Units[0].Name != "echo.service" {
		t.Errorf("initialise constructs: %+v", init.Constructs)
	}
	evs := out.Events[stage.Initialise]
	if len(evs) != 3 || evs[0].Kind != stage.EventLog || evs[0].Message != "echo says hi" ||
		evs[1].Kind != stage.EventProgress || evs[1].Current != 1 || evs[1].Total != 2 ||
		evs[2].Message != "done" {
		t.Errorf("initialise events: %+v", evs)
	}
	render := out.Results[stage.Render]
	if render == nil || len(render.Files) != 1 {
		t.Fatalf("render result: %+v", render)
	}
	f := render.Files[0]
	if f.Plugin != "echo" || string(f.Content) != "units=1 stage=render keys=[runs]\n" {
		t.Errorf("render file: plugin %q content %q", f.Plugin, f.Content)
	}
	if !strings.Contains(out.Output.String(), `[echo] registered: accepted=true reason=""`) {
		t.Errorf("plugin stderr not forwarded with its name; output:\n%s", out.Output)
	}
}
