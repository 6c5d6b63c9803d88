// Package values checks plugin values against the JSON Schema each plugin
// declares (stage.PluginInfo.ValuesSchema), and reports plugins that are
// enabled but provided by no source. It is separate from core/config so that
// plugin binaries, which import core/config through the SDK, do not link a
// JSON Schema library: only the kube-aws host validates.
package values

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
)

var printer = message.NewPrinter(language.English)

// Compile compiles a plugin's values schema. An invalid schema is the
// plugin's bug, reported as such.
func Compile(plugin string, schema json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("plugin %s declares a values schema that is not JSON: %w", plugin, err)
	}
	c := jsonschema.NewCompiler()
	url := "kube-aws:///plugins/" + plugin + "/values.schema.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("plugin %s declares an invalid values schema: %w", plugin, err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("plugin %s declares an invalid values schema: %w", plugin, err)
	}
	return s, nil
}

// Validate checks one plugin's resolved (plain) values, cluster-level and
// for every node pool, against its schema. Each error is a fatal diagnostic
// with the config path of the offending value (plugins.dex.values.issuer,
// or nodePools[2].plugins.dex.values.replicas when the pool set it) and its
// file:line:column in cluster.yaml when c knows it (c may be nil). Messages
// are passed through config.Redact, so a sensitive value that fails a
// pattern is shown as its marker, never in plain text. A pool whose values
// fail exactly like the cluster-level values adds no second diagnostic.
func Validate(c *config.Cluster, plugin string, schema json.RawMessage, plain stage.PluginValues, secrets config.Secrets) diag.List {
	if len(schema) == 0 {
		return nil
	}
	sch, err := Compile(plugin, schema)
	if err != nil {
		d := diag.Fatalf("%s", config.Redact(err.Error(), secrets)).
			WithHint(fmt.Sprintf("this is a bug in plugin %s: report it to its author, or disable it with plugins.%s.enabled: false", plugin, plugin))
		d.Plugin = plugin
		return diag.List{d}
	}
	var out diag.List
	// The schema as a document, to name the keys an object allows when a
	// value has one it does not (the schema compiled, so it decodes).
	doc, _ := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	// clusterErrs holds pointer+message of the cluster-level failures: a
	// pool inherits them, and repeating each once per pool helps nobody.
	clusterErrs := map[string]bool{}
	check := func(pool string, raw json.RawMessage) {
		if len(raw) == 0 {
			raw = json.RawMessage(`{}`)
		}
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			return // values come from our own JSON encoding; nothing to say
		}
		err = sch.Validate(inst)
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return
		}
		for _, leaf := range leaves(ve) {
			for _, p := range problems(leaf, doc, plugin, secrets) {
				key := p.ptr + "\x00" + p.msg
				if pool == "" {
					clusterErrs[key] = true
				} else if clusterErrs[key] {
					continue
				}
				path := valuesPath(c, plugin, pool, p.ptr)
				where := ""
				if pool != "" && !strings.HasPrefix(path, "nodePools[") {
					where = fmt.Sprintf(" (in node pool %s)", pool)
				}
				hint := fmt.Sprintf("fix %s to match plugin %s's values schema (`kube-aws plugins describe %s` prints it)", path, plugin, plugin)
				if p.hint != "" {
					hint = p.hint
				}
				var d diag.Diagnostic
				if p.unknown {
					d = diag.Fatalf("plugin %s values%s: %s", plugin, where, p.msg)
				} else {
					d = diag.Fatalf("plugin %s values%s: %s: %s", plugin, where, displayPointer(p.ptr), p.msg)
				}
				d = d.At(path).WithHint(hint)
				d.Plugin = plugin
				if c != nil {
					if file, line, col, ok := c.Position(path); ok {
						d = d.InFile(file, line, col)
					}
				}
				out = append(out, d)
			}
		}
	}
	check("", plain.Values)
	pools := make([]string, 0, len(plain.NodePools))
	for p := range plain.NodePools {
		pools = append(pools, p)
	}
	sort.Strings(pools)
	for _, p := range pools {
		check(p, plain.NodePools[p])
	}
	return out
}

// problem is one schema failure, where it is and what to say.
type problem struct {
	ptr, msg, hint string
	// unknown is a key the schema does not allow: its message names it.
	unknown bool
}

// problems turns one schema failure into what to tell the user. A value
// with keys its object does not allow (additionalProperties) gives one
// problem per key, at the key, with the nearest allowed key as cluster.yaml's
// unknown keys have it ("did you mean"); any other failure is itself.
func problems(leaf *jsonschema.ValidationError, doc any, plugin string, secrets config.Secrets) []problem {
	ptr := pointer(leaf.InstanceLocation)
	extra, ok := leaf.ErrorKind.(*kind.AdditionalProperties)
	if !ok {
		return []problem{{ptr: ptr, msg: config.Redact(leaf.ErrorKind.LocalizedString(printer), secrets)}}
	}
	allowed, patterns := allowedKeys(doc, leaf.SchemaURL)
	describe := fmt.Sprintf("`kube-aws plugins describe %s` prints the schema", plugin)
	if len(patterns) > 0 {
		describe = fmt.Sprintf("keys here match %s; %s", strings.Join(patterns, " or "), describe)
	}
	out := make([]problem, 0, len(extra.Properties))
	for _, k := range extra.Properties {
		in := ""
		if ptr != "" {
			in = " in " + ptr
		}
		p := problem{ptr: ptr + pointer([]string{k}), unknown: true, msg: fmt.Sprintf("unknown key %q%s", k, in)}
		switch s := config.SuggestKey(k, allowed); {
		case s != "":
			p.msg += fmt.Sprintf(" (did you mean %q?)", s)
			p.hint = fmt.Sprintf("rename it to %s (%s)", s, describe)
		case len(allowed) > 0:
			p.hint = fmt.Sprintf("valid keys here: %s (%s)", strings.Join(allowed, ", "), describe)
		case len(patterns) > 0:
			p.hint = fmt.Sprintf("rename or remove it (%s)", describe)
		default:
			p.hint = fmt.Sprintf("remove it: plugin %s takes no keys here (%s)", plugin, describe)
		}
		out = append(out, p)
	}
	return out
}

