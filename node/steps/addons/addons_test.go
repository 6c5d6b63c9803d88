package addons

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/kube"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/repo"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/managedfields"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/apply"
	"github.com/kube-aws/kube-aws/node/retry"
	"github.com/kube-aws/kube-aws/node/step"
	"github.com/kube-aws/kube-aws/test/agenttest"
)

var motoURL string

func TestMain(m *testing.M) { agenttest.MotoMain(m, &motoURL) }

// testCluster is the cluster the step talks to: an API server that gets
// ready after some polls, Helm's releases as Secrets in a fake clientset
// with a kube client that accepts everything (or fails as told), and
// server-side apply on a fake dynamic client.
type testCluster struct {
	mu         sync.Mutex
	readyAfter int
	polls      int
	secrets    *fake.Clientset
	kube       *flakyKube
	tracker    clienttesting.ObjectTracker
	applier    *apply.Applier
}

func newCluster(readyAfter int) *testCluster {
	scheme := runtime.NewScheme()
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	scheme.AddKnownTypeWithName(gvk, &unstructured.Unstructured{})
	scheme.AddKnownTypeWithName(gvk.GroupVersion().WithKind("ConfigMapList"), &unstructured.UnstructuredList{})
	dyn := dynamicfake.NewSimpleDynamicClient(scheme)
	tracker := clienttesting.NewFieldManagedObjectTracker(scheme, serializer.NewCodecFactory(scheme).UniversalDecoder(), managedfields.NewDeducedTypeConverter())
	dyn.PrependReactor("*", "*", clienttesting.ObjectReaction(tracker))
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(gvk, meta.RESTScopeNamespace)
	return &testCluster{
		readyAfter: readyAfter, secrets: fake.NewClientset(),
		kube:    &flakyKube{FailingKubeClient: &kubefake.FailingKubeClient{PrintingKubeClient: kubefake.PrintingKubeClient{Out: io.Discard}}},
		tracker: tracker, applier: &apply.Applier{Dynamic: dyn, Mapper: mapper},
	}
}

// flakyKube fails the first creates, as an API server that is up but not
// yet serving every request does.
type flakyKube struct {
	*kubefake.FailingKubeClient
	failures atomic.Int32
}

func (f *flakyKube) Create(resources kube.ResourceList) (*kube.Result, error) {
	if f.failures.Add(-1) >= 0 {
		return nil, errors.New("the server is currently unable to handle the request")
	}
	return f.FailingKubeClient.Create(resources)
}

func (c *testCluster) WaitReady(ctx context.Context) error {
	return retry.Do(ctx, retry.Policy{Initial: time.Millisecond, Factor: 1}, func(context.Context) error {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.polls++
		if c.polls <= c.readyAfter {
			return errors.New("connection refused")
		}
		return nil
	}, nil)
}

func (c *testCluster) Helm(ns string) (*action.Configuration, error) {
	return &action.Configuration{
		Releases: storage.Init(driver.NewSecrets(c.secrets.CoreV1().Secrets(ns))), KubeClient: c.kube,
		Capabilities: chartutil.DefaultCapabilities, Log: func(string, ...any) {},
	}, nil
}

func (c *testCluster) Applier() (*apply.Applier, error) { return c.applier, nil }

func (c *testCluster) release(t *testing.T, ns, name string) map[string]any {
	t.Helper()
	cfg, _ := c.Helm(ns)
	r, err := cfg.Releases.Last(name)
	if err != nil {
		t.Fatalf("release %s/%s: %v", ns, name, err)
	}
	return r.Config
}

