package stages

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/source"
)

func TestDefaultOrderIsTheShippedFile(t *testing.T) {
	want := []string{"cloudformation", "iam", "pki", "etcd", "apiserver", "kubernetes", "flannel", "userdata", "helm", "deploy",
		"datadog-agent", "dex", "kube2iam", "bastion", "cluster-autoscaler", "customise"}
	if got := DefaultOrder(); !reflect.DeepEqual(got, want) {
		t.Fatalf("DefaultOrder() = %v, want %v", got, want)
	}
}

func TestOrderPutsUnlistedPluginsLastAlphabetically(t *testing.T) {
	got := Order([]string{"zeta", "helm", "alpha", "cloudformation", "dex"}, DefaultOrder())
	want := []string{"cloudformation", "helm", "dex", "alpha", "zeta"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Order = %v, want %v", got, want)
	}
}

func TestPlanEnablesBuiltinsAndOnlyEnabledOthers(t *testing.T) {
	h := newHarness(t)
	h.add("iam", source.Builtin)
	h.add("cloudformation", source.Builtin)
	h.add("helm", source.Builtin)
	h.add("dex", source.Contrib)
	h.add("bastion", source.Contrib)
	h.add("zz-mine", source.User)
	h.add("aa-mine", source.User)
	h.enable("helm", false)
	h.enable("dex", true)
	h.enable("zz-mine", true)
	h.enable("aa-mine", true)
	opts := h.opts
	opts.Deps = h.deps()
	p, err := NewPlan(opts)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, c := range p.Enabled {
		got = append(got, c.Name)
	}
	want := []string{"cloudformation", "iam", "dex", "aa-mine", "zz-mine"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("enabled = %v, want %v", got, want)
	}

	// pluginOrder replaces the shipped order.
	h.cluster.PluginOrder = []string{"zz-mine", "iam"}
	p, err = NewPlan(opts)
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, c := range p.Enabled {
		got = append(got, c.Name)
	}
	want = []string{"zz-mine", "iam", "aa-mine", "cloudformation", "dex"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("with pluginOrder, enabled = %v, want %v", got, want)
	}
}

// Settings for a plugin no source provides (a misspelt built-in, say)
// would be ignored: the name is refused, with the nearest plugin, unless
// the plugin is disabled.
func TestSettingsForAnUnknownPluginAreRefused(t *testing.T) {
	h := newHarness(t)
	h.add("cloudformation", source.Builtin)
	h.cluster.Plugins = map[string]config.PluginConfig{
		"cloudformaton": {Values: json.RawMessage(`{"tags":{"team":"a"}}`)},
		"elsewhere":     {Enabled: new(bool)},
	}
	_, err := h.open()
	if ExitCode(err) != ExitUsage {
		t.Fatalf("exit code = %d (%v), want 2", ExitCode(err), err)
	}
	ds := diagsOf(err)
	if len(ds) != 1 || ds[0].Path != "plugins.cloudformaton" ||
		!strings.Contains(ds[0].Message, `unknown plugin "cloudformaton" in plugins`) ||
		!strings.Contains(ds[0].Message, `(did you mean "cloudformation"?)`) {
		t.Fatalf("diagnostics = %v", ds)
	}
}

func TestEnablingAnUnknownPluginListsTheAvailableOnes(t *testing.T) {
	h := newHarness(t)
	h.add("iam", source.Builtin)
	h.add("dex", source.Contrib)
	h.enable("dexx", true)
	_, err := h.open()
	if ExitCode(err) != ExitUsage {
		t.Fatalf("exit code = %d (%v), want 2", ExitCode(err), err)
	}
	ds := diagsOf(err)
	if len(ds) != 1 || !strings.Contains(ds[0].Message, `plugin dexx is enabled but no plugin source provides it (did you mean "dex"?)`) ||
		ds[0].Path != "plugins.dexx" || !strings.Contains(ds[0].Hint, "rename it to dex") ||
		!strings.Contains(ds[0].Hint, "available plugins: dex, iam") {
		t.Fatalf("diagnostics = %v", ds)
	}
	if h.launched.Load() != 0 {
		t.Fatal("plugins were launched for an invalid configuration")
	}
}

