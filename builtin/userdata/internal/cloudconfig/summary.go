package cloudconfig

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/nodeplan"
)

// summary is what each plugin puts on a machine, as a digest per plugin
// (nodeplan.Summary): every construct aimed at it that its userdata is
// made of, by the plugin that contributed it.
func summary(c *config.Cluster, set *construct.Set, m machine) nodeplan.Summary {
	parts := map[string][]any{}
	add := func(plugin string, v any) {
		if plugin != "" {
			parts[plugin] = append(parts[plugin], v)
		}
	}
	for _, f := range set.Files {
		if m.matches(f.Target) {
			add(f.Plugin, f)
		}
	}
	for _, u := range set.Units {
		if !m.matches(u.Target) {
			continue
		}
		unit := u
		unit.DropIns = nil
		add(u.Plugin, unit)
		for _, d := range u.DropIns {
			add(d.Plugin, d)
		}
	}
	for _, f := range set.KubeletFlags {
		if m.matches(f.Target) {
			add(f.Plugin, f)
		}
	}
	for _, l := range set.NodeLabels {
		if m.matches(l.Target) {
			add(l.Plugin, l)
		}
	}
	for _, t := range set.NodeTaints {
		if m.matches(t.Target) {
			add(t.Plugin, t)
		}
	}
	for _, a := range set.Artifacts {
		if m.matches(a.Target) {
			add(a.Plugin, a)
		}
	}
	if m.Role == construct.Controller {
		for _, f := range set.APIServer.Flags {
			add(f.Plugin, f)
		}
		for _, mf := range set.Manifests {
			add(mf.Plugin, mf)
		}
	}
	s := nodeplan.Summary{KubernetesVersion: c.KubernetesVersion, Plugins: map[string]string{}}
	for p, vs := range parts {
		b, err := json.Marshal(vs)
		if err != nil {
			continue
		}
		sum := sha256.Sum256(b)
		s.Plugins[p] = hex.EncodeToString(sum[:])[:12]
	}
	return s
}
