package config

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
)

// PluginNames lists every plugin cluster.yaml mentions, at cluster level or
// in a node pool, sorted.
func (c *Cluster) PluginNames() []string {
	set := map[string]bool{}
	for name := range c.Plugins {
		set[name] = true
	}
	for _, np := range c.NodePools {
		for name := range np.Plugins {
			set[name] = true
		}
	}
	return sortedKeys(set)
}

// PluginEnabled says whether a plugin is on for the cluster: its
// plugins.<name>.enabled when set, else on when it has a source (naming a
// registry to take it from is asking for it), else defaultOn (true for
// built-ins, false for contrib and user plugins).
func (c *Cluster) PluginEnabled(name string, defaultOn bool) bool {
	if pc, ok := c.Plugins[name]; ok && pc.Enabled != nil {
		return *pc.Enabled
	} else if ok && pc.Source != "" {
		return true
	}
	return defaultOn
}

// EffectiveValues computes every mentioned plugin's values: its config files
// (YAML, relative to baseDir, the folder of cluster.yaml) merged in order,
// then plugins.<name>.values over them; and for every node pool the pool's
// own config files and values merged over that with a JSON merge patch
// (RFC 7386: maps merge key by key, lists and scalars replace, null deletes).
// A node pool that sets nodePools[].plugins.<name>.enabled: false gets no
// entry. A {valueFrom: ...} secret source is replaced as a whole, never
// merged key by key, so an override may switch from env to file. Secret
// sources are left in place: ResolveSecrets resolves them.
func EffectiveValues(c *Cluster, baseDir string) (map[string]stage.PluginValues, diag.List) {
	var diags diag.List
	out := map[string]stage.PluginValues{}
	for _, name := range c.PluginNames() {
		base := JoinPath("plugins", name)
		cluster, d := layer(c, baseDir, base, c.Plugins[name], false)
		diags = append(diags, d...)
		pv := stage.PluginValues{Values: cluster}
		for i, np := range c.NodePools {
			pc, ok := np.Plugins[name]
			if ok && pc.Enabled != nil && !*pc.Enabled {
				continue
			}
			merged := cluster
			if ok {
				patch, d := layer(c, baseDir, JoinPath(IndexPath("nodePools", i)+".plugins", name), pc, true)
				diags = append(diags, d...)
				m, err := MergeValues(cluster, patch)
				if err != nil {
					diags = append(diags, posDiag(c, diag.Fatalf("cannot merge node pool %q values of plugin %s over the cluster-level values: %v", np.Name, name, err).
						At(JoinPath(IndexPath("nodePools", i)+".plugins", name)+".values").
						WithHint("make the override a mapping of the keys to change")))
					continue
				}
				merged = m
			}
			if pv.NodePools == nil {
				pv.NodePools = map[string]json.RawMessage{}
			}
			pv.NodePools[np.Name] = merged
		}
		out[name] = pv
	}
	return out, diags
}

// layer merges a PluginConfig's config files and then its values. With
// keepNulls (a node pool's override) the result is itself a merge patch: a
// null in a pool's config file must survive to delete the key from the
// cluster-level values.
func layer(c *Cluster, baseDir, path string, pc PluginConfig, keepNulls bool) (json.RawMessage, diag.List) {
	merge := MergeValues
	if keepNulls {
		merge = combinePatches
	}
	var diags diag.List
	acc := json.RawMessage(`{}`)
	for i, f := range pc.ConfigFiles {
		fpath := IndexPath(path+".configFiles", i)
		if strings.TrimSpace(f) == "" {
			continue // Validate reports it
		}
		full := f
		if !filepath.IsAbs(full) {
			full = filepath.Join(baseDir, f)
		}
		data, err := readLimited(full, MaxConfigFileSize)
		if isTooLarge(err) {
			diags = append(diags, posDiag(c, diag.Fatalf("plugin config file %s is not read: %v", f, err).At(fpath).
				WithHint("split it: a plugin's configFiles are merged in order, so its values can be spread over several files, each under the limit")))
			continue
		}
		if err != nil {
			diags = append(diags, posDiag(c, diag.Fatalf("cannot read plugin config file %s: %v", f, unwrapPathError(err)).At(fpath).
				WithHint(fmt.Sprintf("config files are relative to the folder of cluster.yaml (%s); create the file or fix the path", baseDirName(baseDir)))))
			continue
		}
		js, d := yamlToJSON(full, data)
		diags = append(diags, d...)
		if js == nil {
			continue
		}
		if !isObject(js) {
			diags = append(diags, diag.Fatalf("plugin config file %s must hold a mapping of values", f).At(fpath).InFile(full, 1, 1).
				WithHint("write the values as `key: value` lines at the top level"))
			continue
		}
		m, err := merge(acc, js)
		if err != nil {
			diags = append(diags, posDiag(c, diag.Fatalf("cannot merge plugin config file %s: %v", f, err).At(fpath)))
			continue
		}
		acc = m
	}
	if len(pc.Values) > 0 && string(pc.Values) != "null" {
		if !isObject(pc.Values) {
			return acc, diags // Validate reports a values that is not a mapping
		}
		m, err := merge(acc, pc.Values)
		if err != nil {
			diags = append(diags, posDiag(c, diag.Fatalf("cannot merge %s.values: %v", path, err).At(path+".values")))
			return acc, diags
		}
		acc = m
	}
	return acc, diags
}

func baseDirName(d string) string {
	if d == "" {
		return "."
	}
	return d
}

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

