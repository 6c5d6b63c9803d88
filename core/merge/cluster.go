package merge

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kube-aws/kube-aws/core/construct"
)

type iamAcc struct {
	s     construct.IAMStatement
	owner string
	key   string
}

// iamKey is the canonical form of a statement: two statements with the same
// key are exact duplicates (the condition compared as JSON, not as text).
func iamKey(s construct.IAMStatement) string {
	var b strings.Builder
	for _, part := range []string{string(s.Target.Role), s.Target.NodePool, s.Sid, s.Effect} {
		b.WriteString(part)
		b.WriteByte(0)
	}
	b.WriteString(strings.Join(s.Actions, "\x01"))
	b.WriteByte(0)
	b.WriteString(strings.Join(s.Resources, "\x01"))
	b.WriteByte(0)
	if !isBlank(s.Condition) {
		b.WriteString(canonicalRaw(s.Condition))
	}
	return b.String()
}

func (m *merger) addIAM(plugin string, i int, in construct.IAMStatement) {
	path := fmt.Sprintf("constructs.iam[%s:%s]", in.Target, in.Sid)
	if in.Sid == "" {
		path = fmt.Sprintf("constructs.iam[%s]", in.Target)
	}
	if !isBlank(in.Condition) && !isJSONObject(in.Condition) {
		m.fatal(plugin, path,
			fmt.Sprintf("plugin %q sends IAM statement %d for %s with a condition that is not a JSON object: %s",
				plugin, i, in.Target, truncate(string(in.Condition), maxShown)),
			`an IAM condition is an object such as {"StringEquals": {"aws:RequestedRegion": "eu-west-1"}}`)
		return
	}
	key := iamKey(in)
	if m.iamSeen[key] {
		return // exact duplicate: two plugins need the same permission
	}
	if in.Sid != "" {
		sk := targetName{in.Target, in.Sid}
		if j, ok := m.iamBySid[sk]; ok {
			prev := m.iam[j]
			m.conflict(plugin, prev.owner, path,
				fmt.Sprintf("IAM statement %s for %s is defined differently by %s: %q sets %s, %q sets %s",
					in.Sid, in.Target, by(prev.owner, plugin), prev.owner, showIAM(prev.s), plugin, showIAM(in)),
				resolveHint(prev.owner, plugin, "the statement")+", or give each statement its own Sid")
			return
		}
		m.iamBySid[sk] = len(m.iam)
	}
	m.iamSeen[key] = true
	st := in
	st.Actions = cloneStrings(in.Actions)
	st.Resources = cloneStrings(in.Resources)
	st.Condition = cloneRaw(in.Condition)
	m.iam = append(m.iam, iamAcc{s: st, owner: plugin, key: key})
}

func showIAM(s construct.IAMStatement) string {
	out := fmt.Sprintf("%s %s on %s", s.Effect, strings.Join(s.Actions, ","), strings.Join(s.Resources, ","))
	if !isBlank(s.Condition) {
		out += " if " + string(s.Condition)
	}
	return truncate(out, maxShown)
}

type helmAcc struct {
	h     construct.HelmRelease
	owner string
}

func (m *merger) addHelm(plugin string, i int, in construct.HelmRelease) {
	path := fmt.Sprintf("constructs.helmReleases[%s/%s]", in.Namespace, in.Name)
	if !isBlank(in.Values) && !isJSONObject(in.Values) {
		m.fatal(plugin, path,
			fmt.Sprintf("plugin %q sends Helm release %s/%s with values that are not a JSON object: %s",
				plugin, in.Namespace, in.Name, truncate(string(in.Values), maxShown)),
			"a release's values are a JSON object, as in a values.yaml")
		return
	}
	key := [2]string{in.Namespace, in.Name}
	prev := m.helmByKey[key]
	if prev == nil {
		h := &helmAcc{h: in, owner: plugin}
		h.h.Values = cloneRaw(in.Values)
		// Whatever the plugin put there: kube-aws says who contributed the
		// release, so that the helm plugin can name the owner of a broken
		// chart. An identical release from a later plugin keeps the first
		// owner, and Plugin takes no part in the comparison below.
		h.h.Plugin = plugin
		m.helmByKey[key] = h
		m.helm = append(m.helm, h)
		return
	}
	var diffs []string
	if prev.h.Chart != in.Chart {
		show := func(c construct.Chart) string {
			if c.Path != "" {
				return "path " + c.Path
			}
			return fmt.Sprintf("%s/%s %s", c.Repository, c.Name, c.Version)
		}
		diffs = append(diffs, fmt.Sprintf("chart: %q uses %s, %q uses %s", prev.owner, show(prev.h.Chart), plugin, show(in.Chart)))
	}
	// No values and {} mean the same to Helm.
	pv, iv := valuesOrEmpty(prev.h.Values), valuesOrEmpty(in.Values)
	if !jsonEqual(pv, iv) {
		diffs = append(diffs, "values: "+describeJSONDiff(prev.owner, pv, plugin, iv))
	}
	if len(diffs) == 0 {
		return
	}
	m.conflict(plugin, prev.owner, path,
		fmt.Sprintf("Helm release %s in namespace %s is defined by %s: %s",
			in.Name, in.Namespace, by(prev.owner, plugin), strings.Join(diffs, "; ")),
		resolveHint(prev.owner, plugin, "the release")+", or install it under another name or namespace")
}

func valuesOrEmpty(v json.RawMessage) []byte {
	if isBlank(v) {
		return []byte("{}")
	}
	return v
}

type manifestAcc struct {
	m     construct.Manifest
	owner string
}

func (m *merger) addManifest(plugin string, in construct.Manifest) {
	prev := m.manifestBy[in.Name]
	if prev == nil {
		x := &manifestAcc{m: in, owner: plugin}
		m.manifestBy[in.Name] = x
		m.manifests = append(m.manifests, x)
		return
	}
	if prev.m.Content == in.Content {
		return
	}
	m.conflict(plugin, prev.owner, fmt.Sprintf("constructs.manifests[%s]", in.Name),
		fmt.Sprintf("Kubernetes manifest %s is defined differently by %s: %s",
			in.Name, by(prev.owner, plugin), describeTextDiff(prev.owner, prev.m.Content, plugin, in.Content)),
		resolveHint(prev.owner, plugin, "the manifest")+", or give each manifest its own name")
}

type protectedKey struct {
	stack, logicalID, pointer string
}

type protectedAcc struct {
	p      construct.Protected
	owner  string
	tokens []string
}

func (m *merger) addProtected(plugin string, i int, in construct.Protected) {
	tokens, err := parsePointer(in.Pointer)
	if err != nil {
		m.fatal(plugin, fmt.Sprintf("constructs.protected[%d]", i),
			fmt.Sprintf("plugin %q protects %q of resource %q in stack %q: %v", plugin, in.Pointer, in.LogicalID, in.Stack, err),
			"a protected path is a JSON pointer into the resource body, such as /Properties/LaunchTemplateData/UserData, or empty for the whole resource")
		return
	}
	key := protectedKey{in.Stack, in.LogicalID, in.Pointer}
	if m.protectedSeen[key] {
		return
	}
	m.protectedSeen[key] = true
	m.protected = append(m.protected, protectedAcc{p: in, owner: plugin, tokens: tokens})
}
