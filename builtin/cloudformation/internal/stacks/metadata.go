package stacks

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kube-aws/kube-aws/builtin/internal/cfn"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
)

// metadataOptionsPointer is where a launch template says who may reach the
// instance metadata service; it is protected from patches, so that only
// podMetadata constructs open it.
const metadataOptionsPointer = "/Properties/LaunchTemplateData/MetadataOptions"

// machineTarget is the role and node pool of a machine stack.
type machineTarget struct {
	role construct.Role
	pool string
}

// machineStacks maps the name of each stack with a launch template of
// cluster.yaml's machines to their role and pool.
func machineStacks(c *config.Cluster) map[string]machineTarget {
	out := map[string]machineTarget{
		names.StackEtcd:         {role: construct.Etcd},
		names.StackControlPlane: {role: construct.Controller},
	}
	for _, p := range c.NodePools {
		out[names.NodePoolStack(p.Name)] = machineTarget{role: construct.Worker, pool: p.Name}
	}
	return out
}

// openMetadata raises the IMDSv2 token hop limit of the launch template of
// every machine stack that a podMetadata request covers to
// construct.PodMetadataHopLimit, in stacks (replacing the changed stacks'
// resource maps, never writing into the merged set's). A request for a
// role that does not exist, or a node pool cluster.yaml does not have, is
// fatal: it would open nothing, and its plugin would believe otherwise.
func openMetadata(c *config.Cluster, stacks map[string]construct.Stack, reqs []construct.PodMetadataAccess) diag.List {
	var diags diag.List
	pools := map[string]bool{}
	for _, p := range c.NodePools {
		pools[p.Name] = true
	}
	var valid []construct.PodMetadataAccess
	for _, r := range reqs {
		switch {
		case r.Target.Role != construct.Etcd && r.Target.Role != construct.Controller && r.Target.Role != construct.Worker:
			diags = append(diags, diag.Fatalf("plugin %s asks that pods reach the metadata service of role %q, which is none of %s",
				r.Plugin, r.Target.Role, roleList()).About(r.Plugin).WithHint("report it to the plugin's author"))
		case r.Target.NodePool != "" && (r.Target.Role != construct.Worker || !pools[r.Target.NodePool]):
			diags = append(diags, diag.Fatalf("plugin %s asks that pods reach the metadata service of %s, which is no node pool of cluster.yaml",
				r.Plugin, r.Target).About(r.Plugin).WithHint("name a pool from nodePools[].name in the plugin's values"))
		default:
			valid = append(valid, r)
		}
	}
	for name, m := range machineStacks(c) {
		st, ok := stacks[name]
		if !ok {
			continue
		}
		open := false
		for _, r := range valid {
			open = open || r.Target.Covers(m.role, m.pool)
		}
		lt, ok := st.Resources[names.LaunchTemplate]
		if !open || !ok {
			continue
		}
		body, err := withHopLimit(lt, construct.PodMetadataHopLimit)
		if err != nil {
			diags = append(diags, diag.Fatalf("stack %s: launch template: %v", name, err).About(st.Plugin))
			continue
		}
		res := make(map[string]json.RawMessage, len(st.Resources))
		for k, v := range st.Resources {
			res[k] = v
		}
		res[names.LaunchTemplate] = body
		st.Resources = res
		stacks[name] = st
	}
	return diags
}

// withHopLimit returns the launch template resource body with its token
// hop limit set to hops.
func withHopLimit(raw json.RawMessage, hops int) (json.RawMessage, error) {
	v, err := cfn.Decode(raw)
	if err != nil {
		return nil, err
	}
	opts := v
	for _, k := range strings.Split(strings.TrimPrefix(metadataOptionsPointer, "/"), "/") {
		m, ok := opts.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s is not an object", metadataOptionsPointer)
		}
		if m[k] == nil {
			m[k] = map[string]any{}
		}
		opts = m[k]
	}
	m, ok := opts.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is not an object", metadataOptionsPointer)
	}
	m["HttpPutResponseHopLimit"] = hops
	return json.Marshal(v)
}

func roleList() string {
	s := make([]string, len(construct.Roles))
	for i, r := range construct.Roles {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}
