package merge

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/kube-aws/kube-aws/core/construct"
)

type podRoleAcc struct {
	r     construct.PodRole
	owner string
	key   string
}

// podRoleName is what a pod role's name may be: it becomes part of an IAM
// role name (names.PodRoleName) and of an annotation's value.
var podRoleName = regexp.MustCompile(construct.PodRoleNamePattern)

// serviceAccountRef is namespace/name, or namespace/* for every service
// account of the namespace (DNS labels and subdomains, as Kubernetes has
// them).
var serviceAccountRef = regexp.MustCompile(construct.ServiceAccountPattern)

// addPodRole keeps one definition per role name: two plugins that need the
// same role must define it identically, since a role's trust and
// permissions are one thing in IAM.
func (m *merger) addPodRole(plugin string, in construct.PodRole) {
	path := fmt.Sprintf("constructs.podRoles[%s]", in.Name)
	if !podRoleName.MatchString(in.Name) {
		m.fatal(plugin, path, fmt.Sprintf("plugin %q sends pod role %q: a pod role's name is 1-40 lower-case letters, digits and '-'", plugin, in.Name),
			"rename the role, e.g. cluster-autoscaler")
		return
	}
	if len(in.ServiceAccounts) == 0 {
		m.fatal(plugin, path, fmt.Sprintf("plugin %q sends pod role %q with no service accounts: no pod could assume it", plugin, in.Name),
			`list the service accounts that may assume it, as "namespace/name"`)
		return
	}
	for _, sa := range in.ServiceAccounts {
		if !serviceAccountRef.MatchString(sa) {
			m.fatal(plugin, path, fmt.Sprintf("plugin %q sends pod role %q with service account %q, which is not namespace/name", plugin, in.Name, sa),
				`name each service account as "namespace/name" (or "namespace/*" for every one in the namespace), e.g. kube-system/cluster-autoscaler`)
			return
		}
	}
	if len(in.Statements) == 0 {
		m.fatal(plugin, path, fmt.Sprintf("plugin %q sends pod role %q with no statements", plugin, in.Name),
			"give the role the permissions its pods need")
		return
	}
	for i, st := range in.Statements {
		if !isBlank(st.Condition) && !isJSONObject(st.Condition) {
			m.fatal(plugin, path, fmt.Sprintf("plugin %q sends pod role %q whose statement %d has a condition that is not a JSON object: %s",
				plugin, in.Name, i, truncate(string(st.Condition), maxShown)),
				`an IAM condition is an object such as {"StringEquals": {"aws:RequestedRegion": "eu-west-1"}}`)
			return
		}
	}
	key := podRoleKey(in)
	if j, ok := m.podRoleBy[in.Name]; ok {
		prev := m.podRoles[j]
		if prev.key == key {
			return
		}
		m.conflict(plugin, prev.owner, path,
			fmt.Sprintf("pod role %s is defined differently by %s: %q lets %s assume it with %d statement(s), %q lets %s assume it with %d",
				in.Name, by(prev.owner, plugin), prev.owner, strings.Join(prev.r.ServiceAccounts, ","), len(prev.r.Statements),
				plugin, strings.Join(in.ServiceAccounts, ","), len(in.Statements)),
			resolveHint(prev.owner, plugin, "the role")+", or give each role its own name")
		return
	}
	r := in
	r.ServiceAccounts = cloneStrings(in.ServiceAccounts)
	r.Statements = make([]construct.IAMStatement, len(in.Statements))
	for i, st := range in.Statements {
		st.Target = construct.Target{}
		st.Plugin = plugin
		st.Actions = cloneStrings(st.Actions)
		st.Resources = cloneStrings(st.Resources)
		st.Condition = cloneRaw(st.Condition)
		r.Statements[i] = st
	}
	r.Plugin = plugin
	m.podRoleBy[in.Name] = len(m.podRoles)
	m.podRoles = append(m.podRoles, podRoleAcc{r: r, owner: plugin, key: key})
}

// podRoleKey is the canonical form of a role: who may assume it and what it
// may do, whatever the reason says.
func podRoleKey(r construct.PodRole) string {
	var b strings.Builder
	b.WriteString(strings.Join(r.ServiceAccounts, "\x01"))
	for _, st := range r.Statements {
		st.Target = construct.Target{}
		b.WriteByte(0)
		b.WriteString(iamKey(st))
	}
	return b.String()
}