// Every plugin gets the same input, the plugins of a stage run at the same
// time, and the merge follows plugin order whatever order they finish in.
func TestStagePluginsRunConcurrentlyOnIdenticalInputAndMergeInPluginOrder(t *testing.T) {
	h := newHarness(t)
	names := []string{"cloudformation", "iam", "apiserver", "userdata"}
	var started sync.WaitGroup
	started.Add(len(names))
	for i, n := range names {
		p := h.add(n, source.Builtin)
		delay := time.Duration(len(names)-i) * 15 * time.Millisecond // first in order finishes last
		p.run = func(ctx context.Context, in *stage.Input, emit func(stage.Event)) (*stage.Result, error) {
			switch in.Stage {
			case stage.Initialise:
				started.Done()
				waitOrFail(t, &started, "every initialise to start: plugins do not run concurrently")
				time.Sleep(delay)
				return &stage.Result{
					Values:     json.RawMessage(fmt.Sprintf(`{"by":%q}`, n)),
					Constructs: &construct.Set{Units: []construct.Unit{{Name: n + ".service", Target: construct.Target{Role: construct.Controller}}}},
				}, nil
			case stage.Render:
				time.Sleep(delay)
				return fileResult("out/"+n+".txt", n), nil
			}
			return &stage.Result{}, nil
		}
	}
	s := h.session()
	out, err := s.Render(context.Background())
	if err != nil {
		t.Fatalf("render: %v\n%v", err, out.Diagnostics)
	}
	for _, st := range []stage.Name{stage.Initialise, stage.Render} {
		first := h.plugins[0].input(st)
		for _, p := range h.plugins[1:] {
			if !bytes.Equal(first, p.input(st)) {
				t.Fatalf("%s: %s got input %s, %s got %s", st, h.plugins[0].cand.Name, first, p.cand.Name, p.input(st))
			}
		}
	}
	var in stage.Input
	if err := json.Unmarshal(h.plugins[0].input(stage.Render), &in); err != nil {
		t.Fatal(err)
	}
	var units []string
	for _, u := range in.Constructs.Units {
		units = append(units, u.Name)
	}
	if want := []string{"cloudformation.service", "iam.service", "apiserver.service", "userdata.service"}; !reflect.DeepEqual(units, want) {
		t.Fatalf("merged units = %v, want plugin order %v", units, want)
	}
	if got := string(in.Values["iam"].Values); got != `{"by":"iam"}` {
		t.Fatalf("render input values of iam = %s, want initialise's", got)
	}
	if got := out.Stages[1].Plugins; !reflect.DeepEqual(got, names) {
		t.Fatalf("render ran %v, want %v", got, names)
	}
}

func waitOrFail(t *testing.T, wg *sync.WaitGroup, what string) {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Errorf("timed out waiting for %s", what)
	}
}

func TestAFatalStopsTheRunAfterTheStageWithEveryFatalReported(t *testing.T) {
	h := newHarness(t)
	var ran atomic.Int32
	for _, n := range []string{"cloudformation", "iam", "helm"} {
		p := h.add(n, source.Builtin)
		n := n
		p.run = func(ctx context.Context, in *stage.Input, emit func(stage.Event)) (*stage.Result, error) {
			ran.Add(1)
			if n == "helm" {
				time.Sleep(20 * time.Millisecond) // finishes after the failing ones
				return &stage.Result{}, nil
			}
			return &stage.Result{Diagnostics: diag.List{diag.Fatalf("%s is broken", n).At("plugins." + n)}}, nil
		}
	}
	s := h.session()
	out, err := s.Render(context.Background())
	if ExitCode(err) != ExitFatal {
		t.Fatalf("exit code %d (%v), want 1", ExitCode(err), err)
	}
	if ran.Load() != 3 {
		t.Fatalf("%d plugins ran initialise, want every one of 3", ran.Load())
	}
	for _, p := range h.plugins {
		if got := p.called(); !reflect.DeepEqual(got, []stage.Name{stage.Initialise}) {
			t.Fatalf("%s was called in %v; the run must stop after initialise", p.cand.Name, got)
		}
	}
	fatals := out.Diagnostics.Fatals()
	if len(fatals) != 2 {
		t.Fatalf("fatals = %v, want both", fatals)
	}
	for _, d := range fatals {
		if d.Stage != "initialise" || (d.Plugin != "cloudformation" && d.Plugin != "iam") {
			t.Fatalf("diagnostic lacks its plugin and stage: %+v", d)
		}
	}
	if len(diagsOf(err)) != 2 {
		t.Fatalf("the error carries %v, want both fatals", diagsOf(err))
	}
	if _, err := os.Stat(filepath.Join(h.dir, ".kube-aws", "state", "initialise.json")); !os.IsNotExist(err) {
		t.Fatal("a failed stage left a state file behind")
	}
	if _, err := os.Stat(h.opts.OutDir); !os.IsNotExist(err) {
		t.Fatal("a failed run wrote the output folder")
	}
}

