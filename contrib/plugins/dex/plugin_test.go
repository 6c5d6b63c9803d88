package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/contrib/internal/contribtest"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/merge"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

const goodValues = `{
  "issuerURL": "https://dex.example.com",
  "usernamePrefix": "oidc:",
  "staticClients": [{"id": "kubectl", "secret": "s3cr3t-client", "redirectURIs": ["http://localhost:8000"]}],
  "connectors": [{"type": "github", "id": "github", "name": "GitHub", "config": {"clientID": "abc", "clientSecret": "gh-secret"}}]
}`

func initialise(t *testing.T, values, workDir string) *stage.Result {
	t.Helper()
	req := contribtest.Request(t, stage.Initialise, nil, Name, schema, values, workDir)
	res, err := sdk.Call(context.Background(), sdk.Typed[Values](plugin{}), req)
	if err != nil {
		t.Fatalf("initialise: %v", err)
	}
	return res
}

func flags(s *construct.Set) map[string]string {
	out := map[string]string{}
	for _, f := range s.APIServer.Flags {
		out[f.Name] = f.Value
	}
	return out
}

func TestInitialiseSetsOIDCFlags(t *testing.T) {
	res := initialise(t, goodValues, t.TempDir())
	if res.Diagnostics.HasFatal() {
		t.Fatalf("diagnostics: %v", res.Diagnostics)
	}
	got := flags(res.Constructs)
	want := map[string]string{
		"oidc-issuer-url":      "https://dex.example.com",
		"oidc-client-id":       "kubernetes",
		"oidc-username-claim":  "email",
		"oidc-groups-claim":    "groups",
		"oidc-username-prefix": "oidc:",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("--%s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if _, ok := got["oidc-ca-file"]; ok {
		t.Errorf("no issuerCA given, yet --oidc-ca-file is set")
	}
	// Initialised values carry the defaults for later stages.
	var v Values
	if err := json.Unmarshal(res.Values, &v); err != nil || v.Namespace != "dex" || v.Replicas != 1 {
		t.Errorf("initialised values %s (%v)", res.Values, err)
	}
}

func TestIssuerCAIsAFileAndAVolume(t *testing.T) {
	pem := "-----BEGIN CERTIFICATE-----\\nMIIB\\n-----END CERTIFICATE-----\\n"
	res := initialise(t, `{"issuerURL": "https://dex.internal", "issuerCA": "`+pem+`"}`, t.TempDir())
	s := res.Constructs
	if flags(s)["oidc-ca-file"] != caFile {
		t.Errorf("--oidc-ca-file = %q", flags(s)["oidc-ca-file"])
	}
	if len(s.Files) != 1 || s.Files[0].Path != caFile || s.Files[0].Target.Role != construct.Controller ||
		!strings.HasPrefix(s.Files[0].Content, "-----BEGIN CERTIFICATE-----") {
		t.Errorf("files %+v", s.Files)
	}
	if len(s.APIServer.Volumes) != 1 || s.APIServer.Volumes[0].HostPath != caDir || !s.APIServer.Volumes[0].ReadOnly {
		t.Errorf("volumes %+v", s.APIServer.Volumes)
	}
}

func TestHelmReleaseFromShippedChart(t *testing.T) {
	work := t.TempDir()
	res := initialise(t, goodValues, work)
	rels := res.Constructs.HelmReleases
	if len(rels) != 1 {
		t.Fatalf("releases %+v", rels)
	}
	r := rels[0]
	if r.Name != "dex" || r.Namespace != "dex" || r.Chart.Version != "0.1.0" {
		t.Errorf("release %+v", r)
	}
	cache := filepath.Join(work, ".kube-aws", "cache", "plugins", "dex")
	if !filepath.IsAbs(r.Chart.Path) || !strings.HasPrefix(r.Chart.Path, cache+string(filepath.Separator)) {
		t.Errorf("chart path %s is not an absolute path under %s", r.Chart.Path, cache)
	}
	// Secrets stay markers in the release's values; the node substitutes them.
	if strings.Contains(string(r.Values), "s3cr3t-client") || strings.Contains(string(r.Values), "gh-secret") {
		t.Fatalf("plain-text secret in release values: %s", r.Values)
	}
	for _, m := range []string{"((secret:dex/values/staticClients/0/secret))", "((secret:dex/values/connectors/0/config/clientSecret))"} {
		if !strings.Contains(string(r.Values), m) {
			t.Errorf("release values lack marker %s: %s", m, r.Values)
		}
	}
	out := contribtest.RenderChart(t, r, "1.31.4")
	dep := out["dex/templates/deployment.yaml"]
	if !strings.Contains(dep, "kind: Deployment") || !strings.Contains(dep, "image: ghcr.io/dexidp/dex:v2.41.1") {
		t.Errorf("deployment:\n%s", dep)
	}
	cfg := out["dex/templates/secret.yaml"]
	for _, want := range []string{`issuer: "https://dex.example.com"`, "id: kubectl", "((secret:dex/values/staticClients/0/secret))", "type: github"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("config secret lacks %q:\n%s", want, cfg)
		}
	}
	if _, ok := out["dex/templates/service.yaml"]; !ok {
		t.Errorf("no service rendered: %v", contribtest.Keys(out))
	}
}

