package merge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	jsonpatch "github.com/evanphx/json-patch/v5"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/parallel"
)

type pendingPatch struct {
	plugin string
	index  int // in the plugin's own Patches, for the diagnostic's path
	patch  construct.Patch

	// Set by prepare: the merge patch decoded, the RFC 6902 operations,
	// and what the patch writes (both parts, in the order they apply).
	mergeObj map[string]any
	ops      jsonpatch.Patch
	opsFocus []string
	opWrites []write
	writes   []write
}

// prepare checks a patch's form and decodes it, or says what is wrong.
func (pp *pendingPatch) prepare() *diag.Diagnostic {
	p := pp.patch
	path := fmt.Sprintf("constructs.patches[%d]", pp.index)
	what := fmt.Sprintf("resource %q in stack %q", p.LogicalID, p.Stack)
	if isBlank(p.Merge) && isBlank(p.Operations) {
		d := fatalDiag(pp.plugin, path, fmt.Sprintf("plugin %q patches %s with neither a merge patch nor operations", pp.plugin, what),
			"a patch has a JSON merge patch (merge), RFC 6902 operations (operations), or both")
		return &d
	}
	if !isBlank(p.Merge) {
		// A merge patch that is not an object would replace the whole
		// resource, which is defining it, not patching it.
		if !isJSONObject(p.Merge) {
			d := notObjectPatch(*pp)
			return &d
		}
		doc, err := decodeJSON(p.Merge)
		if err != nil {
			d := fatalDiag(pp.plugin, path, fmt.Sprintf("plugin %q patches %s with invalid JSON: %v", pp.plugin, what, err), "fix the patch's JSON")
			return &d
		}
		pp.mergeObj = doc.(map[string]any)
		pp.writes = mergeWrites(pp.mergeObj, nil, nil)
	}
	if !isBlank(p.Operations) {
		ops, writes, focus, err := decodeOperations(p.Operations)
		if err != nil {
			d := fatalDiag(pp.plugin, path, fmt.Sprintf("plugin %q patches %s: %v", pp.plugin, what, err),
				`operations are an RFC 6902 array such as [{"op": "add", "path": "/Properties/Tags/-", "value": {"Key": "team", "Value": "a"}}]`)
			return &d
		}
		pp.ops, pp.opWrites, pp.opsFocus = ops, writes, focus
		pp.writes = append(pp.writes, writes...)
	}
	return nil
}

// clashes reports, for each pair of patches from two plugins to one
// resource whose writes overlap (clash), a fatal naming both plugins, the
// stack, the resource and the path, blamed on the later plugin, whose patch
// is then not applied. Two plugins setting a path to the same value, or both
// appending to a list, do not clash: plugin order then decides nothing but
// the order of the list.
func (m *merger) clashes(refused []bool, outcomes []diag.List) {
	byKey := map[[2]string][]int{}
	for i, pp := range m.patches {
		if !refused[i] {
			k := [2]string{pp.patch.Stack, pp.patch.LogicalID}
			byKey[k] = append(byKey[k], i)
		}
	}
	for _, idx := range byKey {
		for a := 0; a < len(idx); a++ {
			for b := a + 1; b < len(idx); b++ {
				x, y := &m.patches[idx[a]], &m.patches[idx[b]]
				if x.plugin == y.plugin || refused[idx[a]] || refused[idx[b]] {
					continue
				}
				wx, wy, ok := firstClash(x.writes, y.writes)
				if !ok {
					continue
				}
				// m.patches is in plugin order: y is the later plugin's.
				path := fmt.Sprintf("constructs.patches[%d]", y.index)
				if field, key, keyed := sameKey(wx, wy); keyed {
					outcomes[idx[b]] = append(outcomes[idx[b]], fatalDiag(y.plugin, path,
						fmt.Sprintf("plugins %q and %q both append an item with %s %s to %s of resource %q in stack %q, with different values: %q appends %s (%s), %q appends %s (%s); CloudFormation refuses a list with two items of one %s, and plugin order must not pick one",
							x.plugin, y.plugin, field, showValue(key), wx.pointer(), y.patch.LogicalID, y.patch.Stack, x.plugin, showValue(wx.value), wx.op, y.plugin, showValue(wy.value), wy.op, field),
						fmt.Sprintf("make both plugins append the same item (through their values in cluster.yaml), or use items of different %ss", field)).
						ConflictWith(x.plugin))
					refused[idx[b]] = true
					continue
				}
				where := wx.pointer()
				if wy.pointer() != where {
					where += " and " + wy.pointer()
				}
				outcomes[idx[b]] = append(outcomes[idx[b]], fatalDiag(y.plugin, path,
					fmt.Sprintf("plugins %q and %q both patch %s of resource %q in stack %q, so plugin order would decide the result: %q %s (%s), %q %s (%s)",
						x.plugin, y.plugin, where, y.patch.LogicalID, y.patch.Stack, x.plugin, wx.describe(), wx.op, y.plugin, wy.describe(), wy.op),
					"patch paths that do not overlap, or set the same value; to add to a list another plugin makes, append with an RFC 6902 operation {\"op\": \"add\", \"path\": \".../-\"} instead of replacing the list").
					ConflictWith(x.plugin))
				refused[idx[b]] = true
			}
		}
	}
}