func TestWarningsArePrintedAndTheRunGoesOn(t *testing.T) {
	h := newHarness(t)
	p := h.add("apiserver", source.Builtin)
	p.run = func(ctx context.Context, in *stage.Input, emit func(stage.Event)) (*stage.Result, error) {
		if in.Stage == stage.Initialise {
			return &stage.Result{Diagnostics: diag.List{diag.Warningf("flag --foo is deprecated")}}, nil
		}
		return fileResult("a.txt", "a"), nil
	}
	s := h.session()
	out, err := s.Render(context.Background())
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	if len(out.Diagnostics) != 1 || out.Diagnostics[0].Severity != diag.Warning ||
		out.Diagnostics[0].Plugin != "apiserver" || out.Diagnostics[0].Stage != "initialise" {
		t.Fatalf("diagnostics = %v", out.Diagnostics)
	}
	if len(out.Stages) != 2 || out.Rendered == nil || len(out.Rendered.Files) != 1 {
		t.Fatalf("outcome = %+v", out)
	}

	// --warnings-as-errors makes the same run fail after initialise.
	h2 := newHarness(t)
	h2.plugins = []*fakePlugin{}
	p2 := h2.add("apiserver", source.Builtin)
	p2.run = p.run
	h2.opts.WarningsAsErrors = true
	s2 := h2.session()
	out, err = s2.Render(context.Background())
	if ExitCode(err) != ExitFatal {
		t.Fatalf("with --warnings-as-errors exit code = %d (%v), want 1", ExitCode(err), err)
	}
	if f := out.Diagnostics.Fatals(); len(f) != 1 || !strings.Contains(f[0].Hint, "warnings-as-errors") {
		t.Fatalf("diagnostics = %v", out.Diagnostics)
	}
	if got := p2.called(); len(got) != 1 {
		t.Fatalf("called in %v, want initialise only", got)
	}
}

func TestAFailingPluginIsAFatalNamingPluginAndStage(t *testing.T) {
	h := newHarness(t)
	crash := h.add("crash", source.Builtin)
	crash.run = func(ctx context.Context, in *stage.Input, emit func(stage.Event)) (*stage.Result, error) {
		if in.Stage == stage.Render {
			return nil, errors.New("plugin exited: panic: boom\ngoroutine 1 [running]:")
		}
		return &stage.Result{}, nil
	}
	bad := h.add("bad", source.Builtin)
	bad.run = func(ctx context.Context, in *stage.Input, emit func(stage.Event)) (*stage.Result, error) {
		if in.Stage == stage.Render {
			panic("adapter bug")
		}
		return &stage.Result{}, nil
	}
	s := h.session()
	out, err := s.Render(context.Background())
	if ExitCode(err) != ExitFatal {
		t.Fatalf("exit code %d, want 1", ExitCode(err))
	}
	text := out.Diagnostics.Error()
	for _, want := range []string{"plugin crash failed in stage render: plugin exited: panic: boom", "plugin bad failed in stage render: panic: adapter bug"} {
		if !strings.Contains(text, want) {
			t.Fatalf("diagnostics %q lack %q", text, want)
		}
	}
}

func TestDeployRunsPluginsInOrderEachSeeingTheResultSoFar(t *testing.T) {
	h := newHarness(t)
	var seen []string
	var mu sync.Mutex
	for _, n := range []string{"deploy", "helm", "cloudformation"} {
		p := h.add(n, source.Builtin)
		n := n
		p.run = func(ctx context.Context, in *stage.Input, emit func(stage.Event)) (*stage.Result, error) {
			switch in.Stage {
			case stage.Render:
				return fileResult(n+".json", "{}"), nil
			case stage.Deploy:
				mu.Lock()
				var had []string
				if in.Deploy != nil {
					for _, st := range in.Deploy.Stacks {
						had = append(had, st.Name)
					}
				}
				seen = append(seen, fmt.Sprintf("%s saw %v", n, had))
				mu.Unlock()
				if in.Rendered == nil || len(in.Rendered.Files) != 3 {
					return nil, fmt.Errorf("deploy input lacks the render output: %+v", in.Rendered)
				}
				return &stage.Result{Deploy: &stage.DeployResult{Stacks: []stage.StackStatus{{Name: n, Status: "CREATE_COMPLETE"}},
					Outputs: map[string]string{n + "Endpoint": "https://" + n}}}, nil
			case stage.Validate:
				if in.Deploy == nil || len(in.Deploy.Stacks) != 3 {
					return nil, fmt.Errorf("validate input lacks the deploy result: %+v", in.Deploy)
				}
			}
			return &stage.Result{}, nil
		}
	}
	s := h.session()
	if out, err := s.Render(context.Background()); err != nil {
		t.Fatalf("render: %v %v", err, out.Diagnostics)
	}
	out, err := s.RunStage(context.Background(), stage.Deploy)
	if err != nil {
		t.Fatalf("deploy: %v %v", err, out.Diagnostics)
	}
	want := []string{"cloudformation saw []", "helm saw [cloudformation]", "deploy saw [cloudformation helm]"}
	if !reflect.DeepEqual(seen, want) {
		t.Fatalf("deploy calls = %v, want %v", seen, want)
	}
	if len(out.Deploy.Stacks) != 3 || out.Deploy.Outputs["helmEndpoint"] != "https://helm" {
		t.Fatalf("deploy result = %+v", out.Deploy)
	}
	if out, err := s.RunStage(context.Background(), stage.Validate); err != nil {
		t.Fatalf("validate: %v %v", err, out.Diagnostics)
	}
}