// packaged is a chart packaged as the helm plugin packages it, uploaded to
// the assets.
func packaged(t *testing.T, e *agent.Env, name string) (key, sum string) {
	t.Helper()
	ch := &chart.Chart{
		Metadata:  &chart.Metadata{APIVersion: "v2", Name: name, Version: "1.0.0"},
		Templates: []*chart.File{{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  password: {{ .Values.password | quote }}\n")}},
	}
	p, err := chartutil.Save(ch, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	sum = nodeplan.SHA256Hex(b)
	key = nodeplan.AssetKey(sum)
	if err := e.Store.Put(t.Context(), e.Settings.Key(key), b, "application/gzip"); err != nil {
		t.Fatal(err)
	}
	return key, sum
}

func writePlan(t *testing.T, e *agent.Env, p *nodeplan.AddonsPlan) {
	t.Helper()
	b, err := nodeplan.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(e.Path(nodeplan.Dir), 0o755)
	os.WriteFile(e.Path(nodeplan.AddonsPath), b, 0o600)
}

func options(c *testCluster) *Step {
	return &Step{
		Connect:    func(string, func(string, ...any)) (Cluster, error) { return c, nil },
		APITimeout: 5 * time.Second, ReleaseTimeout: 5 * time.Second,
		Retry: retry.Policy{Initial: time.Millisecond, Max: 10 * time.Millisecond, Factor: 2},
	}
}

// hard is what issue 14 asks a pod to see exactly; by the time the addons
// step runs, the secrets step has put it in addons.json as JSON.
const hard = "a \"quoted\" \\ back\nslash"

func TestAddons(t *testing.T) {
	e, out := agenttest.Machine(t, motoURL, "controller", "addons")
	cniKey, cniSum := packaged(t, e, "flannel")
	dexKey, dexSum := packaged(t, e, "dex")
	values, _ := json.Marshal(map[string]any{"password": hard})
	os.MkdirAll(e.Path("/etc/kubernetes/addons"), 0o755)
	os.WriteFile(e.Path("/etc/kubernetes/addons/settings.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cluster-settings\n  namespace: kube-system\ndata:\n  name: demo\n"), 0o644)
	writePlan(t, e, &nodeplan.AddonsPlan{
		Kubeconfig: "/etc/kubernetes/admin.kubeconfig",
		Releases: []nodeplan.Release{
			{Name: "flannel", Namespace: "kube-flannel", ChartKey: cniKey, ChartSHA256: cniSum, Plugin: "cni"},
			{Name: "dex", Namespace: "auth", ChartKey: dexKey, ChartSHA256: dexSum, Plugin: "dex", Values: values},
		},
		Manifests: []nodeplan.Manifest{{Path: "/etc/kubernetes/addons/settings.yaml", Plugin: "settings"}},
	})
	c := newCluster(3)
	c.kube.failures.Store(2)
	o := options(c)
	o.Environ = func() []string {
		return []string{"HOME=/root", "AWS_ENDPOINT_URL=http://10.0.0.250:5000", "AWS_ENDPOINT_URL_EC2=http://ec2.internal", "AWS_SECRET_ACCESS_KEY=never"}
	}
	if err := step.Run(t.Context(), e, o); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// The machine's AWS endpoints reach the add-ons that call AWS; nothing else
	// of its environment does.
	env, err := c.tracker.Get(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "kube-system", "kube-aws-aws-env")
	if err != nil {
		t.Fatalf("no AWS environment ConfigMap: %v", err)
	}
	data := env.(*unstructured.Unstructured).Object["data"].(map[string]any)
	if len(data) != 3 || data["AWS_ENDPOINT_URL"] != "http://10.0.0.250:5000" || data["AWS_ENDPOINT_URL_EC2"] != "http://ec2.internal" || data["AWS_REGION"] != e.Settings.Region {
		t.Errorf("AWS environment %v", data)
	}
	if got := c.release(t, "auth", "dex")["password"]; got != hard {
		t.Errorf("dex's password = %q, want %q", got, hard)
	}
	c.release(t, "kube-flannel", "flannel")
	if _, err := c.tracker.Get(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "kube-system", "cluster-settings"); err != nil {
		t.Errorf("manifest not applied: %v", err)
	}
	log := out.String()
	flannel, dex := strings.Index(log, "releases[0]: release kube-flannel/flannel (plugin cni): installed"), strings.Index(log, "releases[1]: release auth/dex (plugin dex): installed")
	if flannel < 0 || dex < flannel || !strings.Contains(log, "attempt 1 failed: ") || !strings.Contains(log, "manifests[0]: /etc/kubernetes/addons/settings.yaml (plugin settings): 1 objects applied") {
		t.Errorf("output:\n%s", log)
	}
	if strings.Contains(log, "back\nslash") {
		t.Error("a secret reached the output")
	}

	// A second run (the other controller, a reboot) changes nothing.
	out.Reset()
	if err := step.Run(t.Context(), e, options(c)); err != nil {
		t.Fatal(err)
	}
	if strings.Count(out.String(), ": unchanged (chart") != 2 {
		t.Errorf("second run:\n%s", out)
	}
}

func TestAddonsFailures(t *testing.T) {
	tests := []struct {
		name    string
		plan    func(t *testing.T, e *agent.Env) *nodeplan.AddonsPlan
		cluster *testCluster
		want    string
		code    int
		polls   bool // whether the API server was waited for
	}{
		{
			name: "secret not substituted",
			plan: func(t *testing.T, e *agent.Env) *nodeplan.AddonsPlan {
				k, s := packaged(t, e, "dex")
				return &nodeplan.AddonsPlan{Kubeconfig: "/k", Releases: []nodeplan.Release{{Name: "dex", Namespace: "auth", ChartKey: k, ChartSHA256: s, Plugin: "dex", Values: json.RawMessage(`{"password": "((secret:dex/values/password))"}`)}}}
			},
			want: "releases[0]: release auth/dex (plugin dex): values still hold ((secret:dex/values/password)): list /etc/kube-aws/addons.json in the secrets plan",
			code: agent.ExitBadInput,
		},
		{
			name: "chart not what render packaged",
			plan: func(t *testing.T, e *agent.Env) *nodeplan.AddonsPlan {
				k, _ := packaged(t, e, "dex")
				other := strings.Repeat("e", 64)
				e.Store.Put(t.Context(), e.Settings.Key(nodeplan.AssetKey(other)), []byte("x"), "")
				_ = k
				return &nodeplan.AddonsPlan{Kubeconfig: "/k", Releases: []nodeplan.Release{{Name: "dex", Namespace: "auth", ChartKey: nodeplan.AssetKey(other), ChartSHA256: other}}}
			},
			want: "releases[0]: release auth/dex: chart: s3://",
			code: agent.ExitFailed,
		},
		{
			name: "manifest that does not parse",
			plan: func(t *testing.T, e *agent.Env) *nodeplan.AddonsPlan {
				os.MkdirAll(e.Path("/a"), 0o755)
				os.WriteFile(e.Path("/a/m.yaml"), []byte("kind: [\n"), 0o644)
				return &nodeplan.AddonsPlan{Kubeconfig: "/k", Manifests: []nodeplan.Manifest{{Path: "/a/m.yaml", Plugin: "x"}}}
			},
			want: "manifests[0] /a/m.yaml (plugin x): document 1: not YAML",
			code: agent.ExitBadInput,
		},
		{
			name: "API server never ready",
			plan: func(t *testing.T, e *agent.Env) *nodeplan.AddonsPlan {
				os.MkdirAll(e.Path("/a"), 0o755)
				os.WriteFile(e.Path("/a/m.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"), 0o644)
				return &nodeplan.AddonsPlan{Kubeconfig: "/k", Manifests: []nodeplan.Manifest{{Path: "/a/m.yaml"}}}
			},
			cluster: newCluster(1 << 30),
			want:    "waiting for the API server: connection refused",
			code:    agent.ExitFailed,
			polls:   true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := agenttest.Machine(t, motoURL, "controller", "addons")
			writePlan(t, e, tt.plan(t, e))
			c := tt.cluster
			if c == nil {
				c = newCluster(0)
			}
			o := options(c)
			o.APITimeout = 200 * time.Millisecond
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			err := step.Run(ctx, e, o)
			if err == nil || !strings.Contains(err.Error(), tt.want) || agent.ExitCode(err) != tt.code {
				t.Fatalf("err = %v (exit %d), want %q (exit %d)", err, agent.ExitCode(err), tt.want, tt.code)
			}
			if (c.polls > 0) != tt.polls {
				t.Errorf("API server polled %d times", c.polls)
			}
		})
	}
}

// putList uploads a release list to the assets as deploy uploads
// charts/releases.json, and says its full key.
func putList(t *testing.T, e *agent.Env, content string) string {
	t.Helper()
	key := e.Settings.Key(nodeplan.AssetKey(nodeplan.SHA256Hex([]byte(content))))
	if err := e.Store.Put(t.Context(), key, []byte(content), "application/json"); err != nil {
		t.Fatal(err)
	}
	return key
}

// The helm plugin's release list, found by the fact the bootstrap passes:
// fetched, checked, its secret substituted as JSON (quote, backslash and
// newline intact) with the controller role's secrets, then installed before
// the plan's own releases.
func TestAddonsFromReleaseList(t *testing.T) {
	e, out := agenttest.Machine(t, motoURL, "controller", "addons")
	dexKey, dexSum := packaged(t, e, "dex")
	cniKey, cniSum := packaged(t, e, "flannel")
	const marker = "((secret:dex/values/password))"
	agenttest.UploadSecrets(t, e, "controller", e.Settings.EncryptionContext(), map[string]string{marker: hard})
	list, _ := json.Marshal(nodeplan.ReleaseList{Releases: []nodeplan.Release{
		{Name: "flannel", Namespace: "kube-flannel", ChartKey: cniKey, ChartSHA256: cniSum, Plugin: "flannel"},
		{Name: "dex", Namespace: "auth", ChartKey: dexKey, ChartSHA256: dexSum, Plugin: "dex", Values: json.RawMessage(`{"password":"` + marker + `"}`)},
	}})
	if err := e.AddFacts(nodeplan.Facts{"addonsKey": putList(t, e, string(list))}); err != nil {
		t.Fatal(err)
	}
	writePlan(t, e, &nodeplan.AddonsPlan{Kubeconfig: "/etc/kubernetes/admin.conf", ReleasesFrom: "{addonsKey}"})
	c := newCluster(0)
	if err := step.Run(t.Context(), e, options(c)); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := c.release(t, "auth", "dex")["password"]; got != hard {
		t.Errorf("dex's password = %q, want %q", got, hard)
	}
	c.release(t, "kube-flannel", "flannel")
	log := out.String()
	if !strings.Contains(log, "2 releases, sha256 checked") || strings.Index(log, "release kube-flannel/flannel (plugin flannel): installed") > strings.Index(log, "release auth/dex (plugin dex): installed") {
		t.Errorf("output:\n%s", log)
	}
	if strings.Contains(log, "back\nslash") {
		t.Error("a secret reached the output")
	}
	if info, err := os.Stat(e.Path(ListPath)); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the substituted list is not kept 0600: %v", err)
	}
}

// Without the fact (a stack rendered without the helm plugin), the plan's
// manifests are still applied.
func TestAddonsWithoutReleaseList(t *testing.T) {
	e, out := agenttest.Machine(t, motoURL, "controller", "addons")
	os.MkdirAll(e.Path("/a"), 0o755)
	os.WriteFile(e.Path("/a/m.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: default}\n"), 0o644)
	writePlan(t, e, &nodeplan.AddonsPlan{Kubeconfig: "/k", ReleasesFrom: "{addonsKey}", Manifests: []nodeplan.Manifest{{Path: "/a/m.yaml"}}})
	if err := step.Run(t.Context(), e, options(newCluster(0))); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out.String(), "no release list: ") || !strings.Contains(out.String(), "1 objects applied") {
		t.Errorf("output:\n%s", out)
	}
}

