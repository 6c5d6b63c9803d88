package together

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/merge"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/test/builtintest"
)

// venvTool finds a tool of the Python virtual environment: $KUBE_AWS_VENV
// (set by make test), else the repository's .venv. It fails, never skips:
// a template CloudFormation rejects must not pass make test.
func venvTool(t *testing.T, name string) string {
	t.Helper()
	var candidates []string
	if v := os.Getenv("KUBE_AWS_VENV"); v != "" {
		candidates = append(candidates, filepath.Join(v, "bin", name))
	}
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	candidates = append(candidates, filepath.Join(root, ".venv", "bin", name))
	for _, c := range candidates {
		if _, err := os.Stat(c); err == nil {
			return c
		}
	}
	t.Fatalf("%s not found (looked at %v): run make venv", name, candidates)
	return ""
}

// TestRenderWithEveryContribPlugin renders the merged constructs of the
// built-ins and every contrib plugin with the real render plugins
// (cloudformation, iam, userdata, helm), checks that each contrib plugin's
// additions are in the rendered files, that no secret is there in plain
// text, and that cfn-lint finds nothing in the templates.
func TestRenderWithEveryContribPlugin(t *testing.T) {
	r := initialiseAll(t)
	// stages/order.yaml: cloudformation, iam, apiserver, then contrib (helm
	// has no initialise).
	contribs := r.builtins(t)
	for _, n := range []string{"apiserver"} {
		bin := builtintest.Path(t, n)
		res := plugintest.Run(t, bin, r.in, stage.Initialise).Results[stage.Initialise]
		contribs = append(contribs, merge.Contribution{Plugin: n, Set: res.Constructs})
	}
	contribs = append(contribs, r.contributions(t)...)
	merged, diags := mergeAll(contribs)
	if diags.HasFatal() {
		t.Fatalf("merge: %v", diags)
	}
	in := *r.in
	in.Stage = stage.Render
	in.Constructs = merged
	// Render sees each plugin's initialised values.
	in.Values = map[string]stage.PluginValues{}
	for k, v := range r.in.Values {
		in.Values[k] = v
	}
	for n, res := range r.results {
		if len(res.Values) > 0 {
			pv := in.Values[n]
			pv.Values = res.Values
			in.Values[n] = pv
		}
	}

	files := map[string]string{}
	for _, n := range []string{"cloudformation", "iam", "userdata", "helm"} {
		bin := builtintest.Path(t, n)
		res := plugintest.Run(t, bin, &in, stage.Render).Results[stage.Render]
		if res.Diagnostics.HasFatal() {
			t.Fatalf("%s render: %v", n, res.Diagnostics)
		}
		for _, f := range res.Files {
			files[f.Path] = string(f.Content)
		}
	}

	checks := map[string][]string{
		"stacks/bastion.json":            {`"BastionInstance"`, `"203.0.113.0/24"`, `"InstanceId"`},
		"stacks/network.json":            {`"CustomiseControllerIngressAPI1"`, `"198.51.100.0/24"`},
		"stacks/iam.json":                {`"Kube2iamAssumeRole"`, `"ClusterAutoscalerScale"`, `"Customise0"`, `arn:aws:s3:::team-data/*`},
		"userdata/controller.yaml":       {"datadog-agent.service", "((secret:datadog-agent/values/apiKey))", "oidc-issuer-url=https://dex.example.com"},
		"userdata/nodepool-general.yaml": {"datadog-agent.service", "kube-aws-role:worker", "((secret:datadog-agent/values/apiKey))"},
		"charts/releases.json":           {`"dex"`, `"kube2iam"`, `"cluster-autoscaler"`, "((secret:dex/values/staticClients/0/secret))"},
	}
	for path, wants := range checks {
		body, ok := files[path]
		if !ok {
			t.Errorf("%s not rendered (have %v)", path, keys(files))
			continue
		}
		for _, w := range wants {
			if !strings.Contains(body, w) {
				t.Errorf("%s lacks %s", path, w)
			}
		}
	}
	for _, chart := range []string{"charts/dex-0.1.0.tgz", "charts/kube2iam-0.1.0.tgz", "charts/cluster-autoscaler-0.1.0.tgz"} {
		if _, ok := files[chart]; !ok {
			t.Errorf("%s not rendered", chart)
		}
	}
	for path, body := range files {
		for _, plain := range []string{"0123456789abcdef", "client-secret"} {
			if strings.Contains(body, plain) {
				t.Errorf("%s holds the secret %q in plain text", path, plain)
			}
		}
	}

	dir := t.TempDir()
	// W3010 (hardcoded availability zones) is off as in the cloudformation
	// built-in's own lint test: naming the zones is the point there.
	args := []string{"--regions", r.c.Region, "--ignore-checks", "W3010", "--"}
	for path, body := range files {
		if !strings.HasPrefix(path, "stacks/") {
			continue
		}
		p := filepath.Join(dir, filepath.Base(path))
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, p)
	}
	if out, err := exec.Command(venvTool(t, "cfn-lint"), args...).CombinedOutput(); err != nil {
		t.Errorf("cfn-lint: %v\n%s", err, out)
	}

	// The merge says who contributed each release, and the helm plugin names
	// that plugin when its chart is broken: break dex's chart (a copy) and
	// render again.
	owners := map[string]string{}
	for _, h := range merged.HelmReleases {
		owners[h.Name] = h.Plugin
	}
	for _, n := range []string{"dex", "kube2iam", "cluster-autoscaler"} {
		if owners[n] != n {
			t.Errorf("release %s: merged Plugin %q, want %q", n, owners[n], n)
		}
	}
	broken := *merged
	broken.HelmReleases = append(broken.HelmReleases[:0:0], merged.HelmReleases...)
	for i, h := range broken.HelmReleases {
		if h.Name != "dex" {
			continue
		}
		chart := filepath.Join(t.TempDir(), "dex")
		if err := os.CopyFS(chart, os.DirFS(h.Chart.Path)); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(chart, "templates", "broken.yaml"), []byte("a: {{ nosuchfunction }}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		broken.HelmReleases[i].Chart.Path = chart
	}
	in.Constructs = &broken
	res := plugintest.Run(t, builtintest.Path(t, "helm"), &in, stage.Render).Results[stage.Render]
	// About dex's chart, reported by helm (issue 14, point 5).
	if len(res.Diagnostics) != 1 || res.Diagnostics[0].Plugin != "dex" || res.Diagnostics[0].ReportedBy != "helm" ||
		!strings.HasPrefix(res.Diagnostics[0].Message, `plugin "dex": release "dex"`) || res.Diagnostics[0].File != "dex/templates/broken.yaml" {
		t.Errorf("a broken dex chart: %v", res.Diagnostics)
	}
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