func TestDeployStopsAtTheFirstFailingPlugin(t *testing.T) {
	h := newHarness(t)
	first := h.add("cloudformation", source.Builtin, stage.Deploy)
	first.run = func(ctx context.Context, in *stage.Input, emit func(stage.Event)) (*stage.Result, error) {
		return &stage.Result{Diagnostics: diag.List{diag.Fatalf("stack network failed: CREATE_FAILED")}}, nil
	}
	second := h.add("helm", source.Builtin, stage.Deploy)
	s := h.session()
	c := s.freshCarry()
	res, err := s.runStage(context.Background(), stage.Deploy, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(second.called()) != 0 {
		t.Fatal("helm deployed after cloudformation failed")
	}
	if !res.Diagnostics.HasFatal() || !strings.Contains(res.Diagnostics.Error(), "not run: plugin cloudformation failed earlier") {
		t.Fatalf("diagnostics = %v", res.Diagnostics)
	}
	if !reflect.DeepEqual(res.Plugins, []string{"cloudformation"}) {
		t.Fatalf("plugins that ran = %v", res.Plugins)
	}
}

func TestRunStageRefusesMissingState(t *testing.T) {
	h := newHarness(t)
	h.add("iam", source.Builtin)
	s := h.session()
	_, err := s.RunStage(context.Background(), stage.Render)
	if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "no state for stage initialise") ||
		!strings.Contains(err.Error(), "run `kube-aws stage initialise` first") {
		t.Fatalf("err = %v", err)
	}
	if _, err := s.RunStage(context.Background(), stage.Initialise); err != nil {
		t.Fatal(err)
	}
	_, err = s.RunStage(context.Background(), stage.Deploy)
	if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "no state for stage render") ||
		!strings.Contains(err.Error(), "run `kube-aws stage render` first") {
		t.Fatalf("err = %v", err)
	}
}

func TestRunStageRefusesStaleState(t *testing.T) {
	h := newHarness(t)
	p := h.add("iam", source.Builtin)
	p.run = func(ctx context.Context, in *stage.Input, emit func(stage.Event)) (*stage.Result, error) {
		if in.Stage == stage.Render {
			return fileResult("stacks/iam.json", "{}"), nil
		}
		return &stage.Result{}, nil
	}
	s := h.session()
	if _, err := s.RunStage(context.Background(), stage.Initialise); err != nil {
		t.Fatal(err)
	}

	// cluster.yaml changed: initialise must run again.
	h.writeConfig("clusterName: changed\n")
	s2 := h.session()
	_, err := s2.RunStage(context.Background(), stage.Render)
	if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "state of stage initialise is stale") ||
		!strings.Contains(err.Error(), "cluster.yaml") || !strings.Contains(err.Error(), "run `kube-aws stage initialise` again") {
		t.Fatalf("err = %v", err)
	}
	if _, err := s2.RunStage(context.Background(), stage.Initialise); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.RunStage(context.Background(), stage.Render); err != nil {
		t.Fatal(err)
	}

	// initialise's state changed after render ran: render's state is from the old one.
	st := filepath.Join(h.dir, ".kube-aws", "state", "initialise.json")
	b, _ := os.ReadFile(st)
	b = bytes.Replace(b, []byte(`"plugins":[`), []byte(`"plugins": [`), 1) // same content, different bytes
	if err := os.WriteFile(st, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = s2.RunStage(context.Background(), stage.Deploy)
	if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "state of stage render is stale: it was made from a different result of stage initialise") {
		t.Fatalf("err = %v", err)
	}

	// A plugin binary changed.
	if err := os.WriteFile(p.cand.Path, []byte("#!/bin/sh\n# new build\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	s3 := h.session()
	_, err = s3.RunStage(context.Background(), stage.Deploy)
	if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "plugin iam's executable changed") ||
		!strings.Contains(err.Error(), "`kube-aws stage initialise`") {
		t.Fatalf("err = %v", err)
	}

	if _, err := s3.RunStage(context.Background(), stage.Initialise); err != nil {
		t.Fatal(err)
	}
	// The render output was edited after render.
	if _, err := s3.RunStage(context.Background(), stage.Render); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.opts.OutDir, "stacks", "iam.json"), []byte("{ }"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = s3.RunStage(context.Background(), stage.Deploy)
	if ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "iam.json changed since render") {
		t.Fatalf("err = %v", err)
	}
}

