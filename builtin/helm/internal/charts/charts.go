// Package charts is the helm plugin's logic: it loads, renders and packages
// every Helm release the plugins contributed, with Helm's own library, into
// charts/releases.json (a nodeplan.ReleaseList), which the controllers'
// add-ons plan installs (kube-aws-node addons). It is kept out of
// the plugin's adapter package so it is tested without the SDK's server.
//
// Only helm.sh/helm/v3/pkg/chart/loader, pkg/chartutil and pkg/engine are
// imported: pkg/action would link client-go's whole discovery and REST
// machinery into the plugin, and its package init into every start.
package charts

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/kubeversion"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/core/stage"
)

// Plugin is the name diagnostics carry.
const Plugin = "helm"

// OutDir is the folder of the render output the charts go to, and
// ReleasesFile the list of releases in install order.
const (
	OutDir       = "charts"
	ReleasesFile = names.ChartsIndexFile
)

// Render loads every release's chart, renders it with its values to catch
// template errors now rather than on a controller at 3 a.m., and writes the
// packaged charts and charts/releases.json. Releases keep their merged order,
// which is plugin order and so install order. Each release's chart is loaded,
// packaged and checked on its own goroutine: they share nothing, and the
// charts are most of the render stage's longest call. cache (nil for none)
// skips the check and the packaging of releases that passed them before
// with the same chart and values.
func Render(c *config.Cluster, releases []construct.HelmRelease, cache *Cache) ([]stage.File, diag.List, error) {
	var diags diag.List
	caps, err := capabilities(c.KubernetesVersion)
	if err != nil {
		diags = append(diags, diag.Fatalf("%v", err).At("kubernetesVersion"))
		return nil, diags.WithDefaults(Plugin, string(stage.Render)), nil
	}
	names := map[string]int{}
	for _, r := range releases {
		names[r.Name]++
	}

	done := make([]released, len(releases))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, r := range releases {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			done[i] = release(c, r, names[r.Name] > 1, caps, cache)
		}()
	}
	wg.Wait()
	cache.Prune()

	var files []stage.File
	list := nodeplan.ReleaseList{Releases: make([]nodeplan.Release, 0, len(releases))}
	for _, d := range done {
		if d.err != nil {
			return nil, diags, d.err
		}
		diags = append(diags, d.diags...)
		files = append(files, d.files...)
		if d.entry != nil {
			list.Releases = append(list.Releases, *d.entry)
		}
	}
	if len(list.Releases) == 0 {
		return files, diags.WithDefaults(Plugin, string(stage.Render)), nil
	}
	if err := list.Validate(); err != nil {
		// Every release was checked above: this is the plugin's fault.
		return nil, diags, fmt.Errorf("%s: %w", ReleasesFile, err)
	}

	out, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nil, diags, fmt.Errorf("encoding %s: %w", ReleasesFile, err)
	}
	files = append(files, stage.File{Path: ReleasesFile, Content: append(out, '\n'), Mode: "0644"})
	return files, diags.WithDefaults(Plugin, string(stage.Render)), nil
}

// released is what one release gives: its packaged chart, its entry in the
// release list (nil when it is refused), and its diagnostics.
type released struct {
	files []stage.File
	entry *nodeplan.Release
	diags diag.List
	err   error
}

