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
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
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
			ptr := pointer(leaf.InstanceLocation)
			msg := config.Redact(leaf.ErrorKind.LocalizedString(printer), secrets)
			key := ptr + "\x00" + msg
			if pool == "" {
				clusterErrs[key] = true
			} else if clusterErrs[key] {
				continue
			}
			path := valuesPath(c, plugin, pool, ptr)
			where := ""
			if pool != "" && !strings.HasPrefix(path, "nodePools[") {
				where = fmt.Sprintf(" (in node pool %s)", pool)
			}
			d := diag.Fatalf("plugin %s values%s: %s: %s", plugin, where, displayPointer(ptr), msg).At(path).
				WithHint(fmt.Sprintf("fix %s to match plugin %s's values schema (`kube-aws plugins describe %s` prints it)", path, plugin, plugin))
			d.Plugin = plugin
			if c != nil {
				if file, line, col, ok := c.Position(path); ok {
					d = d.InFile(file, line, col)
				}
			}
			out = append(out, d)
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

// UnknownPluginsDiag reports every enabled plugin that no source (built-in,
// contrib, user) provides, listing the available ones and the closest name.
func UnknownPluginsDiag(enabled, available []string) diag.List {
	have := map[string]bool{}
	for _, a := range available {
		have[a] = true
	}
	sorted := append([]string(nil), available...)
	sort.Strings(sorted)
	var out diag.List
	seen := map[string]bool{}
	for _, e := range enabled {
		if have[e] || seen[e] {
			continue
		}
		seen[e] = true
		hint := "available plugins: " + strings.Join(sorted, ", ") +
			"; put a user plugin's executable at plugins/" + e + "/" + e + " beside cluster.yaml or in a --plugin-dir, or remove plugins." + e
		if len(sorted) == 0 {
			hint = "no plugins were found at all: check the kube-aws installation (bin/kube-aws-plugins/) and --plugin-dir"
		} else if s := diag.Closest(e, sorted, 2); s != "" {
			hint = fmt.Sprintf("did you mean %s? ", s) + hint
		}
		out = append(out, diag.Fatalf("plugin %s is enabled but no plugin source provides it", e).
			At(config.JoinPath("plugins", e)).WithHint(hint))
	}
	return out
}
