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

	addLabel := func(kv, where, plugin string) {
		k, v, _ := strings.Cut(kv, "=")
		if k == "" || strings.ContainsAny(k+v, ", \t\n\"") {
			diags = append(diags, diag.Fatalf("node label %q on %s is not key=value", kv, m).At(where).About(plugin))
			return
		}
		if !kubeletMaySet(k) {
			diags = append(diags, diag.Fatalf("node label %s on %s is in a kubernetes.io or k8s.io namespace the kubelet may not set; the kubelet would refuse to start", k, m).At(where).
				WithHint("use a label under node.kubernetes.io/ or node-restriction.kubernetes.io/ (set by an admin, not the kubelet), or your own domain").About(plugin))
			return
		}
		labels[k] = v
	}
	addTaint := func(key, value, effect, where, plugin string) {
		if key == "" || strings.ContainsAny(key+value, ",=: \t\n\"") || !taintEffects[effect] {
			diags = append(diags, diag.Fatalf("node taint %s=%s:%s on %s: want key[=value]:NoSchedule|PreferNoSchedule|NoExecute", key, value, effect, m).At(where).About(plugin))
			return
		}
		taints[taintKey{key, effect}] = value
	}

	for _, specific := range []bool{false, true} {
		for _, f := range set.KubeletFlags {
			if !m.matches(f.Target) || (f.Target.NodePool != "") != specific {
				continue
			}
			where := fmt.Sprintf("constructs.kubeletFlags[%s:%s]", f.Target, f.Name)
			name := strings.TrimLeft(f.Name, "-")
			switch {
			case name == "node-labels":
				for _, kv := range splitList(f.Value) {
					addLabel(kv, where, f.Plugin)
				}
			case name == "register-with-taints":
				for _, t := range splitList(f.Value) {
					kv, effect, _ := strings.Cut(t, ":")
					k, v, _ := strings.Cut(kv, "=")
					addTaint(k, v, effect, where, f.Plugin)
				}
			case construct.ListValuedKubeletFlags[name]:
				values[name] = strings.Join(orderedUnion(splitList(values[name]), splitList(f.Value)), ",")
			default:
				values[name] = f.Value
			}
		}
		for _, l := range set.NodeLabels {
			if m.matches(l.Target) && (l.Target.NodePool != "") == specific {
				addLabel(l.Key+"="+l.Value, fmt.Sprintf("constructs.nodeLabels[%s:%s]", l.Target, l.Key), l.Plugin)
			}
		}
		for _, t := range set.NodeTaints {
			if m.matches(t.Target) && (t.Target.NodePool != "") == specific {
				addTaint(t.Key, t.Value, t.Effect, fmt.Sprintf("constructs.nodeTaints[%s:%s:%s]", t.Target, t.Key, t.Effect), t.Plugin)
			}
		}
	}
	if m.Pool != nil {
		for _, k := range sortedKeys(m.Pool.Labels) {
			addLabel(k+"="+m.Pool.Labels[k], fmt.Sprintf("nodePools[%d].labels.%s", m.PoolIndex, k), "")
		}
		for i, t := range m.Pool.Taints {
			addTaint(t.Key, t.Value, t.Effect, fmt.Sprintf("nodePools[%d].taints[%d]", m.PoolIndex, i), "")
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
	return envEscaper.Replace(s)
}

// envEscaper is built once: a Replacer builds its tables on first use, and
// escapeEnv runs for every flag of every machine.
var envEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "$", `\$`)

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// orderedUnion merges list items as an ordered set. Items of the form
// key=value (feature gates) are keyed by key: a later, more specific
// A=false replaces A=true in place rather than leaving both for the kubelet
// to pick from.
func orderedUnion(a, b []string) []string {
	index := map[string]int{}
	var out []string
	for _, s := range append(append([]string(nil), a...), b...) {
		key, _, _ := strings.Cut(s, "=")
		if i, ok := index[key]; ok {
			out[i] = s
			continue
		}
		index[key] = len(out)
		out = append(out, s)
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

// kubeletLabels are the kubernetes.io and k8s.io labels the kubelet may set
// on its own node (k8s.io/kubernetes/pkg/kubelet/apis: KubeletLabels and
// KubeletLabelNamespaces); it exits at start with any other label in those
// namespaces in --node-labels.
var kubeletLabels = map[string]bool{
	"kubernetes.io/hostname": true, "kubernetes.io/arch": true, "kubernetes.io/os": true,
	"topology.kubernetes.io/zone": true, "topology.kubernetes.io/region": true,
	"failure-domain.beta.kubernetes.io/zone": true, "failure-domain.beta.kubernetes.io/region": true,
	"beta.kubernetes.io/instance-type": true, "node.kubernetes.io/instance-type": true,
	"beta.kubernetes.io/arch": true, "beta.kubernetes.io/os": true,
}

func kubeletMaySet(key string) bool {
	prefix, _, ok := strings.Cut(key, "/")
	if !ok {
		return true
	}
	restricted := prefix == "kubernetes.io" || strings.HasSuffix(prefix, ".kubernetes.io") ||
		prefix == "k8s.io" || strings.HasSuffix(prefix, ".k8s.io")
	if !restricted || kubeletLabels[key] {
		return true
	}
	for _, ns := range []string{"kubelet.kubernetes.io", "node.kubernetes.io"} {
		if prefix == ns || strings.HasSuffix(prefix, "."+ns) {
			return true
		}
	}
	return false
}