// release checks one release and packages its chart. nameTwice says that
// another release has its name (in another namespace), so its file needs the
// namespace in its name.
func release(c *config.Cluster, r construct.HelmRelease, nameTwice bool, caps *chartutil.Capabilities, cache *Cache) (out released) {
	where := fmt.Sprintf("constructs.helmReleases[%s/%s]", r.Namespace, r.Name)
	// What is wrong with a release is the plugin's that contributed it.
	fatal := func(format string, args ...any) released {
		out.diags = append(out.diags, diag.Fatalf("%s: %s", describe(r), fmt.Sprintf(format, args...)).At(where).About(r.Plugin))
		return out
	}
	if err := chartutil.ValidateReleaseName(r.Name); err != nil {
		return fatal("%v", err)
	}
	if !dns1123Label.MatchString(r.Namespace) {
		return fatal("namespace must be a DNS-1123 label (lower case letters, digits and '-', at most 63)")
	}
	values := map[string]any{}
	if len(r.Values) > 0 && string(r.Values) != "null" {
		if err := json.Unmarshal(r.Values, &values); err != nil {
			return fatal("values must be a JSON object: %v", err)
		}
	}
	rawValues, err := json.Marshal(values)
	if err != nil {
		out.err = err
		return out
	}
	if len(r.Values) > 0 && string(r.Values) != "null" {
		rawValues = append(json.RawMessage(nil), r.Values...) // as given: order and markers intact
	}
	entry := nodeplan.Release{Name: r.Name, Namespace: r.Namespace, Plugin: r.Plugin, Values: rawValues}

	switch {
	case r.Chart.Path != "" && !filepath.IsAbs(r.Chart.Path):
		// Relative to what? The helm plugin runs in its own folder, not
		// the contributing plugin's: the path must say where it is.
		return fatal("chart path %s is relative; a plugin sends the absolute path of the chart it ships", r.Chart.Path)
	case r.Chart.Path != "":
		ch, err := loader.Load(r.Chart.Path)
		if err != nil {
			return fatal("loading chart %s: %v", r.Chart.Path, err)
		}
		if r.Chart.Version != "" && r.Chart.Version != ch.Metadata.Version {
			return fatal("chart %s is version %s, the release asks for %s", r.Chart.Path, ch.Metadata.Version, r.Chart.Version)
		}
		if r.Chart.Name != "" && r.Chart.Name != ch.Name() {
			return fatal("chart %s is named %s, the release asks for %s", r.Chart.Path, ch.Name(), r.Chart.Name)
		}
		key := cache.key(ch, r, caps.KubeVersion.String())
		tgz, ok := cache.get(key)
		if !ok {
			// Package before rendering: processing dependencies prunes the
			// disabled subcharts from the loaded chart, but the node must
			// get the chart whole, as helm package would make it.
			tgz, err = Package(ch)
			if err != nil {
				return fatal("packaging chart %s: %v", r.Chart.Path, err)
			}
			if ds := check(c, ch, r, values, caps); len(ds) > 0 {
				for _, d := range ds {
					if d.Path == "" {
						d = d.At(where)
					}
					out.diags = append(out.diags, d.About(r.Plugin))
				}
				return out
			}
			cache.put(key, tgz)
		}
		file := fmt.Sprintf("%s-%s.tgz", r.Name, ch.Metadata.Version)
		if nameTwice {
			// The same release name in two namespaces needs two files.
			file = fmt.Sprintf("%s-%s-%s.tgz", r.Name, r.Namespace, ch.Metadata.Version)
		}
		out.files = append(out.files, stage.File{Path: OutDir + "/" + file, Content: tgz, Mode: "0644"})
		// Deploy uploads every rendered file to assets/<sha256>.
		sum := sha256.Sum256(tgz)
		entry.ChartSHA256 = hex.EncodeToString(sum[:])
		entry.ChartKey = nodeplan.AssetKey(entry.ChartSHA256)
	case r.Chart.Repository != "":
		if r.Chart.Name == "" {
			return fatal("a chart from repository %s needs chart.name", r.Chart.Repository)
		}
		if r.Chart.Version == "" {
			out.diags = append(out.diags, diag.Warningf("%s: chart %s from %s has no version; each boot installs whatever is newest",
				describe(r), r.Chart.Name, r.Chart.Repository).At(where).WithHint("pin chart.version").About(r.Plugin))
		}
		entry.Repository, entry.Chart, entry.Version = r.Chart.Repository, r.Chart.Name, r.Chart.Version
	default:
		return fatal("the chart needs a path (a folder or .tgz the plugin ships) or a repository")
	}
	out.entry = &entry
	return out
}

