package merge

import (
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
)

// Late is how a plugin that renders a stack late (stage.PluginInfo.LateStacks)
// finishes it in render: built is the stack the plugin made (the iam
// plugin's roles, policies and instance profiles), renderer the plugin's
// name, set the merged constructs it received. Late folds in every other
// plugin's contribution to the stack (set.Stacks entries with Renderer set)
// and applies the patches the merge carried for it, with the same rules and
// the same diagnostics as the merge of initialise: a resource defined
// differently names both plugins, a patch to a missing resource or a
// protected path is refused. The diagnostics are the render stage's.
// built's bodies are used, not copied, and must be valid JSON (the
// template check refuses one that is not); its maps are not written.
func Late(built construct.Stack, renderer string, set *construct.Set) (construct.Stack, diag.List) {
	if set == nil {
		set = &construct.Set{}
	}
	m := newMerger(nil)
	m.pluginIndex[renderer] = 0
	// The caller's own bodies are taken as they are: it encoded them
	// itself, and cfn.Template checks every body of the finished stack
	// once more before it writes it. Checking and copying them here too
	// was a fifth of the iam plugin's render at 100 node pools (one role
	// and instance profile each). Other plugins' bodies are checked below
	// as in the merge of initialise: that is where a broken one is blamed
	// on its plugin.
	m.addStack(renderer, &built, ownBodies)
	for i := range set.Stacks {
		st := &set.Stacks[i]
		if st.Name != built.Name || st.Renderer == "" {
			continue
		}
		owner := ownerOr(st.Plugin, renderer)
		if _, seen := m.pluginIndex[owner]; !seen {
			m.pluginIndex[owner] = len(m.pluginIndex)
		}
		m.addStack(owner, st, checkBodies)
	}
	for i, p := range set.Protected {
		if p.Stack == built.Name {
			m.addProtected(ownerOr(p.Plugin, renderer), i, p)
		}
	}
	for i, p := range set.Patches {
		if p.Stack == built.Name {
			m.patches = append(m.patches, pendingPatch{plugin: ownerOr(p.Plugin, renderer), index: i, patch: p})
		}
	}
	m.applyPatches()
	out := m.stackByName[built.Name].s
	out.Plugin, out.Renderer = renderer, ""
	diags := m.diags
	for i := range diags {
		diags[i].Stage = string(stage.Render)
	}
	return out, diags
}

func ownerOr(plugin, fallback string) string {
	if plugin == "" {
		return fallback
	}
	return plugin
}