func isObject(js json.RawMessage) bool {
	for _, b := range js {
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return true
		default:
			return false
		}
	}
	return false
}

// posDiag fills file:line:column from the cluster's source for d.Path.
func posDiag(c *Cluster, d diag.Diagnostic) diag.Diagnostic {
	if file, line, col, ok := c.Position(d.Path); ok {
		d = d.InFile(file, line, col)
	}
	return d
}

// MergeValues applies patch over doc as a JSON merge patch (RFC 7386), except
// that a {valueFrom: ...} object in the patch replaces what it lands on
// instead of merging into it: a secret source is one value, and merging an
// env source with a file source would make an invalid one.
func MergeValues(doc, patch json.RawMessage) (json.RawMessage, error) {
	if len(patch) == 0 || string(patch) == "null" {
		return doc, nil
	}
	if len(doc) == 0 || string(doc) == "null" {
		doc = json.RawMessage(`{}`)
	}
	var d, p any
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, err
	}
	if clearSecretTargets(d, p) {
		var err error
		if doc, err = json.Marshal(d); err != nil {
			return nil, err
		}
	}
	return jsonpatch.MergePatch(doc, patch)
}

// combinePatches merges two merge patches into one that has the effect of
// applying both in turn (nulls are kept), with the same secret-source rule
// as MergeValues.
func combinePatches(first, second json.RawMessage) (json.RawMessage, error) {
	var f, s any
	if err := json.Unmarshal(first, &f); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(second, &s); err != nil {
		return nil, err
	}
	if clearSecretTargets(f, s) {
		var err error
		if first, err = json.Marshal(f); err != nil {
			return nil, err
		}
	}
	return jsonpatch.MergeMergePatches(first, second)
}

// clearSecretTargets deletes from doc every object that the patch replaces
// with a secret source, reporting whether it changed anything.
func clearSecretTargets(doc, patch any) bool {
	dm, ok1 := doc.(map[string]any)
	pm, ok2 := patch.(map[string]any)
	if !ok1 || !ok2 {
		return false
	}
	changed := false
	for k, pv := range pm {
		dv, ok := dm[k]
		if !ok {
			continue
		}
		if _, isSrc := secretSource(pv); isSrc {
			if _, isMap := dv.(map[string]any); isMap {
				delete(dm, k)
				changed = true
			}
			continue
		}
		if clearSecretTargets(dv, pv) {
			changed = true
		}
	}
	return changed
}

// secretSource recognises {valueFrom: {...}}: an object whose only key is
// valueFrom. It returns the valueFrom value.
func secretSource(v any) (any, bool) {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return nil, false
	}
	src, ok := m["valueFrom"]
	return src, ok
}

// ValuesPath is the config path of the value at a JSON pointer inside a
// plugin's values: plugins.dex.values.connectors[0].id. With a node pool it
// is the path inside that pool's override when the value was written there,
// else the cluster-level path (the pool inherited it).
func (c *Cluster) ValuesPath(plugin, pool, pointer string) string {
	segs := pointerSegments(pointer)
	if pool != "" {
		for i, np := range c.NodePools {
			if np.Name != pool {
				continue
			}
			base := JoinPath(IndexPath("nodePools", i)+".plugins", plugin) + ".values"
			if p := c.pathFor(base, segs); c.src.has(p) {
				return p
			}
		}
	}
	return c.pathFor(JoinPath("plugins", plugin)+".values", segs)
}

// PointerPath is the config path of the value at a JSON pointer under the
// config path base: PointerPath("plugins.app.values.chart", "/server/port")
// is plugins.app.values.chart.server.port. A plugin that passes part of its
// values on (a Helm release's values, say) names where they came from, and a
// problem found in them later still points at cluster.yaml.
func (c *Cluster) PointerPath(base, pointer string) string {
	return c.pathFor(base, pointerSegments(pointer))
}

// pathFor turns pointer segments into a config path, choosing between a map
// key and a list index for numeric segments by what the file holds.
func (c *Cluster) pathFor(base string, segs []string) string {
	p := base
	for _, s := range segs {
		if n, err := strconv.Atoi(s); err == nil && n >= 0 {
			asIndex := IndexPath(p, n)
			if c.src == nil || c.src.has(asIndex) || !c.src.has(JoinPath(p, s)) {
				p = asIndex
				continue
			}
		}
		p = JoinPath(p, s)
	}
	return p
}

// pointerSegments splits an RFC 6901 JSON pointer into unescaped segments.
func pointerSegments(ptr string) []string {
	if ptr == "" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts
}

// escapePointer escapes one JSON pointer segment.
func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

// Locate fills in file:line:column on every diagnostic that has a config
// path but no file, from where that path (or, for a defaulted value, its
// closest written ancestor) sits in cluster.yaml. Use it on diagnostics
// made without the cluster at hand: plugins' diagnostics, ChooseProviders'.
// A path that is not in the file at all (a construct path such as
// constructs.units[worker:a.service]) is left without a position.
func (c *Cluster) Locate(diags diag.List) diag.List {
	out := make(diag.List, len(diags))
	for i, d := range diags {
		if d.File == "" && d.Path != "" && c != nil && c.src != nil {
			// The path or a written ancestor, but not the document itself:
			// a path that is not cluster.yaml's gets no position.
			for p := d.Path; p != ""; p = parentPath(p) {
				if pos, ok := c.src.value[p]; ok {
					d = d.InFile(c.src.file, pos.Line, pos.Column)
					break
				}
			}
		}
		out[i] = d
	}
	return out
}