func TestStateFilesRecordTheirInputsAndNeverASecret(t *testing.T) {
	h := newHarness(t)
	const plain = "s3cr3t-sentinel-value"
	h.secrets = map[string]string{"((secret:dex/password))": plain}
	var logs bytes.Buffer
	h.opts.Reporter = &logReporter{W: &logs}
	p := h.add("dex", source.Builtin)
	p.run = func(ctx context.Context, in *stage.Input, emit func(stage.Event)) (*stage.Result, error) {
		if in.Stage == stage.Deploy && in.Secrets["((secret:dex/password))"] != plain {
			return nil, errors.New("deploy did not receive the secret")
		}
		if in.Stage != stage.Deploy && len(in.Secrets) != 0 {
			return nil, fmt.Errorf("stage %s received secrets", in.Stage)
		}
		emit(stage.Event{Kind: stage.EventLog, Level: "info", Message: "leaking " + plain})
		// A buggy plugin echoing the secret in its result and a diagnostic.
		return &stage.Result{Values: json.RawMessage(fmt.Sprintf(`{"p":%q}`, plain)),
			Diagnostics: diag.List{diag.Warningf("saw %s", plain)}}, nil
	}
	s := h.session()
	for _, st := range stage.All {
		out, err := s.RunStage(context.Background(), st)
		if err != nil {
			t.Fatalf("%s: %v %v", st, err, out.Diagnostics)
		}
		if strings.Contains(out.Diagnostics.Error(), plain) {
			t.Fatalf("%s: a diagnostic holds the secret", st)
		}
	}
	if strings.Contains(logs.String(), plain) || !strings.Contains(logs.String(), "[dex] leaking ((secret:dex/password))") {
		t.Fatalf("log = %q", logs.String())
	}
	var prev string
	for _, st := range stage.All {
		b, err := os.ReadFile(filepath.Join(h.dir, ".kube-aws", "state", string(st)+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(plain)) {
			t.Fatalf("state of %s holds the secret:\n%s", st, b)
		}
		var state State
		if err := json.Unmarshal(b, &state); err != nil {
			t.Fatal(err)
		}
		if state.Version != 1 || state.Stage != st || len(state.Inputs.Config) != 64 ||
			len(state.Inputs.Plugins["dex"]) != 64 || state.Inputs.Previous != prev {
			t.Fatalf("state of %s = %+v", st, state.Inputs)
		}
		prev = sha256Hex(b)
	}
}

func TestRenderOutputIsAtomicAndDeterministic(t *testing.T) {
	h := newHarness(t)
	var mode atomic.Value
	mode.Store("ok")
	for _, n := range []string{"cloudformation", "userdata"} {
		p := h.add(n, source.Builtin)
		n := n
		p.run = func(ctx context.Context, in *stage.Input, emit func(stage.Event)) (*stage.Result, error) {
			if in.Stage != stage.Render {
				return &stage.Result{}, nil
			}
			switch mode.Load() {
			case "panic":
				if n == "userdata" {
					return nil, errors.New("plugin exited: panic: render exploded")
				}
			case "conflict":
				// A path that is a file for one plugin and a folder for the
				// other: only discovered while writing.
				if n == "userdata" {
					return fileResult("stacks/network.json/x", "x"), nil
				}
			case "escape":
				if n == "userdata" {
					return fileResult("../../etc/passwd", "x"), nil
				}
			case "duplicate":
				return fileResult("same.txt", n), nil
			}
			if n == "cloudformation" {
				r := fileResult("stacks/network.json", `{"Resources":{}}`)
				r.Stacks = []stage.StackSpec{{Name: "network", Template: "stacks/network.json"}}
				return r, nil
			}
			r := fileResult("userdata/controller.yaml", "#cloud-config\n")
			r.Files = append(r.Files, stage.File{Path: "userdata/secret.yaml", Content: []byte("x"), Mode: "0600"})
			return r, nil
		}
	}
	s := h.session()
	out, err := s.Render(context.Background())
	if err != nil {
		t.Fatalf("render: %v %v", err, out.Diagnostics)
	}
	first := readTree(t, h.opts.OutDir)
	if len(first) != 6 { // 4 files, and the folders stacks/ and userdata/
		t.Fatalf("rendered %v", first)
	}
	var man Manifest
	if err := json.Unmarshal([]byte(strings.SplitN(first["manifest.json"], "|", 2)[0]), &man); err != nil {
		t.Fatal(err)
	}
	if len(man.Files) != 3 || man.Files[0].Path != "stacks/network.json" || man.Files[0].Plugin != "cloudformation" ||
		man.Files[0].Version != "1.0.0" || man.Files[0].SHA256 != sha256Hex([]byte(`{"Resources":{}}`)) ||
		man.Files[2].Path != "userdata/secret.yaml" || man.Files[2].Size != 1 {
		t.Fatalf("manifest = %+v", man)
	}
	if !strings.HasSuffix(first["userdata/secret.yaml"], "|-rw-------") {
		t.Fatalf("mode not kept: %q", first["userdata/secret.yaml"])
	}
	if len(out.Rendered.Stacks) != 1 || out.Rendered.Stacks[0].Name != "network" {
		t.Fatalf("stacks = %+v", out.Rendered.Stacks)
	}

	// Same inputs, same bytes.
	if _, err := s.Render(context.Background()); err != nil {
		t.Fatal(err)
	}
	if again := readTree(t, h.opts.OutDir); !reflect.DeepEqual(first, again) {
		t.Fatalf("second render differs:\n%v\n%v", first, again)
	}

	for _, m := range []string{"panic", "conflict", "escape", "duplicate"} {
		mode.Store(m)
		out, err := s.Render(context.Background())
		if ExitCode(err) != ExitFatal {
			t.Fatalf("%s: exit code %d (%v), want 1", m, ExitCode(err), err)
		}
		if got := readTree(t, h.opts.OutDir); !reflect.DeepEqual(first, got) {
			t.Fatalf("%s: a failed render changed the previous output", m)
		}
		entries, _ := os.ReadDir(h.dir)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), ".rendered") {
				t.Fatalf("%s: temporary folder %s left behind", m, e.Name())
			}
		}
		text := out.Diagnostics.Error()
		want := map[string]string{
			"panic":     "plugin userdata failed in stage render: plugin exited: panic: render exploded",
			"conflict":  "writing the render output failed",
			"escape":    "escapes the output folder",
			"duplicate": "plugins cloudformation and userdata both render same.txt",
		}[m]
		if !strings.Contains(text, want) {
			t.Fatalf("%s: diagnostics %q lack %q", m, text, want)
		}
	}
}

