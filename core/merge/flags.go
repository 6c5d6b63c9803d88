package merge

import (
	"fmt"
	"strings"

	"github.com/kube-aws/kube-aws/core/construct"
)

// flagSet merges the flags of one component (API server or kubelet).
type flagSet struct {
	listValued map[string]bool
	targeted   bool // kubelet flags are per target; API server flags are not
	byKey      map[targetName]*flagAcc
	order      []*flagAcc
}

func newFlagSet(listValued map[string]bool, targeted bool, size int) flagSet {
	return flagSet{listValued: listValued, targeted: targeted, byKey: make(map[targetName]*flagAcc, size)}
}

type flagAcc struct {
	target construct.Target
	name   string
	list   bool

	// single-valued; owner is also the first plugin of a list-valued flag
	value, owner string

	// list-valued: items in first-seen order, and per item key who set which
	// item, so that feature-gates=A=true and A=false conflict.
	items  []string
	byItem map[string]listItem
}

type listItem struct {
	item, owner string
}

func (f *flagAcc) flag() construct.Flag {
	if f.list {
		return construct.Flag{Name: f.name, Value: strings.Join(f.items, ","), Plugin: f.owner}
	}
	return construct.Flag{Name: f.name, Value: f.value, Plugin: f.owner}
}

func (s *flagSet) flags() []construct.Flag {
	if len(s.order) == 0 {
		return nil
	}
	out := make([]construct.Flag, len(s.order))
	for i, f := range s.order {
		out[i] = f.flag()
	}
	return out
}

// normFlagName drops leading dashes: construct.Flag says names have none, and
// a plugin that writes "--foo" still means foo.
func normFlagName(n string) string { return strings.TrimLeft(n, "-") }

func (s *flagSet) path(t construct.Target, name string) string {
	if s.targeted {
		return fmt.Sprintf("constructs.kubeletFlags[%s:%s]", t, name)
	}
	return fmt.Sprintf("constructs.apiServer.flags[%s]", name)
}

func (s *flagSet) describe(t construct.Target, name string) string {
	if s.targeted {
		return fmt.Sprintf("kubelet flag --%s on %s", name, t)
	}
	return fmt.Sprintf("API server flag --%s", name)
}

func (m *merger) addFlag(s *flagSet, plugin string, t construct.Target, in construct.Flag) {
	name := normFlagName(in.Name)
	key := targetName{t, name}
	f := s.byKey[key]
	if f == nil {
		f = &flagAcc{target: t, name: name, list: s.listValued[name], owner: plugin}
		s.byKey[key] = f
		s.order = append(s.order, f)
		if !f.list {
			f.value = in.Value
			return
		}
	}
	if !f.list {
		if f.value == in.Value {
			return
		}
		m.conflict(plugin, f.owner, s.path(t, name),
			fmt.Sprintf("%s is single-valued and set differently by %s: %q sets %q, %q sets %q",
				s.describe(t, name), by(f.owner, plugin), f.owner, f.value, plugin, in.Value),
			resolveHint(f.owner, plugin, "the flag"))
		return
	}
	if f.byItem == nil {
		f.byItem = map[string]listItem{}
	}
	for _, item := range strings.Split(in.Value, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		k := listItemKey(name, item)
		prev, ok := f.byItem[k]
		if !ok {
			f.byItem[k] = listItem{item: item, owner: plugin}
			f.items = append(f.items, item)
			continue
		}
		if prev.item == item {
			continue
		}
		m.conflict(plugin, prev.owner, s.path(t, name),
			fmt.Sprintf("%s gets conflicting entries for %s from %s: %q sets %q, %q sets %q",
				s.describe(t, name), k, by(prev.owner, plugin), prev.owner, prev.item, plugin, item),
			resolveHint(prev.owner, plugin, "the entry for "+k))
	}
}

// listItemKey says which entries of a list-valued flag are about the same
// thing. For key=value lists (feature gates, runtime config, node labels) two
// values for one key would be decided by whichever comes last on the command
// line, which is plugin order; so they share a key and conflict instead.
func listItemKey(flag, item string) string {
	switch flag {
	case "feature-gates", "runtime-config", "node-labels":
		k, _, _ := strings.Cut(item, "=")
		return k
	case "register-with-taints":
		// key[=value]:Effect; one key may carry several effects.
		rest, effect, _ := strings.Cut(item, ":")
		k, _, _ := strings.Cut(rest, "=")
		return k + ":" + effect
	}
	return item
}

// checkAdmissionPlugins reports an admission plugin that one plugin enables
// and another disables: the API server refuses to start with both.
func (m *merger) checkAdmissionPlugins() {
	disable := m.apiFlags.byKey[targetName{name: "disable-admission-plugins"}]
	if disable == nil {
		return
	}
	for _, enableName := range []string{"enable-admission-plugins", "admission-plugins"} {
		enable := m.apiFlags.byKey[targetName{name: enableName}]
		if enable == nil {
			continue
		}
		for _, item := range enable.items {
			d, ok := disable.byItem[item]
			if !ok {
				continue
			}
			e := enable.byItem[item]
			m.conflictLater(d.owner, e.owner, m.apiFlags.path(construct.Target{}, "disable-admission-plugins"),
				fmt.Sprintf("admission plugin %s is enabled by plugin %q (--%s) and disabled by plugin %q (--disable-admission-plugins)",
					item, e.owner, enableName, d.owner),
				"an admission plugin is either enabled or disabled: remove it from one of the two plugins")
		}
	}
}