// describe names a release for diagnostics, starting with the plugin that
// contributed it (the merge fills HelmRelease.Plugin): the diagnostic itself
// is the helm plugin's, but the chart to fix is that plugin's.
func describe(r construct.HelmRelease) string {
	s := fmt.Sprintf("release %q (namespace %q)", r.Name, r.Namespace)
	if r.Plugin != "" {
		s = fmt.Sprintf("plugin %q: %s", r.Plugin, s)
	}
	return s
}

var dns1123Label = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// capabilities are Helm's defaults with the cluster's Kubernetes version, so
// that charts testing .Capabilities.KubeVersion render as they will install.
func capabilities(version string) (*chartutil.Capabilities, error) {
	v, err := kubeversion.Parse(version)
	if err != nil {
		return nil, err
	}
	if !v.HasPatch {
		v.HasPatch = true
	}
	kv, err := chartutil.ParseKubeVersion(v.String())
	if err != nil {
		return nil, err
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	return caps, nil
}

// check does what helm install does before it talks to the cluster: the
// chart's Kubernetes version range, its dependencies, its values schema,
// every template rendered with the release's values, and every rendered
// manifest and CRD file parsed as Helm parses them (checkManifests).
func check(c *config.Cluster, ch *chart.Chart, r construct.HelmRelease, values map[string]any, caps *chartutil.Capabilities) []diag.Diagnostic {
	fatal := func(format string, args ...any) []diag.Diagnostic {
		return []diag.Diagnostic{diag.Fatalf("%s: chart %s %s: %s", describe(r), ch.Name(), ch.Metadata.Version, fmt.Sprintf(format, args...))}
	}
	hint := "fix the template or the release's values; helm template reproduces this"
	if r.Plugin != "" {
		hint = fmt.Sprintf("fix the chart shipped by plugin %s or its values in cluster.yaml (plugins.%s.values); helm template reproduces this", r.Plugin, r.Plugin)
	}
	if kv := ch.Metadata.KubeVersion; kv != "" && !chartutil.IsCompatibleRange(kv, caps.KubeVersion.String()) {
		return fatal("needs Kubernetes %s, the cluster runs %s", kv, caps.KubeVersion.String())
	}
	if missing := missingDependencies(ch); len(missing) > 0 {
		d := fatal("dependencies %s are not in the chart's charts/ folder", strings.Join(missing, ", "))
		d[0] = d[0].WithHint("run helm dependency build on the chart before shipping it")
		return d
	}
	if err := chartutil.ProcessDependenciesWithMerge(ch, values); err != nil {
		return fatal("processing dependencies: %v", err)
	}
	// The values against the charts' values.schema.json, as helm install
	// checks them, but here, so that a failure can point at cluster.yaml.
	coalesced, err := chartutil.CoalesceValues(ch, values)
	if err != nil {
		return fatal("values: %v", err)
	}
	if err := chartutil.ValidateAgainstSchema(ch, coalesced); err != nil {
		d := fatal("values do not match the chart's values.schema.json: %s", strings.TrimSpace(err.Error()))
		d[0] = d[0].WithHint(schemaHint(c, ch, r, coalesced, &d[0]))
		return d
	}
	opts := chartutil.ReleaseOptions{Name: r.Name, Namespace: r.Namespace, Revision: 1, IsInstall: true}
	top, err := chartutil.ToRenderValuesWithSchemaValidation(ch, values, opts, caps, true)
	if err != nil {
		return fatal("values: %v", err)
	}
	rendered, err := engine.Render(ch, top)
	if err != nil {
		tpl, line, col := templateOf(err)
		if tpl == "" {
			return fatal("rendering: %v", err)
		}
		d := fatal("template %s: %v", tpl, err)
		d[0] = d[0].InFile(tpl, line, col).WithHint(hint)
		return d
	}
	var out []diag.Diagnostic
	for _, p := range checkManifests(rendered, ch.CRDObjects()) {
		kind, h := "template", hint
		if strings.Contains(p.file, "/crds/") {
			// CRD files are not templates: values cannot fix them.
			kind, h = "CRD file", "fix the CRD file in the chart; helm install reads it as it is"
			if r.Plugin != "" {
				h = fmt.Sprintf("fix the CRD file in the chart shipped by plugin %s; helm install reads it as it is", r.Plugin)
			}
		}
		d := fatal("%s %s:%d: %s", kind, p.file, p.line, p.message)
		out = append(out, d[0].InFile(p.file, p.line, 0).WithHint(h))
	}
	return out
}

// schemaHint says where to fix values a chart's schema refuses, and, when
// the contributing plugin passed them on from cluster.yaml (ValuesFrom),
// points d at the refused value there, so kube-aws adds its file:line:col.
func schemaHint(c *config.Cluster, ch *chart.Chart, r construct.HelmRelease, values chartutil.Values, d *diag.Diagnostic) string {
	if r.ValuesFrom != "" {
		d.Path = c.PointerPath(r.ValuesFrom, schemaPointer(ch, values))
		return fmt.Sprintf("the release's values come from cluster.yaml (%s): fix them there to match the chart's values.schema.json (helm template with these values reproduces this)", d.Path)
	}
	if r.Plugin != "" {
		return fmt.Sprintf("plugin %s builds these values from its own (plugins.%s.values in cluster.yaml): fix those, or the chart's values.schema.json", r.Plugin, r.Plugin)
	}
	return "fix the release's values or the chart's values.schema.json (helm template with these values reproduces this)"
}

// schemaPointer is the JSON pointer, within the release's values, of the
// first value the chart's own values.schema.json refuses ("" when the
// refusal is a subchart's). Helm reports it only as text; its own schema
// library, asked directly, says where.
func schemaPointer(ch *chart.Chart, values chartutil.Values) string {
	if ch.Schema == nil {
		return ""
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(ch.Schema))
	if err != nil {
		return ""
	}
	comp := jsonschema.NewCompiler()
	if comp.AddResource("values.schema.json", doc) != nil {
		return ""
	}
	sch, err := comp.Compile("values.schema.json")
	if err != nil {
		return ""
	}
	var ve *jsonschema.ValidationError
	if !errors.As(sch.Validate(values.AsMap()), &ve) {
		return ""
	}
	for len(ve.Causes) > 0 {
		ve = ve.Causes[0]
	}
	ptr := ""
	for _, tok := range ve.InstanceLocation {
		ptr += "/" + strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
	}
	return ptr
}

// templateLocation finds the template in Helm's error text, which comes in
// the shapes "parse error at (chart/templates/x.yaml:3): ...",
// "execution error at (chart/templates/x.yaml:3:5): ..." and
// "template: chart/templates/x.yaml:3:5: executing ...".
var templateLocation = regexp.MustCompile(`(?:error (?:at|in) \(|template: )([^():\s]+\.[A-Za-z0-9]+)(?::(\d+))?(?::(\d+))?`)

func templateOf(err error) (name string, line, col int) {
	m := templateLocation.FindStringSubmatch(err.Error())
	if m == nil {
		return "", 0, 0
	}
	line, _ = strconv.Atoi(m[2])
	col, _ = strconv.Atoi(m[3])
	return m[1], line, col
}

func missingDependencies(ch *chart.Chart) []string {
	have := map[string]bool{}
	for _, d := range ch.Dependencies() {
		have[d.Name()] = true
	}
	var missing []string
	for _, d := range ch.Metadata.Dependencies {
		if !have[d.Name] {
			missing = append(missing, d.Name)
		}
	}
	return missing
}