// parallelPatches is the number of patches from which applying them is
// spread over the CPUs. Patches to different resources are independent, and
// MergePatch is the most expensive step of a merge.
const parallelPatches = 64

// applyPatches applies every patch, in plugin order, to the merged resources.
// A patch that is refused is not applied, and the rest still are, so every
// bad patch is reported in one run.
func (m *merger) applyPatches() {
	if len(m.patches) == 0 {
		return
	}
	protected := map[[2]string][]protectedAcc{}
	for _, p := range m.protected {
		k := [2]string{p.p.Stack, p.p.LogicalID}
		protected[k] = append(protected[k], p)
	}
	// Patches to one resource apply in order, one after another; resources
	// are patched independently, possibly in parallel. The merged stacks are
	// only read while patching and written once every group is done, and
	// diagnostics are reported in patch order, so the result does not
	// depend on scheduling.
	type group struct {
		key     [2]string
		patches []int
		body    json.RawMessage
		exists  bool
		// appended names the plugin whose patch put each item of a keyed
		// list there (provenanceKey).
		appended map[string]string
	}
	var groups []*group
	byKey := map[[2]string]*group{}
	outcomes := make([]diag.List, len(m.patches))
	refused := make([]bool, len(m.patches))
	for i := range m.patches {
		if d := m.patches[i].prepare(); d != nil {
			outcomes[i], refused[i] = diag.List{*d}, true
		}
	}
	m.clashes(refused, outcomes)
	for i, pp := range m.patches {
		if refused[i] {
			continue
		}
		k := [2]string{pp.patch.Stack, pp.patch.LogicalID}
		g := byKey[k]
		if g == nil {
			g = &group{key: k}
			if st := m.stackByName[k[0]]; st != nil {
				g.body, g.exists = st.s.Resources[k[1]]
			}
			byKey[k] = g
		}
		// A resource of a late stack that no plugin contributed is made in
		// render: the merged set carries the patch to the plugin that
		// renders the stack, which applies it with Late.
		if !g.exists && m.late[k[0]] != "" {
			p := pp.patch
			p.Merge, p.Operations = cloneRaw(p.Merge), cloneRaw(p.Operations)
			p.Plugin = pp.plugin
			m.deferred = append(m.deferred, p)
			continue
		}
		if len(g.patches) == 0 {
			groups = append(groups, g)
		}
		g.patches = append(g.patches, i)
	}
	run := func(g *group) {
		g.appended = map[string]string{}
		for _, i := range g.patches {
			body, diags, added := m.patchOne(m.patches[i], g.body, g.exists, protected[g.key], g.appended)
			outcomes[i] = diags
			if len(diags) == 0 {
				g.body = body
				for _, k := range added {
					g.appended[k] = m.patches[i].plugin
				}
			}
		}
	}
	if len(m.patches) < parallelPatches {
		for _, g := range groups {
			run(g)
		}
	} else {
		parallel.For(len(groups), func(i int) { run(groups[i]) })
	}
	for _, g := range groups {
		if g.exists {
			m.stackByName[g.key[0]].s.Resources[g.key[1]] = g.body
		}
	}
	for _, d := range outcomes {
		m.diags = append(m.diags, d...)
	}
}

