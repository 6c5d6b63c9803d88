// Package pythonplugin_test runs the Python example plugin through all four
// stages with kube-aws's own host code (plugins/plugintest), so `make test`
// proves a plugin written in another language speaks the same protocol: the
// handshake cookie, protocol negotiation, GetInfo, the streamed stage calls
// and events.
package pythonplugin_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/host"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
)

// python finds the interpreter that has grpcio: the one of $KUBE_AWS_VENV
// (what `make test` sets), else the repository's .venv. The test fails rather
// than skips without it: the Python route is a promise of the project.
func python(t *testing.T) string {
	t.Helper()
	var candidates []string
	if v := os.Getenv("KUBE_AWS_VENV"); v != "" {
		candidates = append(candidates, filepath.Join(v, "bin", "python"))
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	candidates = append(candidates, filepath.Join(root, ".venv", "bin", "python"))
	for _, c := range candidates {
		if _, err := os.Stat(c); err == nil {
			return c
		}
	}
	t.Fatalf("no Python virtual environment with grpcio (looked for %s): run make venv", strings.Join(candidates, ", "))
	return ""
}

func TestPythonPluginAllStages(t *testing.T) {
	py := python(t)
	exe, err := filepath.Abs("python-example")
	if err != nil {
		t.Fatal(err)
	}
	in := &stage.Input{
		Config: json.RawMessage(`{"clusterName":"py","region":"us-east-1"}`),
		Values: map[string]stage.PluginValues{
			"python-example": {Values: json.RawMessage(`{"greeting":"hi there"}`)},
		},
	}
	opts := host.Options{Env: []string{"KUBE_AWS_PYTHON=" + py}}
	out, err := plugintest.RunWith(t, exe, opts, in)
	if err != nil {
		msg := err.Error()
		if out != nil && out.Output != nil {
			msg += "\nplugin output:\n" + out.Output.String()
		}
		if strings.Contains(msg, "No module named") {
			msg += "\n(the interpreter lacks grpcio or grpcio-health-checking: run make venv)"
		}
		t.Fatal(msg)
	}

	info := out.Plugin.Info
	if info.Name != "python-example" || len(info.Stages) != 4 {
		t.Fatalf("GetInfo: got name %q stages %v, want python-example in all four stages", info.Name, info.Stages)
	}
	if len(info.ValuesSchema) == 0 || !json.Valid(info.ValuesSchema) {
		t.Errorf("GetInfo: values schema %q is not JSON", info.ValuesSchema)
	}

	// initialise: the unit, the flag and the initialised values.
	ini := out.Results[stage.Initialise]
	if ini == nil || ini.Constructs == nil {
		t.Fatalf("initialise returned no constructs: %+v", ini)
	}
	if len(ini.Constructs.Units) != 1 {
		t.Fatalf("initialise: want one unit, got %+v", ini.Constructs.Units)
	}
	u := ini.Constructs.Units[0]
	if u.Name != "python-example.service" || !u.Enable || u.Target.Role != "controller" ||
		!strings.Contains(u.Content, "ExecStart=/bin/echo hi there") || !strings.Contains(u.Content, "[Install]") {
		t.Errorf("initialise: unexpected unit %+v", u)
	}
	flags := ini.Constructs.APIServer.Flags
	if len(flags) != 1 || flags[0].Name != "enable-admission-plugins" || flags[0].Value != "NodeRestriction" {
		t.Errorf("initialise: want --enable-admission-plugins=NodeRestriction, got %+v", flags)
	}
	if string(ini.Values) != `{"greeting": "hi there"}` && string(ini.Values) != `{"greeting":"hi there"}` {
		t.Errorf("initialise: values %s", ini.Values)
	}
	if !hasLog(out.Events[stage.Initialise], "hi there") {
		t.Errorf("initialise: no log event naming the greeting: %+v", out.Events[stage.Initialise])
	}

	// render: a file listing the merged units it was given.
	ren := out.Results[stage.Render]
	if ren == nil || len(ren.Files) != 1 {
		t.Fatalf("render: want one file, got %+v", ren)
	}
	f := ren.Files[0]
	var body struct {
		Plugin string   `json:"plugin"`
		Units  []string `json:"units"`
	}
	if err := json.Unmarshal(f.Content, &body); err != nil {
		t.Fatalf("render: %s is not JSON: %v", f.Path, err)
	}
	if f.Path != "extra/python-example.json" || body.Plugin != "python-example" ||
		len(body.Units) != 1 || body.Units[0] != "python-example.service" {
		t.Errorf("render: unexpected file %s: %s", f.Path, f.Content)
	}

	// deploy: an output.
	dep := out.Results[stage.Deploy]
	if dep == nil || dep.Deploy == nil || dep.Deploy.Outputs["PythonExample"] != "deployed" {
		t.Errorf("deploy: want output PythonExample=deployed, got %+v", dep)
	}

	// validate: the deploy result (its own, as plugintest passes it on) has
	// no API endpoint, which the plugin reports as a warning with a path.
	val := out.Results[stage.Validate]
	if val == nil || len(val.Diagnostics) != 1 {
		t.Fatalf("validate: want one diagnostic, got %+v", val)
	}
	d := val.Diagnostics[0]
	if d.Severity != diag.Warning || !strings.Contains(d.Message, "APIEndpoint") || d.Plugin != "python-example" || d.Stage != "validate" {
		t.Errorf("validate: unexpected diagnostic %+v", d)
	}
}

// TestPythonPluginValidatePasses gives validate a deploy result with the API
// endpoint: then it has nothing to report.
func TestPythonPluginValidatePasses(t *testing.T) {
	py := python(t)
	exe, err := filepath.Abs("python-example")
	if err != nil {
		t.Fatal(err)
	}
	in := &stage.Input{
		Deploy: &stage.DeployResult{Outputs: map[string]string{"APIEndpoint": "https://api.example.com"}},
	}
	out, err := plugintest.RunWith(t, exe, host.Options{Env: []string{"KUBE_AWS_PYTHON=" + py}}, in, stage.Validate)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.Output)
	}
	if ds := out.Results[stage.Validate].Diagnostics; len(ds) != 0 {
		t.Errorf("validate: want no diagnostics, got %+v", ds)
	}
}

// TestPythonPluginRefusesToRunByHand: without kube-aws's cookie the plugin
// explains what it is instead of waiting for a handshake.
func TestPythonPluginRefusesToRunByHand(t *testing.T) {
	py := python(t)
	cmd := exec.Command(py, "plugin.py")
	cmd.Env = append(os.Environ(), "KUBE_AWS_PLUGIN=")
	b, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(b), "started by kube-aws") {
		t.Errorf("want a refusal naming kube-aws, got err %v output %q", err, b)
	}
}

func hasLog(evs []stage.Event, sub string) bool {
	for _, e := range evs {
		if e.Kind == stage.EventLog && strings.Contains(e.Message, sub) {
			return true
		}
	}
	return false
}