func TestARenderedFileHoldingAPlainSecretIsRefused(t *testing.T) {
	h := newHarness(t)
	h.secrets = map[string]string{"((secret:dex/x))": "plain-secret-value"}
	p := h.add("dex", source.Builtin, stage.Render)
	p.run = func(ctx context.Context, in *stage.Input, emit func(stage.Event)) (*stage.Result, error) {
		return fileResult("charts/values.yaml", "password: plain-secret-value\n"), nil
	}
	s := h.session()
	if _, err := s.RunStage(context.Background(), stage.Initialise); err != nil {
		t.Fatal(err)
	}
	out, err := s.RunStage(context.Background(), stage.Render)
	if ExitCode(err) != ExitFatal || !strings.Contains(out.Diagnostics.Error(), "holds the plain text of secret ((secret:dex/x))") {
		t.Fatalf("err = %v, diagnostics %v", err, out.Diagnostics)
	}
	if _, err := os.Stat(h.opts.OutDir); !os.IsNotExist(err) {
		t.Fatal("output written")
	}
}

func TestRegistrationRejectsWithAReason(t *testing.T) {
	h := newHarness(t)
	good := h.add("iam", source.Builtin)
	bad := h.add("dex", source.Contrib)
	bad.info.ValuesSchema = json.RawMessage(`{"type":"object"}`)
	h.enable("dex", true)
	h.schemaCheck = func(plugin string, schema json.RawMessage, v stage.PluginValues) diag.List {
		return diag.List{diag.Fatalf("issuer is required").At("plugins.dex.values.issuer")}
	}
	_, err := h.open()
	if ExitCode(err) != ExitUsage {
		t.Fatalf("exit code %d (%v), want 2", ExitCode(err), err)
	}
	if bad.reg == nil || bad.reg.Accepted || !strings.Contains(bad.reg.Reason, "issuer is required") {
		t.Fatalf("dex registration = %+v", bad.reg)
	}
	if good.reg == nil || !good.reg.Accepted {
		t.Fatalf("iam registration = %+v", good.reg)
	}
	ds := diagsOf(err)
	if len(ds) != 1 || ds[0].Plugin != "dex" || ds[0].Path != "plugins.dex.values.issuer" {
		t.Fatalf("diagnostics = %v", ds)
	}
	for _, p := range h.plugins {
		if p.killed.Load() == 0 {
			t.Fatalf("%s not killed after a failed registration", p.cand.Name)
		}
	}

	// A wrong name and an unsupported protocol are rejected too (exit 1).
	h2 := newHarness(t)
	liar := h2.add("liar", source.Builtin)
	liar.info.Name = "someone-else"
	old := h2.add("old", source.Builtin)
	old.proto = 7
	old.info.ProtocolVersions = []int{7}
	_, err = h2.open()
	if ExitCode(err) != ExitFatal || liar.reg.Accepted || old.reg.Accepted ||
		!strings.Contains(old.reg.Reason, "protocol version 7") {
		t.Fatalf("err = %v, liar %+v, old %+v", err, liar.reg, old.reg)
	}
}

func TestCapabilityWithTwoProvidersAndNoPreference(t *testing.T) {
	h := newHarness(t)
	a := h.add("calico", source.Builtin)
	a.info.Capabilities = []string{"cni"}
	b := h.add("cilium", source.Builtin)
	b.info.Capabilities = []string{"cni"}
	_, err := h.open()
	if ExitCode(err) != ExitUsage || a.reg.Accepted || b.reg.Accepted ||
		!strings.Contains(a.reg.Reason, `capability "cni" has several providers (calico, cilium)`) {
		t.Fatalf("err = %v, %+v %+v", err, a.reg, b.reg)
	}
	h.cluster.Capabilities = map[string]string{"cni": "cilium"}
	s := h.session()
	if s.Capabilities["cni"] != "cilium" {
		t.Fatalf("capabilities = %v", s.Capabilities)
	}
	out, err := s.RunStage(context.Background(), stage.Initialise)
	if err != nil {
		t.Fatal(err, out.Diagnostics)
	}
	b2, _ := os.ReadFile(filepath.Join(h.dir, ".kube-aws", "state", "initialise.json"))
	if !bytes.Contains(b2, []byte(`"cni":"cilium"`)) {
		t.Fatalf("the choice is not recorded in the stage result:\n%s", b2)
	}
}