// patchOne checks one patch against the resource body it targets and returns
// the patched body, or the reasons it was refused, and the items of keyed
// lists it added (provenanceKey; appended holds those of the patches before
// it). It only reads the merger, so patches to different resources can run
// concurrently.
func (m *merger) patchOne(pp pendingPatch, body json.RawMessage, exists bool, protected []protectedAcc, appended map[string]string) (json.RawMessage, diag.List, []string) {
	p := pp.patch
	path := fmt.Sprintf("constructs.patches[%d]", pp.index)
	what := fmt.Sprintf("resource %q in stack %q", p.LogicalID, p.Stack)
	var out diag.List
	fatal := func(msg, hint string) (json.RawMessage, diag.List, []string) {
		out = append(out, fatalDiag(pp.plugin, path, msg, hint))
		return nil, out, nil
	}
	st := m.stackByName[p.Stack]
	if st == nil {
		msg := fmt.Sprintf("plugin %q patches %s, but no plugin defines stack %q", pp.plugin, what, p.Stack)
		msg += m.suggestStacks(p.Stack, p.LogicalID)
		return fatal(msg, "check the stack and logical ID in the patch; if the plugin that makes the resource is disabled, enable it or drop the patch")
	}
	if !exists {
		msg := fmt.Sprintf("plugin %q patches %s, but stack %q has no such resource", pp.plugin, what, p.Stack)
		if s := similar(p.LogicalID, sortedKeys(st.s.Resources), 5); len(s) > 0 {
			msg += fmt.Sprintf(" (similar logical IDs: %s)", strings.Join(s, ", "))
		}
		if in := m.stacksWithResource(p.LogicalID); len(in) > 0 {
			msg += fmt.Sprintf(" (a resource %q exists in stack %s)", p.LogicalID, strings.Join(in, ", "))
		}
		return fatal(msg, "check the logical ID in the patch; if the plugin that makes the resource is disabled, enable it or drop the patch")
	}
	patchObj := pp.mergeObj

	// A patch changes only what it names, so which protected paths and
	// whether Type can change is known from the patch alone; the resource is
	// only decoded when that is in question.
	type hit struct {
		prot   protectedAcc
		reason string
	}
	var hits []hit
	for _, pr := range protected {
		if patchObj != nil {
			if reason, ok := touches(patchObj, pr.tokens); ok {
				hits = append(hits, hit{pr, "the patch " + reason})
				continue
			}
		}
		for _, w := range pp.opWrites {
			if w.kind != wRead && near(w, pr.tokens) {
				hits = append(hits, hit{pr, "the patch's " + w.op + " " + w.describe()})
				break
			}
		}
	}
	_, typeTouched := patchObj["Type"]
	for _, w := range pp.opWrites {
		typeTouched = typeTouched || writesType(w)
	}

	patched := []byte(body)
	if patchObj != nil {
		var err error
		if patched, err = focusMergePatch(body, patchObj, p.Merge); err != nil {
			return fatal(fmt.Sprintf("plugin %q could not patch %s: %v", pp.plugin, what, err), "fix the patch's JSON")
		}
	}
	var added []string
	var keyed diag.List
	if pp.ops != nil {
		var err error
		if patched, err = applyOperations(patched, &pp); err != nil {
			return fatal(fmt.Sprintf("plugin %q could not apply its operations to %s: %v", pp.plugin, what, err),
				fmt.Sprintf("check each operation's path against the resource in rendered/stacks/%s.json (kube-aws render without the patch shows it); \"add\" to \".../-\" needs the list to exist", p.Stack))
		}
		// Checked once the operations applied, so that it sees the list
		// as they left it; reported after the protected paths.
		patched, keyed, added = keyedAppends(pp, patched, appended, st.owner[ownerKey{secResources, p.LogicalID}])
	}
	// MergePatch adds the new keys of one object in map order, and
	// json-patch re-encodes what it touched; sort keys so the same input
	// always gives the same bytes.
	if addsSeveralKeys(patchObj) {
		var err error
		if patched, err = canonicalObject(patched); err != nil {
			return fatal(fmt.Sprintf("plugin %q could not patch %s: %v", pp.plugin, what, err), "fix the patch's JSON")
		}
	}
	if len(hits) == 0 && !typeTouched {
		if len(keyed) > 0 {
			return nil, keyed, nil
		}
		return patched, nil, added
	}
	before, errB := decodeJSON(body)
	after, errA := decodeJSON(patched)
	if errB != nil || errA != nil {
		return fatal(fmt.Sprintf("plugin %q could not patch %s: the result is not valid JSON", pp.plugin, what), "fix the patch's JSON")
	}
	if typeTouched {
		bt, bok := resolve(before, []string{"Type"})
		at, aok := resolve(after, []string{"Type"})
		if !bok {
			bt = absent
		}
		if !aok {
			at = absent
		}
		if bok != aok || !valueEqual(bt, at) {
			out = append(out, fatalDiag(pp.plugin, path,
				fmt.Sprintf("plugin %q may not change the Type of %s from %s to %s",
					pp.plugin, what, showValue(bt), showValue(at)),
				"a patch changes a resource's properties; to make a different kind of resource, define a new one with its own logical ID"))
		}
	}
	for _, h := range hits {
		bv, bok := resolve(before, h.prot.tokens)
		av, aok := resolve(after, h.prot.tokens)
		if bok == aok && (!bok || valueEqual(bv, av)) {
			continue // the patch names the path but leaves it as it was
		}
		ptr := h.prot.p.Pointer
		if ptr == "" {
			ptr = "(the whole resource)"
		}
		msg := fmt.Sprintf("plugin %q may not change protected path %s of %s: %s (protected by plugin %q",
			pp.plugin, ptr, what, h.reason, h.prot.owner)
		if h.prot.p.Reason != "" {
			msg += ": " + h.prot.p.Reason
		}
		msg += ")"
		out = append(out, fatalDiag(pp.plugin, path, msg,
			"remove that part of the patch; contribute what is needed through its own construct (units, files, flags) instead of patching a protected value"))
	}
	if out = append(out, keyed...); len(out) > 0 {
		return nil, out, nil
	}
	return patched, nil, added
}