// TestChartExtractionIsDeterministic: the same chart lands at the same path
// with the same bytes on every run, so render output stays byte-identical.
func TestChartExtractionIsDeterministic(t *testing.T) {
	work := t.TempDir()
	a := initialise(t, goodValues, work).Constructs.HelmReleases[0].Chart.Path
	before, err := os.ReadFile(filepath.Join(a, "templates", "deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	b := initialise(t, goodValues, work).Constructs.HelmReleases[0].Chart.Path
	if a != b {
		t.Errorf("second run extracted to %s, first to %s", b, a)
	}
	other := initialise(t, goodValues, t.TempDir()).Constructs.HelmReleases[0].Chart.Path
	if filepath.Base(filepath.Dir(other)) != filepath.Base(filepath.Dir(a)) {
		t.Errorf("content hash differs between work dirs: %s vs %s", other, a)
	}
	after, _ := os.ReadFile(filepath.Join(b, "templates", "deployment.yaml"))
	if string(before) != string(after) {
		t.Error("chart file changed between runs")
	}
}

// TestSecondIssuerConflicts: another plugin that sets a different
// --oidc-issuer-url is a fatal naming both, never a silent pick by order.
func TestSecondIssuerConflicts(t *testing.T) {
	res := initialise(t, goodValues, t.TempDir())
	other := &construct.Set{APIServer: construct.APIServer{Flags: []construct.Flag{{Name: "oidc-issuer-url", Value: "https://login.other.example"}}}}
	_, diags := merge.Merge([]merge.Contribution{{Plugin: "dex", Set: res.Constructs}, {Plugin: "my-sso", Set: other}})
	var found bool
	for _, d := range diags {
		if d.Severity == diag.Fatal && strings.Contains(d.Message, "oidc-issuer-url") &&
			strings.Contains(d.Message, `"dex"`) && strings.Contains(d.Message, `"my-sso"`) {
			found = true
		}
	}
	if !found {
		t.Errorf("want a fatal naming dex and my-sso for --oidc-issuer-url, got %v", diags)
	}
	// The same value from both is no conflict.
	same := &construct.Set{APIServer: construct.APIServer{Flags: []construct.Flag{{Name: "oidc-issuer-url", Value: "https://dex.example.com"}}}}
	if _, d := merge.Merge([]merge.Contribution{{Plugin: "dex", Set: res.Constructs}, {Plugin: "my-sso", Set: same}}); d.HasFatal() {
		t.Errorf("identical flag reported: %v", d)
	}
}

func TestBadValuesRejectedWithTheirPath(t *testing.T) {
	contribtest.ExpectRejected(t, Name, schema, `{}`, "plugins.dex.values", "issuerURL")
	contribtest.ExpectRejected(t, Name, schema, `{"issuerURL": "http://dex.example.com"}`, "plugins.dex.values.issuerURL", "match pattern")
	contribtest.ExpectRejected(t, Name, schema, `{"issuerURL": "https://d", "replicas": 0}`, "plugins.dex.values.replicas", "")
	contribtest.ExpectRejected(t, Name, schema, `{"issuerURL": "https://d", "serviceType": "Ingress"}`, "plugins.dex.values.serviceType", "")
	contribtest.ExpectRejected(t, Name, schema, `{"issuerURL": "https://d", "staticClients": [{"id": "x", "redirectURIs": ["a"]}]}`, "plugins.dex.values.staticClients[0]", "secret")
	contribtest.ExpectRejected(t, Name, schema, `{"issuerURL": "https://d", "issuer": "typo"}`, "plugins.dex.values.issuer", `unknown key "issuer" (did you mean`)
	if d := contribtest.Validate(t, Name, schema, goodValues); len(d) > 0 {
		t.Errorf("good values rejected: %v", d)
	}
}

func TestMissingIssuerOutsideKubeAws(t *testing.T) {
	req := &sdk.Request{Input: &stage.Input{Stage: stage.Initialise, Config: json.RawMessage(`{}`), WorkDir: t.TempDir()}, Plugin: Name}
	res, err := sdk.Call(context.Background(), sdk.Typed[Values](plugin{}), req)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Diagnostics.HasFatal() || res.Diagnostics[0].Path != "plugins.dex.values.issuerURL" {
		t.Errorf("diagnostics %v", res.Diagnostics)
	}
}
