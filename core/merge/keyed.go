package merge

import (
	"bytes"
	"fmt"

	"github.com/kube-aws/kube-aws/core/diag"
)

// KeyedList is a list property of CloudFormation resources whose items are
// identified by one of their fields: two items with one key make a resource
// that CloudFormation (or the service behind it) refuses, such as two tags
// with one Key. The merge treats an RFC 6902 append to such a list as
// setting the item of that key: the same item appended twice is kept once,
// and two different items for one key are a conflict naming both plugins,
// whatever their order.
type KeyedList struct {
	// Property is the list's name, the last token of its path
	// (/Properties/Tags, /Properties/LaunchTemplateData/TagSpecifications/0/Tags).
	Property string
	// Key is the field that identifies an item. An item without it (an IAM
	// statement without a Sid) is not identified, and merges as before.
	Key string
	// Where says where the built-in plugins render such a list, for the
	// plugin guide.
	Where string
}

// keyedLists are the keyed lists of the resources kube-aws renders, and
// the common ones of the resources plugins add. Security group rules are
// not keyed: two rules differ by any field.
var keyedLists = []KeyedList{
	{"Tags", "Key", "every taggable resource; a launch template's TagSpecifications[].Tags"},
	{"TagSpecifications", "ResourceType", "a launch template's LaunchTemplateData"},
	{"LoadBalancerAttributes", "Key", "the API load balancer (network load balancer)"},
	{"TargetGroupAttributes", "Key", "a target group"},
	{"BlockDeviceMappings", "DeviceName", "the etcd and controller launch templates"},
	{"Policies", "PolicyName", "each IAM role; a classic load balancer"},
	{"Statement", "Sid", "an IAM policy document (statements with a Sid)"},
	{"Listeners", "LoadBalancerPort", "the API load balancer (classic load balancer)"},
	{"LifecycleHookSpecificationList", "LifecycleHookName", "an auto scaling group"},
	{"VPCs", "VPCId", "the etcd members' private hosted zone"},
	{"Environment", "Name", "a container definition's environment variables"},
	{"EnvironmentVariables", "Name", "a build project's environment variables"},
	{"Parameters", "ParameterKey", "a stack set's parameters"},
}

// KeyedLists returns the lists the merge identifies items of, in the order
// the guide lists them.
func KeyedLists() []KeyedList { return append([]KeyedList(nil), keyedLists...) }

var keyFields = func() map[string]string {
	m := make(map[string]string, len(keyedLists))
	for _, k := range keyedLists {
		m[k.Property] = k.Key
	}
	return m
}()

// itemKey returns the field and value that identify item in the list at
// pointer tokens list, or false when the list is not keyed or the item
// has no such field.
func itemKey(list []string, item any) (field string, key any, ok bool) {
	field, ok = keyFields[lastToken(list)]
	if !ok {
		return "", nil, false
	}
	obj, isObj := item.(map[string]any)
	if !isObj {
		return "", nil, false
	}
	key, ok = obj[field]
	return field, key, ok
}

// sameKey reports whether two appends add items of one key to one list,
// and names the key's field.
func sameKey(a, b write) (string, any, bool) {
	if a.kind != wAppend || b.kind != wAppend || joinPointer(a.tokens) != joinPointer(b.tokens) {
		return "", nil, false
	}
	fa, ka, ok := itemKey(a.tokens, a.value)
	if !ok {
		return "", nil, false
	}
	fb, kb, ok := itemKey(b.tokens, b.value)
	if !ok || fa != fb || !valueEqual(ka, kb) {
		return "", nil, false
	}
	return fa, ka, true
}

// keyedAppend is one append of a patch to a keyed list.
type keyedAppend struct {
	w     write
	field string
	key   any
}

// provenanceKey identifies an item of a keyed list of one resource: the
// list's pointer and the item's key.
func provenanceKey(list []string, key any) string {
	return joinPointer(list) + "\x00" + canonical(key)
}