// A chart from a chart repository is fetched with Helm's downloader.
func TestAddonsFromRepository(t *testing.T) {
	e, out := agenttest.Machine(t, motoURL, "controller", "addons")
	ch := &chart.Chart{
		Metadata:  &chart.Metadata{APIVersion: "v2", Name: "greeter", Version: "1.2.3"},
		Templates: []*chart.File{{Name: "templates/cm.yaml", Data: []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n")}},
	}
	dir := t.TempDir()
	if _, err := chartutil.Save(ch, dir); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	idx, err := repo.IndexDirectory(dir, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.WriteFile(filepath.Join(dir, "index.yaml"), 0o644); err != nil {
		t.Fatal(err)
	}
	writePlan(t, e, &nodeplan.AddonsPlan{Kubeconfig: "/k", Releases: []nodeplan.Release{
		{Name: "hello", Namespace: "default", Repository: srv.URL, Chart: "greeter", Version: "1.2.3"}}})
	c := newCluster(0)
	if err := step.Run(t.Context(), e, options(c)); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	c.release(t, "default", "hello")

	// A version the repository does not have: said, with the repository.
	writePlan(t, e, &nodeplan.AddonsPlan{Kubeconfig: "/k", Releases: []nodeplan.Release{
		{Name: "hello", Namespace: "default", Repository: srv.URL, Chart: "greeter", Version: "9.9.9"}}})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	if err := step.Run(ctx, e, options(c)); err == nil || !strings.Contains(err.Error(), "9.9.9") {
		t.Fatalf("missing version: %v", err)
	}
}

func TestAddonsReleaseListFailures(t *testing.T) {
	tests := []struct {
		name, list, key, want string
		code                  int
	}{
		{name: "not content-addressed", key: "clusters/demo/charts/releases.json", want: "is not content-addressed", code: agent.ExitBadInput},
		{name: "invalid list", list: `{"releases":[{"name":"Bad_Name","namespace":"x","chartKey":"assets/x"}]}`, want: "releases[0].name", code: agent.ExitBadInput},
		{name: "secret not there", list: `{"releases":[{"name":"a","namespace":"b","values":{"p":"((secret:dex/values/gone))"}}]}`, want: "secret ((secret:dex/values/gone))", code: agent.ExitFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := agenttest.Machine(t, motoURL, "controller", "addons")
			key := tt.key
			if key == "" {
				key = putList(t, e, tt.list)
			}
			e.AddFacts(nodeplan.Facts{"addonsKey": key})
			writePlan(t, e, &nodeplan.AddonsPlan{Kubeconfig: "/k", ReleasesFrom: "{addonsKey}"})
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			err := step.Run(ctx, e, options(newCluster(0)))
			if err == nil || !strings.Contains(err.Error(), tt.want) || agent.ExitCode(err) != tt.code {
				t.Fatalf("err = %v (exit %d), want %q (exit %d)", err, agent.ExitCode(err), tt.want, tt.code)
			}
		})
	}
}

// The dry run reads the plan, the release list and the manifests and says
// what the step would install once the API server answers; it neither asks
// the API server nor fetches a chart.
func TestDryRun(t *testing.T) {
	const marker = "((secret:dex/values/password))"
	tests := []struct {
		name  string
		setup func(t *testing.T, e *agent.Env) agenttest.Want
	}{
		{
			name: "a release list, releases and a manifest",
			setup: func(t *testing.T, e *agent.Env) agenttest.Want {
				dexKey, dexSum := packaged(t, e, "dex")
				agenttest.UploadSecrets(t, e, "controller", e.Settings.EncryptionContext(), map[string]string{marker: hard})
				list, _ := json.Marshal(nodeplan.ReleaseList{Releases: []nodeplan.Release{
					{Name: "dex", Namespace: "auth", ChartKey: dexKey, ChartSHA256: dexSum, Plugin: "dex", Values: json.RawMessage(`{"password":"` + marker + `"}`)},
				}})
				if err := e.AddFacts(nodeplan.Facts{"addonsKey": putList(t, e, string(list))}); err != nil {
					t.Fatal(err)
				}
				os.MkdirAll(e.Path("/a"), 0o755)
				os.WriteFile(e.Path("/a/m.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: default}\n"), 0o644)
				writePlan(t, e, &nodeplan.AddonsPlan{Kubeconfig: "/etc/kubernetes/admin.conf", ReleasesFrom: "{addonsKey}",
					Releases:  []nodeplan.Release{{Name: "flannel", Namespace: "kube-flannel", ChartKey: "assets/" + strings.Repeat("f", 64), ChartSHA256: strings.Repeat("f", 64), Plugin: "cni"}},
					Manifests: []nodeplan.Manifest{{Path: "/a/m.yaml", Plugin: "settings"}}})
				return agenttest.Want{Changes: []string{
					"write /etc/kube-aws/releases.json: the release list, 1 releases, its secrets substituted",
					"wait the API server: until it is ready, with /etc/kubernetes/admin.conf, up to 5s",
					"apply ConfigMap kube-system/kube-aws-aws-env: the machine's AWS settings (1) for the add-ons that call AWS",
					"install release auth/dex (plugin dex): chart " + dexKey + ", unless deployed from it with the same values",
					"install release kube-flannel/flannel (plugin cni): chart assets/" + strings.Repeat("f", 64) + ", unless deployed from it with the same values",
					"apply /a/m.yaml (plugin settings): 1 objects, server-side",
				}}
			},
		},
		{name: "no plan", setup: func(*testing.T, *agent.Env) agenttest.Want { return agenttest.Want{} }},
		{
			name: "a secret left in values",
			setup: func(t *testing.T, e *agent.Env) agenttest.Want {
				writePlan(t, e, &nodeplan.AddonsPlan{Kubeconfig: "/k", Releases: []nodeplan.Release{{Name: "dex", Namespace: "auth", ChartKey: "assets/" + strings.Repeat("f", 64), ChartSHA256: strings.Repeat("f", 64), Values: json.RawMessage(`{"p": "` + marker + `"}`)}}})
				return agenttest.Want{Err: "values still hold " + marker, Code: agent.ExitBadInput}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := agenttest.Machine(t, motoURL, "controller", "addons")
			want := tt.setup(t, e)
			connected := 0
			s := options(newCluster(0))
			s.Connect = func(string, func(string, ...any)) (Cluster, error) {
				connected++
				return nil, errors.New("not in a dry run")
			}
			s.Environ = func() []string { return nil }
			d, out := agenttest.DryEnv(t, e)
			agenttest.ExpectDryRun(t, d, s, want)
			if connected != 0 || strings.Contains(out.String(), "back\nslash") {
				t.Errorf("connected %d times; output:\n%s", connected, out)
			}
		})
	}
}