// applyOptions are json-patch's defaults, except that HTML characters stay
// as they are (a userdata script keeps its && and <).
func applyOptions() *jsonpatch.ApplyOptions {
	o := jsonpatch.NewApplyOptions()
	o.EscapeHTML = false
	return o
}

// addsSeveralKeys reports whether some object the patch merges into has two
// or more keys in the patch, the only case where MergePatch's output order
// depends on map iteration.
func addsSeveralKeys(patch map[string]any) bool {
	if len(patch) > 1 {
		return true
	}
	for _, v := range patch {
		if o, ok := v.(map[string]any); ok && addsSeveralKeys(o) {
			return true
		}
	}
	return false
}

// canonicalObject re-encodes a JSON text with sorted keys, numbers as
// written and no HTML escaping (a userdata script keeps its && and <).
func canonicalObject(b []byte) (json.RawMessage, error) {
	v, err := decodeJSON(b)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func notObjectPatch(pp pendingPatch) diag.Diagnostic {
	return fatalDiag(pp.plugin, fmt.Sprintf("constructs.patches[%d]", pp.index),
		fmt.Sprintf("plugin %q patches resource %q in stack %q with something that is not a JSON object: %s",
			pp.plugin, pp.patch.LogicalID, pp.patch.Stack, truncate(string(pp.patch.Merge), maxShown)),
		`a patch is a JSON merge patch (RFC 7386) object, e.g. {"Properties": {"Tags": [...]}}`)
}

// touches reports whether a merge patch names anything at, under or above the
// pointer tokens, and says how.
func touches(patch map[string]any, tokens []string) (string, bool) {
	if len(tokens) == 0 {
		if len(patch) == 0 {
			return "", false
		}
		return "changes " + firstLeaf(patch, ""), true
	}
	cur := patch
	for i, t := range tokens {
		v, ok := cur[t]
		if !ok {
			return "", false
		}
		here := joinPointer(tokens[:i+1])
		last := i == len(tokens)-1
		obj, isObj := v.(map[string]any)
		switch {
		case v == nil && last:
			return "removes it", true
		case v == nil:
			return "removes " + here + ", which contains it", true
		case last && isObj:
			if len(obj) == 0 {
				// {} still turns a non-object value into an object.
				return "sets it to {}", true
			}
			return "changes " + firstLeaf(obj, here) + " under it", true
		case last:
			return "sets it to " + showValue(v), true
		case !isObj:
			return "replaces " + here + ", which contains it, with " + showValue(v), true
		}
		cur = obj
	}
	return "", false
}

// firstLeaf is the first path, in key order, that a patch object sets.
func firstLeaf(obj map[string]any, prefix string) string {
	keys := sortedKeys(obj)
	if len(keys) == 0 {
		return prefix
	}
	k := keys[0]
	p := prefix + "/" + escapePointerToken(k)
	if sub, ok := obj[k].(map[string]any); ok && len(sub) > 0 {
		return firstLeaf(sub, p)
	}
	return p
}

// suggestStacks names stacks whose name is close to a missing one, and
// stacks that do have the logical ID.
func (m *merger) suggestStacks(stack, logicalID string) string {
	names := make([]string, 0, len(m.stacks))
	for _, s := range m.stacks {
		names = append(names, s.s.Name)
	}
	sort.Strings(names)
	var out string
	if s := similar(stack, names, 5); len(s) > 0 {
		out += fmt.Sprintf(" (similar stacks: %s)", strings.Join(s, ", "))
	}
	if in := m.stacksWithResource(logicalID); len(in) > 0 {
		out += fmt.Sprintf(" (a resource %q exists in stack %s)", logicalID, strings.Join(in, ", "))
	}
	return out
}

// stacksWithResource lists (up to five) stacks that define a logical ID.
func (m *merger) stacksWithResource(logicalID string) []string {
	var in []string
	for _, s := range m.stacks {
		if _, ok := s.s.Resources[logicalID]; ok {
			in = append(in, s.s.Name)
		}
	}
	sort.Strings(in)
	if len(in) > 5 {
		in = append(in[:5], "...")
	}
	return in
}

// similar returns up to max candidates close to name: within a small edit
// distance, or containing it (case-insensitively), closest first.
func similar(name string, candidates []string, max int) []string {
	type scored struct {
		s string
		d int
	}
	ln := strings.ToLower(name)
	limit := len(name) / 3
	if limit < 2 {
		limit = 2
	}
	var found []scored
	for _, c := range candidates {
		if c == name {
			continue
		}
		lc := strings.ToLower(c)
		d := diag.EditDistance(ln, lc, limit)
		if d <= limit || (ln != "" && (strings.Contains(lc, ln) || strings.Contains(ln, lc))) {
			found = append(found, scored{c, d})
		}
	}
	sort.Slice(found, func(i, j int) bool {
		if found[i].d != found[j].d {
			return found[i].d < found[j].d
		}
		return found[i].s < found[j].s
	})
	var out []string
	for i := 0; i < len(found) && i < max; i++ {
		out = append(out, found[i].s)
	}
	return out
}