// keyedAppends checks what a patch appended to keyed lists, in the
// resource as patched: an item whose key the list already held (from the
// resource's maker, or an earlier patch) or that the patch appends twice
// is dropped when it is the same item, and is a conflict when it is not.
// appended says which plugin's patch put each keyed item there; maker is
// the plugin that made the resource. It returns the patched body without
// the duplicates (as it was, when there are conflicts), the conflicts, and
// the items to record as this patch's.
func keyedAppends(pp pendingPatch, patched []byte, appended map[string]string, maker string) ([]byte, diag.List, []string) {
	var lists []string
	byList := map[string][]keyedAppend{}
	for _, w := range pp.opWrites {
		if w.kind != wAppend {
			continue
		}
		if field, key, ok := itemKey(w.tokens, w.value); ok {
			l := joinPointer(w.tokens)
			if _, seen := byList[l]; !seen {
				lists = append(lists, l)
			}
			byList[l] = append(byList[l], keyedAppend{w, field, key})
		}
	}
	if len(lists) == 0 {
		return patched, nil, nil
	}
	p := pp.patch
	what := fmt.Sprintf("resource %q in stack %q", p.LogicalID, p.Stack)
	var diags diag.List
	var record []string
	for _, l := range lists {
		apps := byList[l]
		tokens := apps[0].w.tokens
		s, e, ok := valueAt(patched, tokens)
		if !ok || patched[s] != '[' {
			continue
		}
		v, err := decodeJSON(patched[s:e])
		if err != nil {
			continue
		}
		items := v.([]any)
		drop := map[int]bool{}
		done := map[string]bool{}
		for _, a := range apps {
			pk := provenanceKey(tokens, a.key)
			if done[pk] {
				continue
			}
			done[pk] = true
			var same []int
			for i, it := range items {
				if f, k, ok := itemKey(tokens, it); ok && f == a.field && valueEqual(k, a.key) {
					same = append(same, i)
				}
			}
			if _, ok := appended[pk]; !ok {
				record = append(record, pk)
			}
			if len(same) < 2 {
				continue
			}
			other := -1
			for _, i := range same {
				if !valueEqual(items[i], a.w.value) {
					other = i
					break
				}
			}
			if other < 0 {
				// The same item more than once: CloudFormation takes it once.
				for _, i := range same[1:] {
					drop[i] = true
				}
				continue
			}
			keyShown := showValue(a.key)
			refuses := fmt.Sprintf("CloudFormation refuses a list with two items of one %s, and plugin order must not pick one", a.field)
			owner, fromPatch := appended[pk]
			twice := fromPatch && owner == pp.plugin
			for _, b := range apps {
				if b.w.op != a.w.op && valueEqual(b.key, a.key) && !valueEqual(b.w.value, a.w.value) {
					twice = true
				}
			}
			if twice {
				diags = append(diags, fatalDiag(pp.plugin, fmt.Sprintf("constructs.patches[%d]", pp.index),
					fmt.Sprintf("plugin %q appends two items with %s %s to %s of %s: %s and %s; %s",
						pp.plugin, a.field, keyShown, l, what, showValue(items[same[0]]), showValue(items[other]), refuses),
					fmt.Sprintf("append one item per %s", a.field)))
				continue
			}
			if !fromPatch {
				owner = maker
			}
			from := fmt.Sprintf("from plugin %q", owner)
			if !fromPatch {
				from += ", which makes the resource"
			}
			diags = append(diags, fatalDiag(pp.plugin, fmt.Sprintf("constructs.patches[%d]", pp.index),
				fmt.Sprintf("plugin %q appends an item with %s %s to %s of %s, which already has one with that %s %s: %q appends %s (%s), the list has %s; %s",
					pp.plugin, a.field, keyShown, l, what, a.field, from, pp.plugin, showValue(a.w.value), a.w.op, showValue(items[other]), refuses),
				fmt.Sprintf("append the same item as plugin %q, or one with another %s; to change what plugin %q sets, change its values in cluster.yaml", owner, a.field, owner)).
				ConflictWith(owner))
		}
		if len(drop) > 0 && len(diags) == 0 {
			patched = withoutElements(patched, s, e, drop)
		}
	}
	if len(diags) > 0 {
		return patched, diags, nil
	}
	return patched, nil, record
}

// withoutElements returns doc with the elements at the indexes in drop
// removed from the array at doc[s:e]; the other elements keep their bytes.
func withoutElements(doc []byte, s, e int, drop map[int]bool) []byte {
	arr := doc[s:e]
	var kept [][]byte
	i := skipSpace(arr, 1)
	for n := 0; i < len(arr) && arr[i] != ']'; n++ {
		if arr[i] == ',' {
			i = skipSpace(arr, i+1)
		}
		ve := skipValue(arr, i)
		if !drop[n] {
			kept = append(kept, arr[i:ve])
		}
		i = skipSpace(arr, ve)
	}
	out := make([]byte, 0, len(doc))
	out = append(out, doc[:s]...)
	out = append(out, '[')
	out = append(out, bytes.Join(kept, []byte(","))...)
	out = append(out, ']')
	return append(out, doc[e:]...)
}
