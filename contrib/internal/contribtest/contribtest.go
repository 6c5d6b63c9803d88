// Package contribtest holds what the contrib plugins' tests share: a cluster
// to run against, stage requests built the way kube-aws builds them (values
// with secrets replaced by markers), values checked against a plugin's schema
// as the host checks them, and charts rendered with Helm's own library.
//
// Only tests import it, so Helm and the JSON Schema library it links never
// reach a contrib plugin binary.
package contribtest

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/config/values"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

// ClusterYAML is a cluster with two zones, two node pools and a KMS key (so
// sensitive values are allowed).
const ClusterYAML = `clusterName: demo
region: us-east-1
availabilityZones: [us-east-1a, us-east-1b]
kubernetesVersion: "1.31.4"
s3URI: s3://demo-assets/kube-aws
kmsKeyArn: arn:aws:kms:us-east-1:123456789012:key/11111111-2222-3333-4444-555555555555
network:
  vpcCIDR: 10.0.0.0/16
  natGateways: true
controller:
  count: 1
  instanceType: t3.medium
etcd:
  count: 1
  instanceType: t3.medium
nodePools:
  - name: general
    instanceType: t3.large
    minSize: 1
    maxSize: 5
    desiredCapacity: 2
  - name: gpu-spot
    instanceType: g4dn.xlarge
    minSize: 0
    maxSize: 3
    desiredCapacity: 0
`

// Cluster parses yaml (ClusterYAML when empty) as kube-aws does and applies
// the defaults.
func Cluster(t testing.TB, yaml string) *config.Cluster {
	t.Helper()
	if yaml == "" {
		yaml = ClusterYAML
	}
	c, diags := config.Parse("cluster.yaml", []byte(yaml))
	if diags.HasFatal() {
		t.Fatalf("test cluster does not parse: %v", diags)
	}
	config.ApplyDefaults(c)
	return c
}

// Request builds the request kube-aws sends plugin in stage st: the cluster
// as JSON, the plugin's values (cluster-level valuesJSON, and each node
// pool's effective values, with the pool's own plugins.<plugin> override from
// the cluster) with its schema's sensitive properties replaced by redaction
// markers (the plugin never sees plain text), and workDir as the folder of
// cluster.yaml. The values must be valid.
func Request(t testing.TB, st stage.Name, c *config.Cluster, plugin string, schema json.RawMessage, valuesJSON, workDir string) *sdk.Request {
	t.Helper()
	if c == nil {
		c = Cluster(t, "")
	}
	raw, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	in := &stage.Input{Stage: st, Config: raw, WorkDir: workDir, Values: map[string]stage.PluginValues{}}
	if valuesJSON != "" {
		// The values as cluster.yaml would give them, so that node pools
		// get their effective values (and pools that disable the plugin
		// none), exactly as the host computes them.
		cp := *c
		cp.Plugins = map[string]config.PluginConfig{}
		for k, v := range c.Plugins {
			cp.Plugins[k] = v
		}
		pc := cp.Plugins[plugin]
		pc.Values = json.RawMessage(valuesJSON)
		cp.Plugins[plugin] = pc
		eff, diags := config.EffectiveValues(&cp, workDir)
		if diags.HasFatal() {
			t.Fatalf("values of %s: %v", plugin, diags)
		}
		pv := map[string]stage.PluginValues{plugin: eff[plugin]}
		res, diags := config.ResolveSecrets(c, pv, map[string]json.RawMessage{plugin: schema}, workDir)
		if diags.HasFatal() {
			t.Fatalf("resolving values of %s: %v", plugin, diags)
		}
		if d := values.Validate(c, plugin, schema, res.Plain[plugin], res.Secrets); len(d) > 0 {
			t.Fatalf("values %s of %s do not match its schema: %v", valuesJSON, plugin, d)
		}
		in.Values[plugin] = res.Values[plugin]
	}
	return &sdk.Request{Input: in, Plugin: plugin}
}

// Validate checks values against a plugin's schema as the host does, and
// returns the fatals (with config paths such as plugins.dex.values.issuer).
func Validate(t testing.TB, plugin string, schema json.RawMessage, valuesJSON string) diag.List {
	t.Helper()
	if _, err := values.Compile(plugin, schema); err != nil {
		t.Fatalf("schema of %s does not compile: %v", plugin, err)
	}
	// With a cluster, paths are what a user sees (list items as [0]).
	return values.Validate(Cluster(t, ""), plugin, schema, stage.PluginValues{Values: json.RawMessage(valuesJSON)}, nil)
}

// ExpectRejected asserts that values fail the schema with a diagnostic at
// path (e.g. plugins.dex.values.issuerURL) whose message contains want.
func ExpectRejected(t testing.TB, plugin string, schema json.RawMessage, valuesJSON, path, want string) {
	t.Helper()
	ds := Validate(t, plugin, schema, valuesJSON)
	for _, d := range ds {
		if d.Path == path && d.Severity == diag.Fatal && strings.Contains(d.Message, want) {
			return
		}
	}
	t.Errorf("values %s: want a fatal at %s containing %q, got %v", valuesJSON, path, want, ds)
}

// RenderChart loads a release's chart from its Path and renders it with the
// release's values, as the helm built-in does at render time, and returns
// the non-empty manifests by template name.
func RenderChart(t testing.TB, r construct.HelmRelease, kubeVersion string) map[string]string {
	t.Helper()
	ch, err := loader.Load(r.Chart.Path)
	if err != nil {
		t.Fatalf("loading chart %s: %v", r.Chart.Path, err)
	}
	vals := map[string]any{}
	if len(r.Values) > 0 {
		if err := json.Unmarshal(r.Values, &vals); err != nil {
			t.Fatalf("release %s values: %v", r.Name, err)
		}
	}
	caps := chartutil.DefaultCapabilities.Copy()
	kv, err := chartutil.ParseKubeVersion(kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	caps.KubeVersion = *kv
	top, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: r.Name, Namespace: r.Namespace, IsInstall: true}, caps)
	if err != nil {
		t.Fatalf("release %s: values do not fit chart %s: %v", r.Name, ch.Name(), err)
	}
	out, err := engine.Render(ch, top)
	if err != nil {
		t.Fatalf("release %s: chart %s does not render: %v", r.Name, ch.Name(), err)
	}
	res := map[string]string{}
	for k, v := range out {
		if strings.TrimSpace(v) != "" && !strings.HasSuffix(k, "NOTES.txt") {
			res[k] = v
		}
	}
	return res
}

// Keys returns a map's keys sorted, for messages.
func Keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
