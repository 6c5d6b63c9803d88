package cloudconfig

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
)

var taintEffects = map[string]bool{"NoSchedule": true, "PreferNoSchedule": true, "NoExecute": true}

// kubeletEnv builds /etc/kubernetes/kubelet.env for a machine. Constructs for
// every pool apply first, then those for this pool, then cluster.yaml's pool
// labels and taints: the more specific wins, as an operator expects of a
// per-pool setting. List-valued flags merge as ordered sets instead.
func kubeletEnv(set *construct.Set, m machine, staticPod bool) (string, diag.List) {
	var diags diag.List
	values := map[string]string{}
	labels := map[string]string{}
	type taintKey struct{ key, effect string }
	taints := map[taintKey]string{}

	addLabel := func(kv, where string) {
		k, v, _ := strings.Cut(kv, "=")
		if k == "" || strings.ContainsAny(k+v, ", \t\n\"") {
			diags = append(diags, diag.Fatalf("node label %q on %s is not key=value", kv, m).At(where))
			return
		}
		labels[k] = v
	}
	addTaint := func(key, value, effect, where string) {
		if key == "" || strings.ContainsAny(key+value, ",=: \t\n\"") || !taintEffects[effect] {
			diags = append(diags, diag.Fatalf("node taint %s=%s:%s on %s: want key[=value]:NoSchedule|PreferNoSchedule|NoExecute", key, value, effect, m).At(where))
			return
		}
		taints[taintKey{key, effect}] = value
	}

	for _, specific := range []bool{false, true} {
		for i, f := range set.KubeletFlags {
			if !m.matches(f.Target) || (f.Target.NodePool != "") != specific {
				continue
			}
			where := fmt.Sprintf("constructs.kubeletFlags[%d]", i)
			name := strings.TrimLeft(f.Name, "-")
			switch {
			case name == "node-labels":
				for _, kv := range splitList(f.Value) {
					addLabel(kv, where)
				}
			case name == "register-with-taints":
				for _, t := range splitList(f.Value) {
					kv, effect, _ := strings.Cut(t, ":")
					k, v, _ := strings.Cut(kv, "=")
					addTaint(k, v, effect, where)
				}
			case construct.ListValuedKubeletFlags[name]:
				values[name] = strings.Join(orderedUnion(splitList(values[name]), splitList(f.Value)), ",")
			default:
				values[name] = f.Value
			}
		}
		for i, l := range set.NodeLabels {
			if m.matches(l.Target) && (l.Target.NodePool != "") == specific {
				addLabel(l.Key+"="+l.Value, fmt.Sprintf("constructs.nodeLabels[%d]", i))
			}
		}
		for i, t := range set.NodeTaints {
			if m.matches(t.Target) && (t.Target.NodePool != "") == specific {
				addTaint(t.Key, t.Value, t.Effect, fmt.Sprintf("constructs.nodeTaints[%d]", i))
			}
		}
	}
	if m.Pool != nil {
		for _, k := range sortedKeys(m.Pool.Labels) {
			addLabel(k+"="+m.Pool.Labels[k], fmt.Sprintf("nodePools[%d].labels.%s", m.PoolIndex, k))
		}
		for i, t := range m.Pool.Taints {
			addTaint(t.Key, t.Value, t.Effect, fmt.Sprintf("nodePools[%d].taints[%d]", m.PoolIndex, i))
		}
	}
	if m.Role == construct.Controller && staticPod {
		// The API server runs as a static pod: the kubelet must read it.
		if _, ok := values["pod-manifest-path"]; !ok {
			values["pod-manifest-path"] = ManifestDir
		}
	}

	if len(labels) > 0 {
		keys := sortedKeys(labels)
		items := make([]string, len(keys))
		for i, k := range keys {
			items[i] = k + "=" + labels[k]
		}
		values["node-labels"] = strings.Join(items, ",")
	}
	if len(taints) > 0 {
		items := make([]string, 0, len(taints))
		for t, v := range taints {
			s := t.key
			if v != "" {
				s += "=" + v
			}
			items = append(items, s+":"+t.effect)
		}
		sort.Strings(items)
		values["register-with-taints"] = strings.Join(items, ",")
	}

	args := make([]string, 0, len(values))
	for _, name := range sortedKeys(values) {
		v := values[name]
		if strings.ContainsAny(v, " \t\n") {
			// systemd splits $KUBELET_ARGS on whitespace: the flag would break.
			diags = append(diags, diag.Fatalf("kubelet flag --%s on %s has whitespace in its value %q", name, m, v).
				WithHint("kubelet flags are passed through KUBELET_ARGS; use a kubelet config file for such values"))
			continue
		}
		args = append(args, "--"+name+"="+v)
	}
	var b strings.Builder
	b.WriteString("# The kubelet's flags, written by kube-aws (userdata plugin) from every plugin's constructs.\n")
	b.WriteString(`KUBELET_ARGS="`)
	b.WriteString(escapeEnv(strings.Join(args, " ")))
	b.WriteString("\"\n")
	return b.String(), diags
}

// escapeEnv escapes a value for a double-quoted systemd EnvironmentFile value.
func escapeEnv(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`).Replace(s)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func orderedUnion(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range append(append([]string(nil), a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
