package iam

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/builtin/internal/cfn"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current render")

// The cluster fixtures are shared with the cloudformation plugin's tests so
// that both halves of a cluster are checked on the same configurations.
var fixtures = []string{"minimal", "full", "example"}

// fixtureFile is where a fixture's cluster.yaml lives.
func fixtureFile(name string) string {
	if name == "example" {
		return filepath.Join("..", "..", "cluster.yaml.example")
	}
	return filepath.Join("..", "cloudformation", "testdata", name+".yaml")
}

func loadFixture(t testing.TB, name string) (json.RawMessage, *config.Cluster) {
	t.Helper()
	file := fixtureFile(name)
	y, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// Load the way kube-aws does before any stage: strict parse, defaults,
	// validation; the plugins receive the result as JSON.
	c, diags := config.Parse(file, y)
	config.ApplyDefaults(c)
	diags = append(diags, config.Validate(c, file)...)
	if diags.HasFatal() {
		t.Fatalf("%s: %v", name, diags)
	}
	j, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return j, c
}

// pluginStatements stands for other plugins' IAM contributions in the full
// fixture: one for the controllers, one for every pool, one for one pool.
var pluginStatements = []construct.IAMStatement{
	{Target: construct.Target{Role: construct.Controller}, Sid: "Route53", Effect: "Allow",
		Actions: []string{"route53:ChangeResourceRecordSets"}, Resources: []string{"arn:aws:route53:::hostedzone/Z0123456789ABCDEFGHIJ"}},
	{Target: construct.Target{Role: construct.Worker}, Sid: "Logs", Effect: "Allow",
		Actions: []string{"logs:CreateLogStream", "logs:PutLogEvents"}, Resources: []string{"arn:aws:logs:eu-west-1:123456789012:log-group:prod:*"}},
	{Target: construct.Target{Role: construct.Worker, NodePool: "spot-arm"}, Sid: "SpotTermination", Effect: "Allow",
		Actions: []string{"autoscaling:CompleteLifecycleAction"}, Resources: []string{"*"},
		Condition: json.RawMessage(`{"StringEquals":{"autoscaling:ResourceTag/kubernetes.io/cluster/prod":"owned"}}`)},
}

// pluginPodRoles stands for other plugins' pod roles in the full fixture:
// one for named service accounts, one for every account of a namespace.
var pluginPodRoles = []construct.PodRole{
	{Name: "autoscaler", ServiceAccounts: []string{"kube-system/cluster-autoscaler"}, Plugin: "cluster-autoscaler",
		Statements: []construct.IAMStatement{{Sid: "Scale", Effect: "Allow", Actions: []string{"autoscaling:SetDesiredCapacity"},
			Resources: []string{"arn:aws:autoscaling:eu-west-1:*:autoScalingGroup:*:autoScalingGroupName/*"}}}},
	{Name: "logs", ServiceAccounts: []string{"logging/*", "kube-system/fluent-bit"}, Plugin: "logs",
		Statements: []construct.IAMStatement{{Effect: "Allow", Actions: []string{"logs:PutLogEvents"}, Resources: []string{"arn:aws:logs:eu-west-1:123456789012:log-group:prod:*"}}}},
}