// allowedKeys lists, sorted, the properties the schema at schemaURL (a
// location in the plugin's schema document, kube-aws:///...#/json/pointer)
// declares, and the patterns of its patternProperties.
func allowedKeys(doc any, schemaURL string) (keys, patterns []string) {
	_, frag, _ := strings.Cut(schemaURL, "#")
	cur := doc
	if frag != "" {
		for _, t := range strings.Split(strings.TrimPrefix(frag, "/"), "/") {
			t = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
			switch v := cur.(type) {
			case map[string]any:
				cur = v[t]
			case []any:
				i, err := strconv.Atoi(t)
				if err != nil || i < 0 || i >= len(v) {
					return nil, nil
				}
				cur = v[i]
			default:
				return nil, nil
			}
		}
	}
	obj, _ := cur.(map[string]any)
	props, _ := obj["properties"].(map[string]any)
	for k := range props {
		keys = append(keys, k)
	}
	pats, _ := obj["patternProperties"].(map[string]any)
	for p := range pats {
		patterns = append(patterns, p)
	}
	sort.Strings(keys)
	sort.Strings(patterns)
	return keys, patterns
}

// ValidateAll validates every plugin that has a schema, in name order.
func ValidateAll(c *config.Cluster, plain map[string]stage.PluginValues, schemas map[string]json.RawMessage, secrets config.Secrets) diag.List {
	names := make([]string, 0, len(schemas))
	for n := range schemas {
		names = append(names, n)
	}
	sort.Strings(names)
	var out diag.List
	for _, n := range names {
		out = append(out, Validate(c, n, schemas[n], plain[n], secrets)...)
	}
	return out
}

func valuesPath(c *config.Cluster, plugin, pool, ptr string) string {
	if c == nil {
		base := config.JoinPath("plugins", plugin) + ".values"
		if pool != "" {
			base = config.JoinPath("nodePools["+pool+"].plugins", plugin) + ".values"
		}
		for _, seg := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
			if seg != "" {
				base = config.JoinPath(base, seg)
			}
		}
		return base
	}
	return c.ValuesPath(plugin, pool, ptr)
}

// leaves returns the most specific errors: the ones that say what is wrong
// rather than "allOf failed".
func leaves(ve *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(ve.Causes) == 0 {
		return []*jsonschema.ValidationError{ve}
	}
	var out []*jsonschema.ValidationError
	for _, c := range ve.Causes {
		out = append(out, leaves(c)...)
	}
	return out
}

func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

func displayPointer(ptr string) string {
	if ptr == "" {
		return "(top level)"
	}
	return ptr
}

// UnknownPluginsDiag reports every plugin named under plugins: in
// cluster.yaml (configured: each name's enabled setting, nil when unset)
// that no source (built-in, contrib, user, registry) provides, listing the
// available ones and suggesting the closest name as cluster.yaml's unknown
// keys do. A name set to enabled: false is left alone: the user keeps its
// settings for a plugin that is not installed here.
func UnknownPluginsDiag(configured map[string]*bool, available []string) diag.List {
	have := map[string]bool{}
	for _, a := range available {
		have[a] = true
	}
	sorted := append([]string(nil), available...)
	sort.Strings(sorted)
	names := make([]string, 0, len(configured))
	for n := range configured {
		names = append(names, n)
	}
	sort.Strings(names)
	var out diag.List
	for _, n := range names {
		enabled := configured[n]
		if have[n] || (enabled != nil && !*enabled) {
			continue
		}
		var d diag.Diagnostic
		if enabled != nil {
			d = diag.Fatalf("plugin %s is enabled but no plugin source provides it", n)
		} else {
			d = diag.Fatalf("unknown plugin %q in plugins: no plugin source provides it, so its settings would be ignored", n)
		}
		hint := "available plugins: " + strings.Join(sorted, ", ") +
			"; put a user plugin's executable at plugins/" + n + "/" + n + " beside cluster.yaml or in a --plugin-dir, or remove plugins." + n
		if enabled == nil {
			hint += " (or set plugins." + n + ".enabled: false to keep its settings for later)"
		}
		if len(sorted) == 0 {
			hint = "no plugins were found at all: check the kube-aws installation (bin/kube-aws-plugins/) and --plugin-dir"
		} else if s := config.SuggestKey(n, sorted); s != "" {
			d.Message += fmt.Sprintf(" (did you mean %q?)", s)
			hint = fmt.Sprintf("rename it to %s; ", s) + hint
		}
		out = append(out, d.At(config.JoinPath("plugins", n)).WithHint(hint))
	}
	return out
}
