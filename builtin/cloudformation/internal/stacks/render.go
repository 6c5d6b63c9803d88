package stacks

import (
	"sort"

	"github.com/kube-aws/kube-aws/builtin/internal/cfn"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/parallel"
	"github.com/kube-aws/kube-aws/core/stage"
)

// Values are the plugin's values in cluster.yaml (plugins.cloudformation.values).
type Values struct {
	// Tags are added to every stack this plugin renders, over the cluster's tags.
	Tags map[string]string `json:"tags,omitempty"`
	// APILoadBalancer is the kind of load balancer in front of the API
	// servers: network (the default) or classic. Both pass TCP 443 through
	// to the API servers. classic exists for AWS emulators whose network
	// load balancers cannot take TCP listeners (moto).
	APILoadBalancer string `json:"apiLoadBalancer,omitempty"`
}

// ValuesSchema is the JSON Schema of Values.
const ValuesSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "tags": {
      "description": "Tags added to every stack the cloudformation plugin renders (and so to their resources), over cluster.yaml's tags.",
      "type": "object",
      "additionalProperties": {"type": "string", "maxLength": 256},
      "propertyNames": {"maxLength": 128}
    },
    "apiLoadBalancer": {
      "description": "Load balancer in front of the API servers: network (default) or classic (TCP 443 passed through either way; classic suits emulators such as moto whose network load balancers take no TCP listener).",
      "enum": ["network", "classic"],
      "default": "network"
    }
  }
}`

// Render writes stacks/<name>.json for every Stack construct in the merged
// set that no plugin renders late (construct.Stack.Renderer: the iam
// plugin's iam stack), and returns the files and the StackSpecs in stack
// name order. The merge has applied every patch aimed at them already; the
// launch templates that podMetadata requests cover answer pods
// (openMetadata). pools
// holds each node pool's values (the pool's overrides already merged over
// v); a pool's stack takes its tags from there.
func Render(c *config.Cluster, v Values, pools map[string]Values, set *construct.Set) ([]stage.File, []stage.StackSpec, diag.List) {
	if set == nil {
		set = &construct.Set{}
	}
	var diags diag.List
	exists := map[string]bool{}
	stacks := map[string]construct.Stack{}
	for _, st := range set.Stacks {
		exists[st.Name] = true
		if st.Renderer == "" {
			stacks[st.Name] = st
		}
	}
	order := sortedKeys(stacks)
	// A source in a stack nobody renders would only fail at deploy time,
	// after other stacks were already created; say so now.
	for _, n := range order {
		st := stacks[n]
		for _, p := range sortedKeys(st.ParameterSources) {
			if from := st.ParameterSources[p].Stack; !exists[from] {
				diags = append(diags, diag.Fatalf("stack %s: parameter %s comes from stack %s, which no plugin contributes", n, p, from).
					WithHint("enable the plugin that makes stack "+from+", or drop the parameter source").About(st.Plugin))
			}
		}
	}
	diags = append(diags, openMetadata(c, stacks, set.PodMetadata)...)
	poolTags := map[string]map[string]string{}
	for _, p := range c.NodePools {
		if pv, ok := pools[p.Name]; ok {
			poolTags[names.NodePoolStack(p.Name)] = pv.Tags
		}
	}
	// Each stack's template is its own: they are written on every CPU (a
	// hundred machine stacks at 100 node pools), and taken in name order.
	rendered := make([]*cfn.Rendered, len(order))
	stackDiags := make([]diag.List, len(order))
	parallel.For(len(order), func(i int) {
		tags, ok := poolTags[order[i]]
		if !ok {
			tags = v.Tags
		}
		rendered[i], stackDiags[i] = cfn.RenderStack(stacks[order[i]], c.Tags, tags)
	})
	var files []stage.File
	var specs []stage.StackSpec
	for i, r := range rendered {
		diags = append(diags, stackDiags[i]...)
		if r == nil {
			continue
		}
		files = append(files, r.File)
		specs = append(specs, r.Spec)
	}
	return files, specs, diags
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