// run calls initialise then render the way the host does, merging the
// plugin's own statements with extra ones in plugin order.
func run(t *testing.T, name string, extra []construct.IAMStatement, podRoles ...construct.PodRole) *stage.Result {
	t.Helper()
	cfg, _ := loadFixture(t, name)
	ctx := context.Background()
	req := &sdk.Request{Input: &stage.Input{Stage: stage.Initialise, Config: cfg}, Plugin: "iam"}
	init, err := sdk.Call(ctx, served, req)
	if err != nil || init.Diagnostics.HasFatal() {
		t.Fatalf("initialise: %v %v", err, init.Diagnostics)
	}
	set := *init.Constructs
	set.IAM = append(append([]construct.IAMStatement(nil), set.IAM...), extra...)
	set.PodRoles = append(append([]construct.PodRole(nil), set.PodRoles...), podRoles...)
	req = &sdk.Request{Input: &stage.Input{Stage: stage.Render, Config: cfg, Constructs: &set}, Plugin: "iam"}
	res, err := sdk.Call(ctx, served, req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func renderFixture(t *testing.T, name string) *stage.Result {
	t.Helper()
	var extra []construct.IAMStatement
	var roles []construct.PodRole
	if name == "full" {
		extra, roles = pluginStatements, pluginPodRoles
	}
	res := run(t, name, extra, roles...)
	if res.Diagnostics.HasFatal() {
		t.Fatalf("%s: %v", name, res.Diagnostics)
	}
	return res
}

func template(t *testing.T, res *stage.Result) map[string]any {
	t.Helper()
	if len(res.Files) != 1 || res.Files[0].Path != "stacks/iam.json" {
		t.Fatalf("want exactly stacks/iam.json, got %+v", res.Files)
	}
	var m map[string]any
	if err := json.Unmarshal(res.Files[0].Content, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// sids lists the Sids in a role's policy, in order.
func sids(t *testing.T, tmpl map[string]any, roleID string) []string {
	t.Helper()
	res := tmpl["Resources"].(map[string]any)
	r, ok := res[roleID].(map[string]any)
	if !ok {
		t.Fatalf("no resource %s", roleID)
	}
	pols := r["Properties"].(map[string]any)["Policies"].([]any)
	if len(pols) != 1 {
		t.Fatalf("%s: want one inline policy, got %d", roleID, len(pols))
	}
	var out []string
	for _, s := range pols[0].(map[string]any)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
		out = append(out, s.(map[string]any)["Sid"].(string))
	}
	return out
}

func TestRolesGetTheirStatementsInPluginOrder(t *testing.T) {
	tmpl := template(t, renderFixture(t, "full"))
	cases := map[string]string{
		"ControllerRole":      "KubeAwsRead KubeAwsStatus KubeAwsDecrypt KubeAwsCloudProvider Route53",
		"EtcdRole":            "KubeAwsRead KubeAwsStatus KubeAwsDecrypt",
		"NodePoolGeneralRole": "KubeAwsRead KubeAwsStatus KubeAwsDecrypt KubeAwsNode Logs",
		"NodePoolSpotArmRole": "KubeAwsRead KubeAwsStatus KubeAwsDecrypt KubeAwsNode Logs SpotTermination",
	}
	for role, want := range cases {
		if got := strings.Join(sids(t, tmpl, role), " "); got != want {
			t.Errorf("%s: statements %q, want %q", role, got, want)
		}
	}
	outputs := tmpl["Outputs"].(map[string]any)
	for _, o := range []string{"ControllerInstanceProfile", "EtcdInstanceProfile", "NodePoolGeneralInstanceProfile",
		"NodePoolSpotArmInstanceProfile", "ControllerRoleArn", "ControllerRoleName", "EtcdRoleArn"} {
		if _, ok := outputs[o]; !ok {
			t.Errorf("output %s missing", o)
		}
	}
	// A node pool has exactly one output, its instance profile: outputs
	// are what limits how many pools fit in the stack.
	for o := range outputs {
		if strings.HasPrefix(o, "NodePool") && !strings.HasSuffix(o, "InstanceProfile") {
			t.Errorf("node pool output %s: a pool's only output is its instance profile", o)
		}
	}
	// Least privilege (issue 11): a role reads the shared assets and its own
	// objects under the s3URI prefix, writes its own status, and decrypts
	// only what was encrypted for it.
	statement := func(role, sid string) string {
		r := tmpl["Resources"].(map[string]any)[role].(map[string]any)
		for _, st := range r["Properties"].(map[string]any)["Policies"].([]any)[0].(map[string]any)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			if st.(map[string]any)["Sid"] == sid {
				b, _ := json.Marshal(st)
				return string(b)
			}
		}
		t.Fatalf("%s has no statement %s", role, sid)
		return ""
	}
	for _, tc := range []struct{ role, sid, want string }{
		{"NodePoolGeneralRole", "KubeAwsRead", `"Resource":["arn:aws:s3:::prod-assets/clusters/prod/assets/*","arn:aws:s3:::prod-assets/clusters/prod/roles/nodepool-general/*"]`},
		{"EtcdRole", "KubeAwsStatus", `"Action":["s3:PutObject"],"Effect":"Allow","Resource":["arn:aws:s3:::prod-assets/clusters/prod/status/etcd/*"]`},
		{"ControllerRole", "KubeAwsDecrypt", `"Condition":{"StringEquals":{"kms:EncryptionContext:kube-aws:cluster":"prod","kms:EncryptionContext:kube-aws:role":"controller"}}`},
		{"NodePoolSpotArmRole", "KubeAwsDecrypt", `"kms:EncryptionContext:kube-aws:role":"nodepool-spot-arm"`},
	} {
		if got := statement(tc.role, tc.sid); !strings.Contains(got, tc.want) {
			t.Errorf("%s %s = %s\nwant it to hold %s", tc.role, tc.sid, got, tc.want)
		}
	}
}

func TestWildcardStatementWarns(t *testing.T) {
	res := run(t, "minimal", []construct.IAMStatement{{Target: construct.Target{Role: construct.Worker}, Sid: "Everything",
		Effect: "Allow", Actions: []string{"*"}, Resources: []string{"*"}}})
	if res.Diagnostics.HasFatal() {
		t.Fatalf("a wildcard statement is a warning, not fatal: %v", res.Diagnostics)
	}
	if !hasMessage(res.Diagnostics, diag.Warning, "Everything") {
		t.Errorf("no warning naming the statement: %v", res.Diagnostics)
	}
	if len(res.Files) != 1 {
		t.Error("render must still write the stack after a warning")
	}
}

func TestBadStatementsAreFatal(t *testing.T) {
	cases := map[string]construct.IAMStatement{
		"node pool \"nope\"": {Target: construct.Target{Role: construct.Worker, NodePool: "nope"}, Actions: []string{"s3:GetObject"}, Resources: []string{"*"}},
		"unknown":            {Target: construct.Target{Role: "bastion"}, Actions: []string{"s3:GetObject"}, Resources: []string{"*"}},
		"effect":             {Target: construct.Target{Role: construct.Etcd}, Effect: "Maybe", Actions: []string{"s3:GetObject"}, Resources: []string{"*"}},
		"Sid":                {Target: construct.Target{Role: construct.Etcd}, Sid: "not-alnum", Actions: []string{"s3:GetObject"}, Resources: []string{"*"}},
		"action":             {Target: construct.Target{Role: construct.Etcd}, Resources: []string{"*"}},
		"KubeAwsRead":        {Target: construct.Target{Role: construct.Etcd}, Sid: "KubeAwsRead", Actions: []string{"s3:PutObject"}, Resources: []string{"*"}},
	}
	for want, st := range cases {
		res := run(t, "minimal", []construct.IAMStatement{st})
		if !hasMessage(res.Diagnostics, diag.Fatal, want) {
			t.Errorf("statement %+v: want a fatal mentioning %q, got %v", st, want, res.Diagnostics)
		}
	}
}

func TestPolicyOverIAMLimitIsFatal(t *testing.T) {
	var many []construct.IAMStatement
	for i := 0; i < 120; i++ {
		many = append(many, construct.IAMStatement{Target: construct.Target{Role: construct.Controller},
			Actions:   []string{"s3:GetObject"},
			Resources: []string{"arn:aws:s3:::a-rather-long-bucket-name-for-testing/some/prefix/" + strings.Repeat("x", 10)}})
	}
	res := run(t, "minimal", many)
	if !hasMessage(res.Diagnostics, diag.Fatal, "controller role's policy is") {
		t.Errorf("want a fatal for the policy size, got %v", res.Diagnostics)
	}
}

func hasMessage(l diag.List, sev diag.Severity, sub string) bool {
	for _, d := range l {
		if d.Severity == sev && strings.Contains(d.Message, sub) {
			return true
		}
	}
	return false
}

func TestGoldenAndDeterministic(t *testing.T) {
	for _, name := range fixtures {
		a, b := renderFixture(t, name), renderFixture(t, name)
		if !bytes.Equal(a.Files[0].Content, b.Files[0].Content) {
			t.Errorf("%s: two renders differ", name)
		}
		if name == "example" {
			// No golden files for cluster.yaml.example: they would churn
			// with every edit of the example. Determinism and cfn-lint
			// still cover it.
			continue
		}
		spec, _ := cfn.Marshal(a.Stacks, true)
		golden := map[string][]byte{name + ".iam.json": a.Files[0].Content, name + ".stacks.json": spec}
		for f, got := range golden {
			p := filepath.Join("testdata", "golden", f)
			if *update {
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, got, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(p)
			if err != nil {
				t.Fatalf("%v (run go test ./builtin/iam -update)", err)
			}
			if !bytes.Equal(want, got) {
				t.Errorf("%s differs from the golden file (run with -update and review the diff)", f)
			}
		}
	}
}

// TestCfnLint wants cfn-lint to find nothing at all in iam.json. It fails,
// not skips, without cfn-lint: run `make venv`.
func TestCfnLint(t *testing.T) {
	var lint string
	cands := []string{filepath.Join(os.Getenv("KUBE_AWS_VENV"), "bin", "cfn-lint"), filepath.Join("..", "..", ".venv", "bin", "cfn-lint")}
	for _, c := range cands {
		if _, err := os.Stat(c); err == nil && (c != cands[0] || os.Getenv("KUBE_AWS_VENV") != "") {
			lint = c
			break
		}
	}
	if lint == "" {
		t.Fatalf("cfn-lint not found (looked at %v): run `make venv` to install it", cands)
	}
	for _, name := range fixtures {
		_, c := loadFixture(t, name)
		res := renderFixture(t, name)
		p := filepath.Join(t.TempDir(), "iam.json")
		if err := os.WriteFile(p, res.Files[0].Content, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(lint, "--regions", c.Region, "--", p).CombinedOutput(); err != nil {
			t.Errorf("%s: cfn-lint: %v\n%s", name, err, out)
		}
	}
}

// TestManyNodePoolsFitTheStack renders the example with many node pools:
// the iam stack stays within CloudFormation's 200 outputs and 500 resources
// up to the most pools it can hold (one output each, beside the 8 of the
// controllers, etcd and the OIDC provider); one more is refused at
// nodePools, saying how many fit.
func TestManyNodePoolsFitTheStack(t *testing.T) {
	_, c := loadFixture(t, "example")
	for _, tc := range []struct {
		pools int
		fatal string // "" when it fits
	}{
		{150, ""},
		{192, ""},
		{193, "193 node pools need 193 outputs of the iam stack"},
		{250, "at most 192 node pools"},
	} {
		t.Run(fmt.Sprint(tc.pools), func(t *testing.T) {
			cfg := withPools(t, c, tc.pools)
			ctx := context.Background()
			init, err := sdk.Call(ctx, served, &sdk.Request{Input: &stage.Input{Stage: stage.Initialise, Config: cfg}, Plugin: "iam"})
			if err != nil || init.Diagnostics.HasFatal() {
				t.Fatalf("initialise: %v %v", err, init.Diagnostics)
			}
			res, err := sdk.Call(ctx, served, &sdk.Request{Input: &stage.Input{Stage: stage.Render, Config: cfg, Constructs: init.Constructs}, Plugin: "iam"})
			if err != nil {
				t.Fatal(err)
			}
			if tc.fatal != "" {
				ds := res.Diagnostics
				if len(ds) != 1 || !ds.HasFatal() || ds[0].Path != "nodePools" || !strings.Contains(ds[0].Error(), tc.fatal) {
					t.Fatalf("want one fatal at nodePools saying %q, got:\n%s", tc.fatal, ds.Error())
				}
				if len(res.Files) != 0 {
					t.Fatalf("a refused stack was written: %d file(s)", len(res.Files))
				}
				return
			}
			if res.Diagnostics.HasFatal() {
				t.Fatalf("render of %d pools: %v", tc.pools, res.Diagnostics)
			}
			tmpl := template(t, res)
			if n := len(tmpl["Outputs"].(map[string]any)); n != tc.pools+6+2 {
				t.Errorf("outputs: %d, want one per pool, three each for controller and etcd and two of the OIDC provider (%d)", n, tc.pools+8)
			}
		})
	}
}

// withPools is the cluster c with n copies of its first node pool.
func withPools(t testing.TB, c *config.Cluster, n int) json.RawMessage {
	t.Helper()
	pool := c.NodePools[0]
	cc := *c
	cc.NodePools = nil
	for i := range n {
		p := pool
		p.Name = fmt.Sprintf("pool%03d", i)
		cc.NodePools = append(cc.NodePools, p)
	}
	cfg, err := json.Marshal(&cc)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// BenchmarkRender100Pools is the plugin's render of the example with 100
// node pools, its initialise done once before.
func BenchmarkRender100Pools(b *testing.B) {
	_, c := loadFixture(b, "example")
	cfg := withPools(b, c, 100)
	ctx := context.Background()
	init, err := sdk.Call(ctx, served, &sdk.Request{Input: &stage.Input{Stage: stage.Initialise, Config: cfg}, Plugin: "iam"})
	if err != nil || init.Diagnostics.HasFatal() {
		b.Fatalf("initialise: %v %v", err, init.Diagnostics)
	}
	req := &sdk.Request{Input: &stage.Input{Stage: stage.Render, Config: cfg, Constructs: init.Constructs}, Plugin: "iam"}
	b.ReportAllocs()
	for b.Loop() {
		res, err := sdk.Call(ctx, served, req)
		if err != nil || res.Diagnostics.HasFatal() {
			b.Fatalf("render: %v %v", err, res.Diagnostics)
		}
	}
}
