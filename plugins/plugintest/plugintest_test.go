package plugintest_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
)

func TestMain(m *testing.M) { plugintest.Main(m) }

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
