package together

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/contrib/internal/contribtest"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/config/values"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/merge"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/host"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/plugins/source"
	"github.com/kube-aws/kube-aws/test/builtintest"
)

func TestMain(m *testing.M) { plugintest.Main(m) }

// order is stages/order.yaml's contrib section: merge order as kube-aws
// would use it.
var order = []string{"datadog-agent", "dex", "kube2iam", "bastion", "cluster-autoscaler", "customise"}

// pluginValues enables every contrib plugin with values exercising what it
// contributes. The datadog API key and the dex client secret are given in
// plain text here and become markers, as kube-aws resolves them.
var pluginValues = map[string]string{
	"datadog-agent":      `{"apiKey": "0123456789abcdef", "tags": ["env:test"]}`,
	"dex":                `{"issuerURL": "https://dex.example.com", "staticClients": [{"id": "kubectl", "secret": "client-secret", "redirectURIs": ["http://localhost:8000"]}]}`,
	"kube2iam":           `{"roleARNs": ["arn:aws:iam::123456789012:role/k8s-*"]}`,
	"bastion":            `{"allowedCIDRs": ["203.0.113.0/24"], "keyName": "ops"}`,
	"cluster-autoscaler": `{}`,
	"customise":          `{"tags": {"cost-center": "1234"}, "apiAccessCIDRs": ["203.0.113.0/24", "198.51.100.0/24"], "iam": [{"actions": ["s3:GetObject"], "resources": ["arn:aws:s3:::team-data/*"]}]}`,
}

// contribPlugins lists contrib/plugins/<name> folders with a main.go, as
// make build does.
func contribPlugins(t *testing.T) []string {
	t.Helper()
	dirs, err := os.ReadDir(filepath.Join("..", "..", "plugins"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join("..", "..", "plugins", d.Name(), "main.go")); err == nil {
			out = append(out, d.Name())
		}
	}
	sort.Strings(out)
	return out
}

// clusterYAML is the test cluster with every contrib plugin enabled.
func clusterYAML() string {
	var b strings.Builder
	b.WriteString(contribtest.ClusterYAML)
	b.WriteString("plugins:\n")
	for _, n := range order {
		b.WriteString("  " + n + ":\n    enabled: true\n    values: " + pluginValues[n] + "\n")
	}
	return b.String()
}

type run struct {
	c       *config.Cluster
	in      *stage.Input
	results map[string]*stage.Result
}

// initialiseAll builds every contrib plugin, asks each for its values
// schema, resolves the values against those schemas (secrets become
// markers), validates them, and runs initialise on each binary over the
// protocol with identical input.
func initialiseAll(t *testing.T) *run {
	t.Helper()
	names := contribPlugins(t)
	if strings.Join(names, ",") != strings.Join(sorted(order), ",") {
		t.Fatalf("contrib plugins %v, but the test (and stages/order.yaml) knows %v: add the new plugin to both", names, order)
	}
	c := contribtest.Cluster(t, clusterYAML())
	work := t.TempDir()
	bins := map[string]string{}
	schemas := map[string]json.RawMessage{}
	for _, n := range names {
		bins[n] = plugintest.Build(t, filepath.Join("..", "..", "plugins", n))
		info := getInfo(t, bins[n])
		if info.Name != n || info.Version == "" || !info.Implements(stage.Initialise) {
			t.Errorf("plugin %s: info %+v", n, info)
		}
		if _, err := values.Compile(n, info.ValuesSchema); err != nil {
			t.Errorf("plugin %s: %v", n, err)
		}
		schemas[n] = info.ValuesSchema
	}
	eff, diags := config.EffectiveValues(c, work)
	if diags.HasFatal() {
		t.Fatal(diags)
	}
	res, diags := config.ResolveSecrets(c, eff, schemas, work)
	if diags.HasFatal() {
		t.Fatal(diags)
	}
	if d := values.ValidateAll(c, res.Plain, schemas, res.Secrets); len(d) > 0 {
		t.Fatalf("test values do not match the schemas: %v", d)
	}
	cfg, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	input := &stage.Input{Stage: stage.Initialise, Config: json.RawMessage(config.Redact(string(cfg), res.Secrets)), WorkDir: work, Values: res.Values}
	r := &run{c: c, in: input, results: map[string]*stage.Result{}}
	for _, n := range names {
		out := plugintest.Run(t, bins[n], input, stage.Initialise)
		r.results[n] = out.Results[stage.Initialise]
	}
	return r
}