func TestInterruptStopsTheStageAndKillsEveryPlugin(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, n := range []string{"a", "b"} {
		p := h.add(n, source.Builtin)
		p.run = func(ctx context.Context, in *stage.Input, emit func(stage.Event)) (*stage.Result, error) {
			cancel()
			<-ctx.Done()
			return nil, ctx.Err()
		}
	}
	s := h.session()
	_, err := s.Render(ctx)
	if ExitCode(err) != ExitInterrupted {
		t.Fatalf("exit code %d (%v), want 130", ExitCode(err), err)
	}
	s.Close()
	s.Close()
	for _, p := range h.plugins {
		if p.killed.Load() != 1 {
			t.Fatalf("%s killed %d times, want once", p.cand.Name, p.killed.Load())
		}
	}
}

func TestPluginEventsAreForwardedWithThePluginName(t *testing.T) {
	h := newHarness(t)
	var buf bytes.Buffer
	h.opts.Reporter = &logReporter{W: &buf}
	p := h.add("hello", source.User)
	h.enable("hello", true)
	p.run = func(ctx context.Context, in *stage.Input, emit func(stage.Event)) (*stage.Result, error) {
		emit(stage.Event{Kind: stage.EventLog, Level: "info", Message: "hello from " + string(in.Stage)})
		emit(stage.Event{Kind: stage.EventLog, Level: "debug", Message: "hidden"})
		return &stage.Result{}, nil
	}
	s := h.session()
	if _, err := s.RunStage(context.Background(), stage.Initialise); err != nil {
		t.Fatal(err)
	}
	if got := buf.String(); got != "[hello] hello from initialise\n" {
		t.Fatalf("reported %q", got)
	}
}

