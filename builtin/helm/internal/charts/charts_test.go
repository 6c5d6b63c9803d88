package charts

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart/loader"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/core/stage"
)

func testChart(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "testdata", "charts", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var cluster = &config.Cluster{ClusterName: "demo", KubernetesVersion: "1.31.4"}

func render(t *testing.T, releases ...construct.HelmRelease) ([]stage.File, diag.List) {
	t.Helper()
	files, diags, err := Render(cluster, releases, nil)
	if err != nil {
		t.Fatal(err)
	}
	return files, diags
}

func byPath(files []stage.File) map[string][]byte {
	m := map[string][]byte{}
	for _, f := range files {
		m[f.Path] = f.Content
	}
	return m
}

func TestRenderGoodChart(t *testing.T) {
	files, diags := render(t,
		construct.HelmRelease{Name: "greeter", Namespace: "apps", Chart: construct.Chart{Path: testChart(t, "hello")},
			Values: json.RawMessage(`{"greeting":"hi","password":"((secret:dex/password))"}`), Plugin: "dex"},
		construct.HelmRelease{Name: "ingress", Namespace: "ingress", Chart: construct.Chart{Repository: "https://kubernetes.github.io/ingress-nginx", Name: "ingress-nginx", Version: "4.11.0"}},
	)
	if len(diags) != 0 {
		t.Fatalf("diagnostics: %v", diags)
	}
	got := byPath(files)
	tgz, ok := got["charts/greeter-0.1.0.tgz"]
	if !ok {
		t.Fatalf("no packaged chart; files: %v", keys(got))
	}
	if len(got) != 2 {
		t.Errorf("a repository chart must not be downloaded or packaged at render; files: %v", keys(got))
	}
	// The package is a chart Helm itself loads back, whole.
	ch, err := loader.LoadArchive(bytes.NewReader(tgz))
	if err != nil {
		t.Fatalf("packaged chart does not load: %v", err)
	}
	if ch.Name() != "hello" || len(ch.Templates) != 3 {
		t.Errorf("loaded %s with %d templates, want hello with 3", ch.Name(), len(ch.Templates))
	}
	var list nodeplan.ReleaseList
	if err := json.Unmarshal(got[ReleasesFile], &list); err != nil {
		t.Fatal(err)
	}
	if err := list.Validate(); err != nil {
		t.Fatalf("%s is not a valid release list: %v", ReleasesFile, err)
	}
	releases := list.Releases
	if len(releases) != 2 || releases[0].Name != "greeter" || releases[1].Name != "ingress" {
		t.Fatalf("releases out of order: %+v", releases)
	}
	r0, r1 := releases[0], releases[1]
	// Deploy uploads every rendered file to assets/<sha256 of its content>.
	if sum := sha256.Sum256(tgz); r0.ChartSHA256 != hex.EncodeToString(sum[:]) || r0.ChartKey != "assets/"+r0.ChartSHA256 {
		t.Errorf("chart %s (sha256 %s) is not the packaged chart's key", r0.ChartKey, r0.ChartSHA256)
	}
	if r0.Repository != "" || r0.Namespace != "apps" || r0.Plugin != "dex" {
		t.Errorf("chart release entry = %+v", r0)
	}
	if !strings.Contains(string(r0.Values), "((secret:dex/password))") {
		t.Errorf("secret marker not kept in values: %s", r0.Values)
	}
	if r1.Repository != "https://kubernetes.github.io/ingress-nginx" || r1.Chart != "ingress-nginx" || r1.Version != "4.11.0" || r1.ChartKey != "" {
		t.Errorf("repository release entry = %+v", r1)
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestRenderBrokenCharts(t *testing.T) {
	tests := []struct {
		name    string
		release construct.HelmRelease
		message []string
		file    string
		line    int
	}{
		{
			name:    "parse error",
			release: construct.HelmRelease{Name: "oops", Namespace: "default", Chart: construct.Chart{Path: testChart(t, "broken")}},
			message: []string{`release "oops"`, "chart broken 0.2.0", "template broken/templates/deployment.yaml", "nosuchfunction"},
			file:    "broken/templates/deployment.yaml", line: 4,
		},
		{
			name:    "execution error from missing value",
			release: construct.HelmRelease{Name: "svc", Namespace: "default", Chart: construct.Chart{Path: testChart(t, "needs-value")}},
			message: []string{`release "svc"`, "template needs-value/templates/service.yaml", "values.host is required"},
			file:    "needs-value/templates/service.yaml", line: 4,
		},
		{
			name:    "rendered YAML Helm cannot parse",
			release: construct.HelmRelease{Name: "bad", Namespace: "default", Chart: construct.Chart{Path: testChart(t, "bad-yaml")}},
			message: []string{`release "bad"`, "chart bad-yaml 0.1.0", "template bad-yaml/templates/configmap.yaml:14", "not YAML Helm can parse: mapping values are not allowed"},
			file:    "bad-yaml/templates/configmap.yaml", line: 14,
		},
		{
			name:    "rendered document without kind",
			release: construct.HelmRelease{Name: "nokind", Namespace: "default", Chart: construct.Chart{Path: testChart(t, "no-kind")}},
			message: []string{`release "nokind"`, "template no-kind/templates/service.yaml:1", "a document without kind"},
			file:    "no-kind/templates/service.yaml", line: 1,
		},
		{
			name:    "corrupted CRD",
			release: construct.HelmRelease{Name: "crd", Namespace: "default", Chart: construct.Chart{Path: testChart(t, "bad-crd")}},
			message: []string{`release "crd"`, "CRD file bad-crd/crds/widgets.yaml:", "not YAML Helm can parse"},
			file:    "bad-crd/crds/widgets.yaml", line: 7,
		},
		{
			name:    "missing chart",
			release: construct.HelmRelease{Name: "gone", Namespace: "default", Chart: construct.Chart{Path: testChart(t, "does-not-exist")}},
			message: []string{`release "gone"`, "loading chart"},
		},
		{
			name:    "version mismatch",
			release: construct.HelmRelease{Name: "v", Namespace: "default", Chart: construct.Chart{Path: testChart(t, "hello"), Version: "9.9.9"}},
			message: []string{"version 0.1.0, the release asks for 9.9.9"},
		},
		{
			name:    "relative path",
			release: construct.HelmRelease{Name: "rel", Namespace: "default", Chart: construct.Chart{Path: "charts/hello"}},
			message: []string{"chart path charts/hello is relative"},
		},
		{
			name:    "no chart source",
			release: construct.HelmRelease{Name: "nothing", Namespace: "default"},
			message: []string{"needs a path"},
		},
		{
			name:    "repository without chart name",
			release: construct.HelmRelease{Name: "r", Namespace: "default", Chart: construct.Chart{Repository: "https://charts.example.com"}},
			message: []string{"needs chart.name"},
		},
		{
			name:    "bad release name",
			release: construct.HelmRelease{Name: "Not_Valid", Namespace: "default", Chart: construct.Chart{Path: testChart(t, "hello")}},
			message: []string{`release "Not_Valid"`, "invalid release name"},
		},
		{
			name:    "bad namespace",
			release: construct.HelmRelease{Name: "ok", Namespace: "Kube_System", Chart: construct.Chart{Path: testChart(t, "hello")}},
			message: []string{"DNS-1123"},
		},
		{
			name:    "values not an object",
			release: construct.HelmRelease{Name: "ok", Namespace: "default", Chart: construct.Chart{Path: testChart(t, "hello")}, Values: json.RawMessage(`[1]`)},
			message: []string{"values must be a JSON object"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			good := construct.HelmRelease{Name: "fine", Namespace: "default", Chart: construct.Chart{Path: testChart(t, "hello")}}
			files, diags := render(t, good, tt.release)
			if len(diags) != 1 || diags[0].Severity != diag.Fatal {
				t.Fatalf("want one fatal, got %v", diags)
			}
			d := diags[0]
			for _, m := range tt.message {
				if !strings.Contains(d.Message, m) {
					t.Errorf("message %q lacks %q", d.Message, m)
				}
			}
			if d.Plugin != Plugin || d.Stage != "render" || d.Path != "constructs.helmReleases["+tt.release.Namespace+"/"+tt.release.Name+"]" {
				t.Errorf("diagnostic %s: want plugin helm, stage render, path constructs.helmReleases[namespace/name]", d)
			}
			if d.File != tt.file || d.Line != tt.line {
				t.Errorf("location %s:%d, want %s:%d", d.File, d.Line, tt.file, tt.line)
			}
			// The other release still renders, so one run reports everything.
			if _, ok := byPath(files)["charts/fine-0.1.0.tgz"]; !ok {
				t.Errorf("the good release was not packaged")
			}
		})
	}
}

// TestBrokenChartNamesItsPlugin: the fatal is the helm plugin's, but the
// chart to fix belongs to the plugin that contributed the release, which the
// merge records in HelmRelease.Plugin: the message starts with it and the
// hint says where to fix it.
func TestBrokenChartNamesItsPlugin(t *testing.T) {
	_, diags := render(t, construct.HelmRelease{Name: "dex", Namespace: "auth", Chart: construct.Chart{Path: testChart(t, "broken")}, Plugin: "dex"})
	if len(diags) != 1 {
		t.Fatalf("want one fatal, got %v", diags)
	}
	d := diags[0]
	const prefix = `plugin "dex": release "dex" (namespace "auth"): chart broken 0.2.0: template broken/templates/deployment.yaml: `
	if !strings.HasPrefix(d.Message, prefix) || !strings.Contains(d.Message, "nosuchfunction") {
		t.Errorf("message %q, want it to start with %q", d.Message, prefix)
	}
	// The diagnostic is about dex's contribution: its plugin field names
	// dex (issue 14, point 5); kube-aws records helm as the reporter.
	if d.Plugin != "dex" {
		t.Errorf("diagnostic plugin %q, want the plugin that shipped the chart", d.Plugin)
	}
	if !strings.HasPrefix(d.Hint, "fix the chart shipped by plugin dex or its values in cluster.yaml") {
		t.Errorf("hint %q", d.Hint)
	}
	if d.File != "broken/templates/deployment.yaml" || d.Line != 4 {
		t.Errorf("location %s:%d", d.File, d.Line)
	}
	// Fatals before the chart is loaded name the plugin too.
	_, diags = render(t, construct.HelmRelease{Name: "gone", Namespace: "default", Chart: construct.Chart{Path: testChart(t, "does-not-exist")}, Plugin: "extras"})
	if len(diags) != 1 || !strings.HasPrefix(diags[0].Message, `plugin "extras": release "gone"`) {
		t.Errorf("missing chart: %v", diags)
	}
}

// A chart's values.schema.json refusing the values is a fatal with a hint,
// about the plugin that contributed the release; when the plugin passed the
// values on from cluster.yaml (ValuesFrom), it points at the refused value
// there, so kube-aws gives its file:line:col (issue 14, point 5).
func TestSchemaFailurePointsAtClusterYAML(t *testing.T) {
	yaml := "clusterName: demo\nkubernetesVersion: 1.31.4\nplugins:\n  app:\n    enabled: true\n    values:\n      chart:\n        replicas: 3\n        server:\n          port: 99999\n"
	c, diags := config.Parse("cluster.yaml", []byte(yaml))
	if diags.HasFatal() {
		t.Fatal(diags)
	}
	rel := construct.HelmRelease{Name: "app", Namespace: "default", Chart: construct.Chart{Path: testChart(t, "schema")},
		Values: json.RawMessage(`{"replicas":3,"server":{"port":99999}}`), Plugin: "app", ValuesFrom: "plugins.app.values.chart"}
	_, diags, err := Render(c, []construct.HelmRelease{rel}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(diags) != 1 {
		t.Fatalf("want one fatal, got %v", diags)
	}
	d := c.Locate(diags)[0]
	if d.Plugin != "app" || d.Path != "plugins.app.values.chart.server.port" || d.File != "cluster.yaml" || d.Line != 10 || d.Column != 17 ||
		!strings.Contains(d.Message, "values.schema.json") || !strings.Contains(d.Hint, "come from cluster.yaml (plugins.app.values.chart.server.port)") {
		t.Errorf("schema failure: %s (plugin %q, %s:%d:%d)", d, d.Plugin, d.File, d.Line, d.Column)
	}

	// Values the plugin built itself: no cluster.yaml position, and the
	// hint sends the user to that plugin's values.
	rel.ValuesFrom = ""
	_, diags = render(t, rel)
	if len(diags) != 1 || diags[0].Path != "constructs.helmReleases[default/app]" || !strings.Contains(diags[0].Hint, "plugin app builds these values") {
		t.Errorf("values built by the plugin: %v", diags)
	}
}

func TestRenderWithRequiredValue(t *testing.T) {
	_, diags := render(t, construct.HelmRelease{Name: "svc", Namespace: "default",
		Chart: construct.Chart{Path: testChart(t, "needs-value")}, Values: json.RawMessage(`{"host":"example"}`)})
	if len(diags) != 0 {
		t.Fatalf("values must reach the templates: %v", diags)
	}
}

func TestKubeVersionRange(t *testing.T) {
	old := &config.Cluster{KubernetesVersion: "1.26.0"}
	_, diags, err := Render(old, []construct.HelmRelease{{Name: "a", Namespace: "default", Chart: construct.Chart{Path: testChart(t, "hello")}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(diags) != 1 || !strings.Contains(diags[0].Message, "needs Kubernetes >=1.27.0-0") {
		t.Fatalf("want the chart's kubeVersion enforced, got %v", diags)
	}
}

func TestDeterministic(t *testing.T) {
	rel := []construct.HelmRelease{
		{Name: "a", Namespace: "x", Chart: construct.Chart{Path: testChart(t, "hello")}, Values: json.RawMessage(`{"z":1,"a":2}`)},
		{Name: "a", Namespace: "y", Chart: construct.Chart{Path: testChart(t, "hello")}},
	}
	first, _ := render(t, rel...)
	second, _ := render(t, rel...)
	if len(first) != 3 {
		t.Fatalf("want two packages (one per namespace) and releases.json, got %d files", len(first))
	}
	for i := range first {
		if first[i].Path != second[i].Path || !bytes.Equal(first[i].Content, second[i].Content) {
			t.Fatalf("%s differs between two renders", first[i].Path)
		}
	}
	if first[0].Path != "charts/a-x-0.1.0.tgz" || first[1].Path != "charts/a-y-0.1.0.tgz" {
		t.Errorf("same release name in two namespaces: %s, %s", first[0].Path, first[1].Path)
	}
}

// TestPackageFromArchive loads a chart shipped as .tgz and checks the
// normalised package against Helm's own: same entries, modes and contents,
// only the time differs.
func TestPackageFromArchive(t *testing.T) {
	ch, err := loader.Load(testChart(t, "hello"))
	if err != nil {
		t.Fatal(err)
	}
	tgz, err := Package(ch)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	archive := filepath.Join(dir, "hello-0.1.0.tgz")
	if err := os.WriteFile(archive, tgz, 0o644); err != nil {
		t.Fatal(err)
	}
	files, diags := render(t, construct.HelmRelease{Name: "hello", Namespace: "default", Chart: construct.Chart{Path: archive}})
	if len(diags) != 0 {
		t.Fatal(diags)
	}
	if !bytes.Equal(byPath(files)["charts/hello-0.1.0.tgz"], tgz) {
		t.Errorf("re-packaging a packaged chart changed it")
	}

	zr, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		t.Fatal(err)
	}
	if zr.Header.Comment != "Helm" {
		t.Errorf("gzip comment %q, want Helm's", zr.Header.Comment)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.ModTime.Unix() != 0 || h.Mode != 0o644 {
			t.Errorf("%s: time %v mode %o", h.Name, h.ModTime, h.Mode)
		}
		names = append(names, h.Name)
	}
	want := "hello/Chart.yaml hello/values.yaml hello/templates/_helpers.tpl hello/templates/configmap.yaml hello/templates/secret.yaml"
	if strings.Join(names, " ") != want {
		t.Errorf("entries %v, want %s", names, want)
	}
}

// TestEmptyReleases: no release, no list, so deploy leaves the controllers'
// ChartsIndexKey empty and their add-ons plan fetches nothing.
func TestEmptyReleases(t *testing.T) {
	files, diags := render(t)
	if len(diags) != 0 || len(files) != 0 {
		t.Fatalf("files %+v diags %v", files, diags)
	}
}

func TestRepositoryWithoutVersionWarns(t *testing.T) {
	_, diags := render(t, construct.HelmRelease{Name: "r", Namespace: "default", Chart: construct.Chart{Repository: "https://charts.example.com", Name: "thing"}})
	if len(diags) != 1 || diags[0].Severity != diag.Warning || !strings.Contains(diags[0].Hint, "pin chart.version") {
		t.Fatalf("got %v", diags)
	}
}

func TestRenderReportsEveryBrokenManifest(t *testing.T) {
	dir := t.TempDir()
	write := func(p, s string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("Chart.yaml", "apiVersion: v2\nname: many\nversion: 1.0.0\n")
	write("templates/a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\nkind: ConfigMap\nmetadata: {name: b}\n")
	write("templates/b.yaml", "apiVersion: v1\nkind: [\n")
	write("templates/NOTES.txt", "not: [yaml\n")
	write("templates/_x.tpl", "{{- define \"x\" }}not: [yaml{{ end }}\n")
	write("templates/empty.yaml", "{{- if false }}\nkind: x\n{{- end }}\n")
	write("crds/ok.yaml", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: gadgets.example.com}\n")
	_, diags := render(t, construct.HelmRelease{Name: "many", Namespace: "default", Plugin: "gadgets", Chart: construct.Chart{Path: dir}})
	var got []string
	for _, d := range diags {
		got = append(got, fmt.Sprintf("%s:%d", d.File, d.Line))
		if !strings.HasPrefix(d.Message, `plugin "gadgets": release "many"`) || !strings.Contains(d.Hint, "plugin gadgets") {
			t.Errorf("diagnostic %q (hint %q) does not name the plugin", d.Message, d.Hint)
		}
	}
	if strings.Join(got, " ") != "many/templates/a.yaml:5 many/templates/b.yaml:2" {
		t.Errorf("diagnostics at %v:\n%v", got, diags)
	}
}

// Charts are checked concurrently, but the release list, the files and the
// diagnostics keep the releases' order (install order), run after run.
func TestManyReleasesKeepTheirOrder(t *testing.T) {
	var releases []construct.HelmRelease
	var want []string
	for i := range 12 {
		name := fmt.Sprintf("r%02d", i)
		r := construct.HelmRelease{Name: name, Namespace: "apps", Chart: construct.Chart{Path: testChart(t, "hello")},
			Values: json.RawMessage(`{"greeting":"hi"}`)}
		if i%4 == 3 {
			r.Namespace = "Not_A_Label" // refused: no entry, one diagnostic
		} else {
			want = append(want, name)
		}
		releases = append(releases, r)
	}
	var first []byte
	for run := range 3 {
		files, diags := render(t, releases...)
		var list nodeplan.ReleaseList
		if err := json.Unmarshal(byPath(files)[ReleasesFile], &list); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, r := range list.Releases {
			got = append(got, r.Name)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("run %d: releases %v, want %v", run, got, want)
		}
		if len(diags) != 3 || !strings.Contains(diags[0].Message, `"r03"`) || !strings.Contains(diags[2].Message, `"r11"`) {
			t.Fatalf("run %d: diagnostics out of order: %v", run, diags)
		}
		var paths []string
		for _, f := range files {
			paths = append(paths, f.Path)
		}
		if paths[0] != "charts/r00-0.1.0.tgz" || paths[len(paths)-1] != ReleasesFile {
			t.Errorf("run %d: files %v", run, paths)
		}
		if run == 0 {
			first = byPath(files)[ReleasesFile]
		} else if !bytes.Equal(first, byPath(files)[ReleasesFile]) {
			t.Errorf("run %d: %s differs from the first run's", run, ReleasesFile)
		}
	}
}