// getInfo launches a plugin, takes its GetInfo answer (which carries the
// values schema kube-aws validates with) and stops it.
func getInfo(t *testing.T, bin string) stage.PluginInfo {
	t.Helper()
	ps, err := host.Launch(context.Background(), []source.Candidate{{Name: filepath.Base(bin), Path: bin, Dir: filepath.Dir(bin), Source: source.User}}, host.Options{})
	if err != nil {
		t.Fatalf("launching %s: %v", bin, err)
	}
	defer ps[0].Kill()
	return ps[0].Info
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func (r *run) contributions(t *testing.T) []merge.Contribution {
	t.Helper()
	var out []merge.Contribution
	for _, n := range order {
		res := r.results[n]
		if res.Diagnostics.HasFatal() {
			t.Fatalf("plugin %s initialise: %v", n, res.Diagnostics)
		}
		if res.Constructs.IsEmpty() {
			t.Errorf("plugin %s contributes nothing", n)
		}
		out = append(out, merge.Contribution{Plugin: n, Set: res.Constructs})
	}
	return out
}

// TestEveryContribPluginInitialisesOverTheProtocol builds each contrib
// plugin and runs initialise through kube-aws's host code.
func TestEveryContribPluginInitialisesOverTheProtocol(t *testing.T) {
	r := initialiseAll(t)
	for _, n := range order {
		res := r.results[n]
		if res == nil || res.Constructs == nil {
			t.Errorf("plugin %s: no constructs", n)
			continue
		}
		for _, d := range res.Diagnostics {
			t.Errorf("plugin %s: unexpected diagnostic %v", n, d)
		}
	}
	// Secrets crossed the protocol as markers only.
	all, _ := json.Marshal(r.results)
	for _, plain := range []string{"0123456789abcdef", "client-secret"} {
		if strings.Contains(string(all), plain) {
			t.Errorf("a plugin returned the secret %q in plain text", plain)
		}
	}
	if !strings.Contains(string(all), "((secret:datadog-agent/values/apiKey))") {
		t.Error("the datadog API key marker is missing from the results")
	}
}

// TestAllContribPluginsTogether merges every contrib plugin's initialise
// output: enabling them all is not a conflict.
func TestAllContribPluginsTogether(t *testing.T) {
	r := initialiseAll(t)
	merged, diags := mergeAll(r.contributions(t))
	// customise patches the API rule of the network stack, which only the
	// cloudformation built-in makes (TestContribWithBuiltins merges with
	// it, and there the merge must be clean); without it that patch has
	// nothing to apply to, and that is the only diagnostic allowed here.
	for _, d := range diags {
		if !(d.Plugin == "customise" && strings.HasPrefix(d.Path, "constructs.patches[") && strings.Contains(d.Message, "ControllerIngressAPI")) {
			t.Errorf("merge: %v", d)
		}
	}
	if len(merged.HelmReleases) != 3 {
		t.Errorf("want the dex, kube2iam and cluster-autoscaler releases, got %d", len(merged.HelmReleases))
	}
}

// builtins runs the initialise stage of the built-in plugins whose stacks the
// contrib plugins extend, from their real binaries.
func (r *run) builtins(t *testing.T) []merge.Contribution {
	t.Helper()
	var out []merge.Contribution
	for _, n := range []string{"cloudformation", "iam"} {
		bin := builtintest.Path(t, n)
		res := plugintest.Run(t, bin, r.in, stage.Initialise).Results[stage.Initialise]
		if res.Diagnostics.HasFatal() {
			t.Fatalf("built-in %s initialise: %v", n, res.Diagnostics)
		}
		out = append(out, merge.Contribution{Plugin: n, Set: res.Constructs})
	}
	return out
}

func stackByName(set *construct.Set, name string) *construct.Stack {
	for i := range set.Stacks {
		if set.Stacks[i].Name == name {
			return &set.Stacks[i]
		}
	}
	return nil
}

// TestContribWithBuiltins merges the contrib plugins with the stacks of the
// cloudformation and iam built-ins, in stages/order.yaml's order: no
// conflict, and each contribution lands where it should.
func TestContribWithBuiltins(t *testing.T) {
	r := initialiseAll(t)
	contribs := append(r.builtins(t), r.contributions(t)...)
	merged, diags := mergeAll(contribs)
	if len(diags) > 0 {
		t.Fatalf("merge: %v", diags)
	}
	// cluster-autoscaler's discovery tags and customise's tags on the pools.
	for _, p := range []string{"nodepool-general", "nodepool-gpu-spot"} {
		st := stackByName(merged, p)
		if st == nil {
			t.Fatalf("no stack %s", p)
		}
		if st.Tags["k8s.io/cluster-autoscaler/enabled"] != "true" || st.Tags["k8s.io/cluster-autoscaler/demo"] != "owned" ||
			st.Tags["cost-center"] != "1234" || st.Tags["kube-aws:stack"] != p || len(st.Resources) == 0 {
			t.Errorf("stack %s tags %v (%d resources)", p, st.Tags, len(st.Resources))
		}
	}
	// customise's patch to the API rule applied to the real resource.
	network := stackByName(merged, "network")
	var api struct {
		Type       string
		Properties map[string]any
	}
	if err := json.Unmarshal(network.Resources["ControllerIngressAPI"], &api); err != nil {
		t.Fatal(err)
	}
	if api.Properties["CidrIp"] != "203.0.113.0/24" || api.Type != "AWS::EC2::SecurityGroupIngress" {
		t.Errorf("ControllerIngressAPI after patch: %+v", api)
	}
	if _, ok := network.Resources["CustomiseControllerIngressAPI1"]; !ok {
		t.Error("second API CIDR rule missing from the network stack")
	}
	// bastion's parameters are wired to outputs the network stack has.
	bastion := stackByName(merged, "bastion")
	if bastion == nil || bastion.Tags["cost-center"] != "1234" {
		t.Fatalf("bastion stack %+v", bastion)
	}
	for param, src := range bastion.ParameterSources {
		stack, output := src.Stack, src.Output
		from := stackByName(merged, stack)
		if from == nil || from.Outputs[output] == nil {
			t.Errorf("bastion parameter %s comes from %s, which does not exist", param, src)
		}
	}
	// IAM statements from three plugins merged without a Sid clash, and
	// cluster-autoscaler's permissions in its pod role.
	sids := map[string]bool{}
	for _, s := range merged.IAM {
		sids[s.Sid] = true
	}
	for _, sid := range []string{"Kube2iamAssumeRole", "Customise0", "KubeAwsNode"} {
		if !sids[sid] {
			t.Errorf("merged IAM lacks %s: %v", sid, contribtest.Keys(sids))
		}
	}
	if sids["ClusterAutoscalerScale"] {
		t.Errorf("cluster-autoscaler's scaling permission is on a machine role")
	}
	roles := map[string]bool{}
	for _, r := range merged.PodRoles {
		roles[r.Name+"/"+r.Plugin] = true
	}
	if !roles["cluster-autoscaler/cluster-autoscaler"] {
		t.Errorf("merged pod roles lack cluster-autoscaler's: %v", contribtest.Keys(roles))
	}
}

// TestProtectedPathRefusedWithRealStacks: customise, asked to patch a node
// pool's bootstrap userdata, is refused by the merge using the protected
// paths the cloudformation built-in really declares.
func TestProtectedPathRefusedWithRealStacks(t *testing.T) {
	r := initialiseAll(t)
	base := r.builtins(t)
	in := *r.in
	in.Values = map[string]stage.PluginValues{"customise": {Values: json.RawMessage(
		`{"patches": [{"stack": "nodepool-general", "logicalId": "LaunchTemplate", "merge": {"Properties": {"LaunchTemplateData": {"UserData": "IyEvYmluL3NoCg=="}}}}]}`)}}
	bin := plugintest.Build(t, filepath.Join("..", "..", "plugins", "customise"))
	res := plugintest.Run(t, bin, &in, stage.Initialise).Results[stage.Initialise]
	_, diags := mergeAll(append(base, merge.Contribution{Plugin: "customise", Set: res.Constructs}))
	var refused bool
	for _, d := range diags {
		if d.Severity == diag.Fatal && d.Plugin == "customise" && strings.Contains(d.Message, "protected path /Properties/LaunchTemplateData/UserData") &&
			strings.Contains(d.Message, `"cloudformation"`) {
			refused = true
		}
	}
	if !refused || len(diags) != 1 {
		t.Errorf("want exactly one fatal refusing the protected path, got %v", diags)
	}
}

// mergeAll merges as kube-aws does, which knows from the iam built-in's
// PluginInfo that it renders the iam stack late.
func mergeAll(c []merge.Contribution) (*construct.Set, diag.List) {
	return merge.MergeWith(c, merge.Options{Late: []merge.LateStacks{{Plugin: "iam", Stacks: []string{names.StackIAM}}}})
}