func TestWriteOutputReplacesThePreviousOutput(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	if _, err := WriteOutput(dir, []stage.File{{Path: "old.txt", Content: []byte("old"), Plugin: "p"}}, nil, nil); err != nil {
		t.Fatal(err)
	}
	rd, err := WriteOutput(dir, []stage.File{{Path: "new.txt", Content: []byte("new"), Plugin: "p"}}, map[string]string{"p": "2.0"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := readTree(t, dir)
	if _, ok := got["old.txt"]; ok || len(got) != 2 || rd.Files[0].Version != "2.0" {
		t.Fatalf("tree = %v, rendered %+v", got, rd)
	}
	entries, _ := os.ReadDir(filepath.Dir(dir))
	if len(entries) != 1 {
		t.Fatalf("left behind: %v", entries)
	}
}

func TestExitCodes(t *testing.T) {
	cases := map[error]int{
		nil:                                  0,
		errors.New("x"):                      1,
		ConfigError("bad"):                   2,
		ErrInterrupted:                       130,
		context.Canceled:                     130,
		fmt.Errorf("w: %w", &Error{Code: 2}): 2,
	}
	for err, want := range cases {
		if got := ExitCode(err); got != want {
			t.Errorf("ExitCode(%v) = %d, want %d", err, got, want)
		}
	}
}

// hostError mimics plugins/host's StageError: it knows its own diagnostic.
type hostError struct{ d diag.Diagnostic }

func (e hostError) Error() string               { return e.d.Message }
func (e hostError) Diagnostic() diag.Diagnostic { return e.d }

func TestStreamedDiagnosticsAndHostErrorsAreReportedOnce(t *testing.T) {
	h := newHarness(t)
	p := h.add("dex", source.Builtin, stage.Initialise)
	p.run = func(ctx context.Context, in *stage.Input, emit func(stage.Event)) (*stage.Result, error) {
		early := diag.Warningf("issuer is deprecated").At("plugins.dex.values.issuer")
		emit(stage.Event{Kind: stage.EventDiagnostic, Diagnostic: &early})
		other := diag.Warningf("only streamed")
		emit(stage.Event{Kind: stage.EventDiagnostic, Diagnostic: &other})
		// The result repeats the first one: it must be reported once.
		return &stage.Result{Diagnostics: diag.List{early}}, nil
	}
	q := h.add("hang", source.Builtin, stage.Initialise)
	q.run = func(ctx context.Context, in *stage.Input, emit func(stage.Event)) (*stage.Result, error) {
		return nil, hostError{diag.Diagnostic{Severity: diag.Fatal, Plugin: "hang", Stage: "initialise",
			Message: "plugin hang did not finish stage initialise within 1s; killed", Hint: "report the hang"}}
	}
	s := h.session()
	out, err := s.RunStage(context.Background(), stage.Initialise)
	if ExitCode(err) != ExitFatal {
		t.Fatalf("exit %d (%v)", ExitCode(err), err)
	}
	var got []string
	for _, d := range out.Diagnostics {
		got = append(got, string(d.Severity)+" "+d.Plugin+"/"+d.Stage+": "+d.Message)
	}
	want := []string{
		"fatal hang/initialise: plugin hang did not finish stage initialise within 1s; killed",
		"warning dex/initialise: issuer is deprecated",
		"warning dex/initialise: only streamed",
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("diagnostics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestPluginHashesAreCachedButNoticeAChange(t *testing.T) {
	h := newHarness(t)
	p := h.add("iam", source.Builtin)
	s := h.session()
	first, err := s.pluginHashes()
	if err != nil {
		t.Fatal(err)
	}
	cache := loadHashCache(hashCachePath(h.dir))
	if e, ok := cache.entries[p.cand.Path]; !ok || e.SHA256 != first["iam"] {
		t.Fatalf("cache = %+v", cache.entries)
	}
	// A rebuilt binary of the same size but a new mtime is hashed again.
	if err := os.WriteFile(p.cand.Path, []byte("#!/bin/sh\n# IAM\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(p.cand.Path, future, future); err != nil {
		t.Fatal(err)
	}
	again, err := h.session().pluginHashes()
	if err != nil {
		t.Fatal(err)
	}
	if again["iam"] == first["iam"] || again["iam"] != sha256Hex([]byte("#!/bin/sh\n# IAM\n")) {
		t.Fatalf("hash after a rebuild = %s (before %s)", again["iam"], first["iam"])
	}
}

// A stage whose state comes out byte for byte as its file holds it leaves
// the file alone; any difference, its mode included, writes it again.
func TestStateFilesUnchangedAreLeftAlone(t *testing.T) {
	h := newHarness(t)
	h.add("dex", source.Builtin)
	s := h.session()
	p := filepath.Join(h.dir, ".kube-aws", "state", string(stage.Initialise)+".json")
	run := func() os.FileInfo {
		t.Helper()
		if out, err := s.RunStage(context.Background(), stage.Initialise); err != nil {
			t.Fatalf("%v %v", err, out.Diagnostics)
		}
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	first := run()
	if again := run(); !os.SameFile(first, again) {
		t.Error("an unchanged state file was written again")
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if fixed := run(); os.SameFile(first, fixed) || fixed.Mode() != 0o600 {
		t.Errorf("a state file made 0644 was left as %v", fixed.Mode())
	}
}

// The initialise stage's state is written while the render stage's plugins
// run; a render still writes nothing when that state cannot be written, the
// outcome names the stage, and a render that works reports both states in
// stage order.
func TestRenderWritesNoOutputWhenTheInitialiseStateFails(t *testing.T) {
	h := newHarness(t)
	p := h.add("cloudformation", source.Builtin)
	p.run = func(ctx context.Context, in *stage.Input, emit func(stage.Event)) (*stage.Result, error) {
		if in.Stage != stage.Render {
			return &stage.Result{Values: json.RawMessage(`{"k":"v"}`)}, nil
		}
		return fileResult("stacks/network.json", `{"Resources":{}}`), nil
	}
	s := h.session()
	out, err := s.Render(context.Background())
	if err != nil {
		t.Fatalf("render: %v %v", err, out.Diagnostics)
	}
	if len(out.Stages) != 2 || out.Stages[0].Stage != stage.Initialise || out.Stages[1].Stage != stage.Render ||
		out.Stages[0].State != s.statePath(stage.Initialise) || out.Stages[1].State != s.statePath(stage.Render) {
		t.Fatalf("stages reported %+v", out.Stages)
	}
	if _, err := s.loadCarry(stage.Deploy); err != nil {
		t.Fatalf("the states written do not chain: %v", err)
	}

	// A folder where the state file goes: it cannot be replaced.
	h = newHarness(t)
	p = h.add("cloudformation", source.Builtin)
	rendered := false
	p.run = func(ctx context.Context, in *stage.Input, emit func(stage.Event)) (*stage.Result, error) {
		if in.Stage == stage.Render {
			rendered = true
			return fileResult("stacks/network.json", `{"Resources":{}}`), nil
		}
		return &stage.Result{}, nil
	}
	s = h.session()
	if err := os.MkdirAll(filepath.Join(s.statePath(stage.Initialise), "in-the-way"), 0o755); err != nil {
		t.Fatal(err)
	}
	out, err = s.Render(context.Background())
	var e *Error
	if !errors.As(err, &e) || e.Code != ExitFatal || !strings.Contains(e.Msg, "writing state of stage initialise") {
		t.Fatalf("err = %v, want the initialise state's failure", err)
	}
	if !rendered {
		t.Error("the render stage's plugins did not run beside the state's writing")
	}
	if _, err := os.Stat(h.opts.OutDir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("render output written after the initialise state failed: %v", err)
	}
	if _, err := os.Stat(s.statePath(stage.Render)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("render state written after the initialise state failed: %v", err)
	}
	if len(out.Stages) != 1 || out.Stages[0].Stage != stage.Initialise || out.Stages[0].State != "" {
		t.Errorf("stages reported %+v, want initialise without a state", out.Stages)
	}
}
