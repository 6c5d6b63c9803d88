package merge

import (
	"encoding/json"
	"fmt"
	"sort"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/names"
)

// section is one keyed part of a stack.
type section int

const (
	secResources section = iota
	secOutputs
	secParameters
	secConditions
	secMappings
	secTags
	secParameterSources
	secDescription // owner only
	secDependsOn   // owner only
)

// sectionInfo names a section in paths (as in the JSON form of a Stack) and
// in messages.
var sectionInfo = [...]struct{ path, noun string }{
	secResources:        {"resources", "resource"},
	secOutputs:          {"outputs", "output"},
	secParameters:       {"parameters", "parameter"},
	secConditions:       {"conditions", "condition"},
	secMappings:         {"mappings", "mapping"},
	secTags:             {"tags", "tag"},
	secParameterSources: {"parameterSources", "parameter source"},
	secDescription:      {"description", "description"},
	secDependsOn:        {"dependsOn", "dependency"},
}

type ownerKey struct {
	sec section
	key string
}

// stackAcc is a stack being merged: the merged stack (with its own maps, so
// the inputs are never written) and who set each entry.
type stackAcc struct {
	s         construct.Stack
	owner     map[ownerKey]string
	dependsOn map[string]bool
}

func stackPath(stack string, sec section, key string) string {
	return fmt.Sprintf("constructs.stacks[%s].%s.%s", stack, sectionInfo[sec].path, key)
}

// bodies says whether addStack checks and copies a stack's JSON bodies.
type bodies int

const (
	// checkBodies: a plugin's contribution, checked here (where a broken
	// body is blamed on its plugin) and copied out of its request.
	checkBodies bodies = iota
	// ownBodies: the stack Late's caller built itself, taken as it is.
	ownBodies
)

func (m *merger) addStack(plugin string, in *construct.Stack, b bodies) {
	st := m.stackByName[in.Name]
	if st == nil {
		st = &stackAcc{
			s:         construct.Stack{Name: in.Name, Plugin: plugin},
			owner:     make(map[ownerKey]string, len(in.Resources)+len(in.Outputs)+len(in.Parameters)),
			dependsOn: map[string]bool{},
		}
		m.stackByName[in.Name] = st
		m.stacks = append(m.stacks, st)
	}
	// Description is prose, not configuration: the first plugin that gives
	// one describes the stack, as the design says.
	if st.s.Description == "" && in.Description != "" {
		st.s.Description = in.Description
		st.owner[ownerKey{secDescription, ""}] = plugin
	}
	for _, d := range in.DependsOn {
		if !st.dependsOn[d] {
			st.dependsOn[d] = true
			st.s.DependsOn = append(st.s.DependsOn, d)
			st.owner[ownerKey{secDependsOn, d}] = plugin
		}
	}
	m.mergeRaw(plugin, st, secResources, &st.s.Resources, in.Resources, b)
	m.mergeRaw(plugin, st, secOutputs, &st.s.Outputs, in.Outputs, b)
	m.mergeRaw(plugin, st, secParameters, &st.s.Parameters, in.Parameters, b)
	m.mergeRaw(plugin, st, secConditions, &st.s.Conditions, in.Conditions, b)
	m.mergeRaw(plugin, st, secMappings, &st.s.Mappings, in.Mappings, b)
	mergeValues(m, plugin, st, secTags, &st.s.Tags, in.Tags)
	mergeValues(m, plugin, st, secParameterSources, &st.s.ParameterSources, m.validSources(plugin, in))
}

// validSources checks every parameter source of a contribution, here and
// only here: later stages (render, deploy) rely on the merged ones being
// well formed. Invalid ones are reported and left out.
func (m *merger) validSources(plugin string, in *construct.Stack) map[string]names.Source {
	src := in.ParameterSources
	for _, p := range sortedKeys(src) {
		if err := src[p].Valid(); err != nil {
			m.fatal(plugin, stackPath(in.Name, secParameterSources, p),
				fmt.Sprintf("plugin %q wires parameter %q of stack %q: %v", plugin, p, in.Name, err),
				"a parameter source names the stack and the output that fills the parameter at deploy")
			if len(src) == len(in.ParameterSources) {
				src = make(map[string]names.Source, len(in.ParameterSources))
				for k, v := range in.ParameterSources {
					src[k] = v
				}
			}
			delete(src, p)
		}
	}
	return src
}

