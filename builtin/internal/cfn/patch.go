package cfn

import (
	"strings"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
)

// ApplyPatches applies, in order, every patch aimed at one of stacks (by
// name) to the resource it names, as a JSON merge patch (RFC 7386). A patch
// that would change a protected path, or names a resource that does not
// exist, is fatal. Patches for stacks not in the map are left alone: another
// plugin renders those.
//
// core/merge may already have applied the patches to the merged set; a JSON
// merge patch is idempotent, so applying it again here changes nothing, and
// doing it here means the rendered template is right whatever the merge did.
func ApplyPatches(stacks map[string]*construct.Stack, patches []construct.Patch, protected []construct.Protected) diag.List {
	var diags diag.List
	for i, p := range patches {
		s, ok := stacks[p.Stack]
		if !ok {
			continue
		}
		raw, ok := s.Resources[p.LogicalID]
		if !ok {
			diags = append(diags, diag.Fatalf("patch %d: stack %s has no resource %s", i, p.Stack, p.LogicalID))
			continue
		}
		patch, err := Decode(p.Merge)
		if err != nil {
			diags = append(diags, diag.Fatalf("patch %d to %s/%s: invalid JSON: %v", i, p.Stack, p.LogicalID, err))
			continue
		}
		blocked := false
		for _, pr := range protected {
			if pr.Stack == p.Stack && pr.LogicalID == p.LogicalID && touches(patch, pr.Pointer) {
				d := diag.Fatalf("patch %d changes %s of %s/%s, which is protected", i, pr.Pointer, p.Stack, p.LogicalID)
				if pr.Reason != "" {
					d = d.WithHint(pr.Reason)
				}
				diags = append(diags, d)
				blocked = true
			}
		}
		if blocked {
			continue
		}
		doc, err := Decode(raw)
		if err != nil {
			diags = append(diags, diag.Fatalf("stack %s resource %s: invalid JSON: %v", p.Stack, p.LogicalID, err))
			continue
		}
		merged, err := Marshal(MergePatch(doc, patch), false)
		if err != nil {
			diags = append(diags, diag.Fatalf("patch %d to %s/%s: %v", i, p.Stack, p.LogicalID, err))
			continue
		}
		s.Resources[p.LogicalID] = merged
	}
	return diags
}

// MergePatch applies an RFC 7386 JSON merge patch to doc and returns the result.
func MergePatch(doc, patch any) any {
	pm, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	dm, ok := doc.(map[string]any)
	if !ok {
		dm = map[string]any{}
	}
	for k, v := range pm {
		if v == nil {
			delete(dm, k)
			continue
		}
		dm[k] = MergePatch(dm[k], v)
	}
	return dm
}

// touches reports whether a merge patch changes anything at or below the
// JSON pointer, or replaces one of its ancestors.
func touches(patch any, pointer string) bool {
	if pointer == "" || pointer == "/" {
		return true
	}
	cur := patch
	for _, seg := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		m, ok := cur.(map[string]any)
		if !ok {
			// A non-object patch value replaces the whole subtree.
			return true
		}
		next, present := m[seg]
		if !present {
			return false
		}
		cur = next
	}
	return true
}
