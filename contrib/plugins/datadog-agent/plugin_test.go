package main

import (
	"context"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/contrib/internal/contribtest"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

const marker = "((secret:datadog-agent/values/apiKey))"

func initialise(t *testing.T, values string) *stage.Result {
	t.Helper()
	req := contribtest.Request(t, stage.Initialise, nil, Name, schema, values, t.TempDir())
	res, err := sdk.Call(context.Background(), sdk.Typed[Values](plugin{}), req)
	if err != nil {
		t.Fatalf("initialise: %v", err)
	}
	return res
}

func byTarget[T any](items []T, target func(T) construct.Target) map[string][]T {
	out := map[string][]T{}
	for _, it := range items {
		k := target(it).String()
		out[k] = append(out[k], it)
	}
	return out
}

func TestEveryRoleByDefault(t *testing.T) {
	res := initialise(t, `{"apiKey": "0123456789abcdef-plain-key", "tags": ["env:prod"]}`)
	if len(res.Diagnostics) > 0 {
		t.Fatalf("diagnostics: %v", res.Diagnostics)
	}
	units := byTarget(res.Constructs.Units, func(u construct.Unit) construct.Target { return u.Target })
	// Workers per node pool: each pool may override the values.
	for _, role := range []string{"controller", "etcd", "worker/general", "worker/gpu-spot"} {
		us := units[role]
		if len(us) != 1 {
			t.Fatalf("%s: units %+v", role, us)
		}
		u := us[0]
		if u.Name != UnitName || !u.Enable || !strings.Contains(u.Content, "[Install]") ||
			!strings.Contains(u.Content, "EnvironmentFile="+EnvFile) || !strings.Contains(u.Content, APIKeyFile) {
			t.Errorf("%s: unit %+v", role, u)
		}
	}
	if len(units) != 4 {
		t.Errorf("unit targets %v", contribtest.Keys(units))
	}

	files := byTarget(res.Constructs.Files, func(f construct.File) construct.Target { return f.Target })
	for role, fs := range files {
		var key, env *construct.File
		for i := range fs {
			switch fs[i].Path {
			case APIKeyFile:
				key = &fs[i]
			case EnvFile:
				env = &fs[i]
			}
		}
		if key == nil || env == nil {
			t.Fatalf("%s: files %+v", role, fs)
		}
		// The key arrives as its marker and is the sensitive file's only
		// content: the node decrypts it and substitutes the marker.
		if !key.Sensitive || key.Content != marker || key.Mode != "0600" {
			t.Errorf("%s: API key file %+v", role, *key)
		}
		if env.Sensitive || strings.Contains(env.Content, "plain-key") || strings.Contains(env.Content, "((secret:") {
			t.Errorf("%s: environment file holds the key: %q", role, env.Content)
		}
		r, pool, _ := strings.Cut(role, "/")
		want := []string{"DD_SITE=datadoghq.com", "kube-aws-cluster:demo", "kube-aws-role:" + r, "env:prod"}
		if pool != "" {
			want = append(want, "kube-aws-node-pool:"+pool)
		}
		for _, want := range want {
			if !strings.Contains(env.Content, want) {
				t.Errorf("%s: environment lacks %q:\n%s", role, want, env.Content)
			}
		}
	}
	// No plain text anywhere in what the plugin returns.
	for _, f := range res.Constructs.Files {
		if strings.Contains(f.Content, "plain-key") {
			t.Errorf("file %s on %s holds the API key in plain text", f.Path, f.Target)
		}
	}
	if strings.Contains(string(res.Values), "plain-key") {
		t.Errorf("initialised values hold the key: %s", res.Values)
	}
}

func TestChosenRolesAndPools(t *testing.T) {
	res := initialise(t, `{"apiKey": "k", "roles": ["worker"], "nodePools": ["gpu-spot"], "site": "datadoghq.eu"}`)
	if len(res.Constructs.Units) != 1 {
		t.Fatalf("units %+v", res.Constructs.Units)
	}
	want := construct.Target{Role: construct.Worker, NodePool: "gpu-spot"}
	if res.Constructs.Units[0].Target != want {
		t.Errorf("unit target %s, want %s", res.Constructs.Units[0].Target, want)
	}
	for _, f := range res.Constructs.Files {
		if f.Target != want {
			t.Errorf("file %s on %s", f.Path, f.Target)
		}
		if f.Path == EnvFile && (!strings.Contains(f.Content, "kube-aws-node-pool:gpu-spot") || !strings.Contains(f.Content, "DD_SITE=datadoghq.eu")) {
			t.Errorf("environment %q", f.Content)
		}
	}
	res = initialise(t, `{"apiKey": "k", "roles": ["controller", "etcd"]}`)
	units := byTarget(res.Constructs.Units, func(u construct.Unit) construct.Target { return u.Target })
	if len(units) != 2 || units["controller"] == nil || units["etcd"] == nil {
		t.Errorf("unit targets %v", contribtest.Keys(units))
	}
}

// TestNodePoolOverrides: a pool's own plugins.datadog-agent values apply to
// that pool, and a pool that disables the plugin gets no agent.
func TestNodePoolOverrides(t *testing.T) {
	y := strings.Replace(contribtest.ClusterYAML, "    desiredCapacity: 2\n",
		"    desiredCapacity: 2\n    plugins:\n      datadog-agent:\n        values: {tags: [\"pool:special\"], site: datadoghq.eu}\n", 1)
	y = strings.Replace(y, "    desiredCapacity: 0\n", "    desiredCapacity: 0\n    plugins:\n      datadog-agent:\n        enabled: false\n", 1)
	req := contribtest.Request(t, stage.Initialise, contribtest.Cluster(t, y), Name, schema, `{"apiKey": "k", "roles": ["worker"], "tags": ["env:prod"]}`, t.TempDir())
	res, err := sdk.Call(context.Background(), sdk.Typed[Values](plugin{}), req)
	if err != nil || res.Diagnostics.HasFatal() {
		t.Fatal(err, res.Diagnostics)
	}
	units := byTarget(res.Constructs.Units, func(u construct.Unit) construct.Target { return u.Target })
	if len(units) != 1 || units["worker/general"] == nil {
		t.Fatalf("want the agent on pool general only, got %v", contribtest.Keys(units))
	}
	for _, f := range res.Constructs.Files {
		switch f.Path {
		case EnvFile:
			if !strings.Contains(f.Content, "DD_TAGS=kube-aws-cluster:demo kube-aws-role:worker kube-aws-node-pool:general pool:special\n") ||
				!strings.Contains(f.Content, "DD_SITE=datadoghq.eu") {
				t.Errorf("pool environment %q", f.Content)
			}
		case APIKeyFile:
			// The pool inherits the cluster-level key: the same marker.
			if f.Content != marker {
				t.Errorf("pool key file %q", f.Content)
			}
		}
	}
}

func TestBadPoolsAreFatalWithPath(t *testing.T) {
	res := initialise(t, `{"apiKey": "k", "nodePools": ["nope"]}`)
	if !res.Diagnostics.HasFatal() || res.Diagnostics[0].Path != "plugins.datadog-agent.values.nodePools[0]" {
		t.Errorf("diagnostics %v", res.Diagnostics)
	}
	res = initialise(t, `{"apiKey": "k", "roles": ["etcd"], "nodePools": ["general"]}`)
	if !res.Diagnostics.HasFatal() || res.Diagnostics[0].Path != "plugins.datadog-agent.values.nodePools" {
		t.Errorf("diagnostics %v", res.Diagnostics)
	}
}

func TestPlainTextKeyOutsideKubeAwsWarns(t *testing.T) {
	req := contribtest.Request(t, stage.Initialise, nil, Name, nil, `{"apiKey": "plain"}`, t.TempDir())
	res, err := sdk.Call(context.Background(), sdk.Typed[Values](plugin{}), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Diagnostics) != 1 || res.Diagnostics[0].Severity != diag.Warning || strings.Contains(res.Diagnostics[0].Message, "plain\"") {
		t.Errorf("diagnostics %v", res.Diagnostics)
	}
	for _, f := range res.Constructs.Files {
		if f.Path == APIKeyFile && !f.Sensitive {
			t.Error("key file not sensitive")
		}
	}
}

func TestBadValuesRejectedWithTheirPath(t *testing.T) {
	contribtest.ExpectRejected(t, Name, schema, `{}`, "plugins.datadog-agent.values", "apiKey")
	contribtest.ExpectRejected(t, Name, schema, `{"apiKey": "k", "roles": ["master"]}`, "plugins.datadog-agent.values.roles[0]", "")
	contribtest.ExpectRejected(t, Name, schema, `{"apiKey": "k", "roles": []}`, "plugins.datadog-agent.values.roles", "")
	contribtest.ExpectRejected(t, Name, schema, `{"apiKey": "k", "tags": ["has space"]}`, "plugins.datadog-agent.values.tags[0]", "")
	contribtest.ExpectRejected(t, Name, schema, `{"apiKey": "k", "site": "not a site"}`, "plugins.datadog-agent.values.site", "")
	if d := contribtest.Validate(t, Name, schema, `{"apiKey": "k", "roles": ["worker"], "nodePools": ["a"], "tags": ["team:infra"]}`); len(d) > 0 {
		t.Errorf("good values rejected: %v", d)
	}
}