// mergeRaw merges one JSON-bodied section. Bodies are checked here because
// this is the last point where a broken body can be blamed on the plugin that
// sent it.
func (m *merger) mergeRaw(plugin string, st *stackAcc, sec section, dst *map[string]json.RawMessage, src map[string]json.RawMessage, b bodies) {
	if len(src) == 0 {
		return
	}
	if *dst == nil {
		*dst = make(map[string]json.RawMessage, len(src))
	}
	noun := sectionInfo[sec].noun
	for _, k := range sortedKeys(src) {
		v := src[k]
		if b == ownBodies {
			(*dst)[k] = v
			st.owner[ownerKey{sec, k}] = plugin
			continue
		}
		if sec == secResources {
			if !isJSONObject(v) {
				m.fatal(plugin, stackPath(st.s.Name, sec, k),
					fmt.Sprintf("plugin %q defines %s %q in stack %q with a body that is not a JSON object: %s",
						plugin, noun, k, st.s.Name, truncate(string(v), maxShown)),
					`a resource body is a JSON object such as {"Type": "AWS::S3::Bucket", "Properties": {...}}`)
				continue
			}
		} else if isBlank(v) || !json.Valid(v) {
			m.fatal(plugin, stackPath(st.s.Name, sec, k),
				fmt.Sprintf("plugin %q defines %s %q in stack %q with invalid JSON: %s",
					plugin, noun, k, st.s.Name, truncate(string(v), maxShown)),
				"fix the plugin so it sends the body as it appears in a CloudFormation template")
			continue
		}
		prev, ok := (*dst)[k]
		if !ok {
			(*dst)[k] = m.copyRaw(v)
			st.owner[ownerKey{sec, k}] = plugin
			continue
		}
		if jsonEqual(prev, v) {
			continue
		}
		first := st.owner[ownerKey{sec, k}]
		what := fmt.Sprintf("%s %q of stack %q", noun, k, st.s.Name)
		hint := resolveHint(first, plugin, "the "+noun)
		if sec == secResources && first != plugin {
			hint = fmt.Sprintf("keep resource %q in one plugin only and have the other change it with a patch (constructs.patches), or make %q and %q define it identically",
				k, first, plugin)
		}
		m.conflict(plugin, first, stackPath(st.s.Name, sec, k),
			fmt.Sprintf("%s is defined differently by %s: %s", what, by(first, plugin), describeJSONDiff(first, prev, plugin, v)),
			hint)
	}
}

// mergeValues merges a section whose values compare with == (tags,
// parameter sources).
func mergeValues[V comparable](m *merger, plugin string, st *stackAcc, sec section, dst *map[string]V, src map[string]V) {
	if len(src) == 0 {
		return
	}
	if *dst == nil {
		*dst = make(map[string]V, len(src))
	}
	noun := sectionInfo[sec].noun
	for _, k := range sortedKeys(src) {
		v := src[k]
		prev, ok := (*dst)[k]
		if !ok {
			(*dst)[k] = v
			st.owner[ownerKey{sec, k}] = plugin
			continue
		}
		if prev == v {
			continue
		}
		first := st.owner[ownerKey{sec, k}]
		m.conflict(plugin, first, stackPath(st.s.Name, sec, k),
			fmt.Sprintf("%s %q of stack %q is set differently by %s: %q sets %q, %q sets %q",
				noun, k, st.s.Name, by(first, plugin), first, fmt.Sprint(prev), plugin, fmt.Sprint(v)),
			resolveHint(first, plugin, "the "+noun))
	}
}

// byOwner splits a merged late stack into one entry per plugin that
// contributed to it, in plugin order, each holding what that plugin set (the
// first plugin to set an entry owns it; an identical later one adds
// nothing). The renderer folds them into the stack it builds (Late) and can
// name the owner of each entry in a conflict. Patches applied at merge are
// in the bodies already.
func (st *stackAcc) byOwner(renderer string, order map[string]int) []construct.Stack {
	entries := map[string]*construct.Stack{}
	get := func(plugin string) *construct.Stack {
		e := entries[plugin]
		if e == nil {
			e = &construct.Stack{Name: st.s.Name, Plugin: plugin, Renderer: renderer}
			entries[plugin] = e
		}
		return e
	}
	raw := func(dst *map[string]json.RawMessage, k string, v json.RawMessage) {
		if *dst == nil {
			*dst = map[string]json.RawMessage{}
		}
		(*dst)[k] = v
	}
	for k, owner := range st.owner {
		e := get(owner)
		switch k.sec {
		case secResources:
			raw(&e.Resources, k.key, st.s.Resources[k.key])
		case secOutputs:
			raw(&e.Outputs, k.key, st.s.Outputs[k.key])
		case secParameters:
			raw(&e.Parameters, k.key, st.s.Parameters[k.key])
		case secConditions:
			raw(&e.Conditions, k.key, st.s.Conditions[k.key])
		case secMappings:
			raw(&e.Mappings, k.key, st.s.Mappings[k.key])
		case secTags:
			if e.Tags == nil {
				e.Tags = map[string]string{}
			}
			e.Tags[k.key] = st.s.Tags[k.key]
		case secParameterSources:
			if e.ParameterSources == nil {
				e.ParameterSources = map[string]names.Source{}
			}
			e.ParameterSources[k.key] = st.s.ParameterSources[k.key]
		case secDescription:
			e.Description = st.s.Description
		}
	}
	// DependsOn keeps its merged order within each entry.
	for _, d := range st.s.DependsOn {
		e := get(st.owner[ownerKey{secDependsOn, d}])
		e.DependsOn = append(e.DependsOn, d)
	}
	out := make([]construct.Stack, 0, len(entries))
	for _, e := range entries {
		out = append(out, *e)
	}
	sort.Slice(out, func(i, j int) bool {
		if order[out[i].Plugin] != order[out[j].Plugin] {
			return order[out[i].Plugin] < order[out[j].Plugin]
		}
		return out[i].Plugin < out[j].Plugin
	})
	return out
}
