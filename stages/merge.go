package stages

import (
	"encoding/json"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/merge"
	"github.com/kube-aws/kube-aws/core/stage"
)

// mergeInitialise merges constructs with core/merge in plugin order and
// takes each plugin's initialised values as its values from now on.
func (s *Session) mergeInitialise(parts []Plugin, calls []call, c *carry, res *StageResult) diag.List {
	var diags diag.List
	var contribs []merge.Contribution
	var late []merge.LateStacks
	for _, p := range s.Plugins {
		if ls := p.Info().LateStacks; len(ls) > 0 {
			late = append(late, merge.LateStacks{Plugin: p.Candidate().Name, Stacks: ls})
		}
	}
	values := make(map[string]stage.PluginValues, len(c.values))
	for k, v := range c.values {
		values[k] = v
	}
	for i, p := range parts {
		r := calls[i].res
		if calls[i].err != nil || r == nil {
			continue
		}
		name := p.Candidate().Name
		if r.Constructs != nil {
			contribs = append(contribs, merge.Contribution{Plugin: name, Set: r.Constructs})
		}
		if len(r.Values) > 0 {
			if !json.Valid(r.Values) {
				diags = append(diags, diag.Fatalf("plugin %s returned values that are not JSON", name).
					WithHint("a plugin's initialise values must be a JSON object"))
				continue
			}
			pv := values[name]
			pv.Values = r.Values
			values[name] = pv
		}
	}
	merged, md := s.Plan.Deps.Merge(contribs, merge.Options{Late: late})
	diags = append(diags, md.WithDefaults("", string(stage.Initialise))...)
	if !md.HasFatal() {
		diags = append(diags, resolveArtifacts(s.Plan.Cluster(), s.Plan.ClusterDir, merged)...)
	}
	res.Constructs = merged
	res.Values = values
	res.Capabilities = c.capabilities
	return diags
}

// mergeRender collects files and stacks in plugin order. Two plugins writing
// one path, or two stacks of one name, is fatal naming both: order never
// silently picks a winner.
func mergeRender(parts []Plugin, calls []call, res *StageResult) diag.List {
	var diags diag.List
	owner := map[string]string{}
	stackOwner := map[string]string{}
	var stacks []stage.StackSpec
	for i, p := range parts {
		r := calls[i].res
		if calls[i].err != nil || r == nil {
			continue
		}
		name := p.Candidate().Name
		for _, f := range r.Files {
			clean, err := cleanOutputPath(f.Path)
			if err != nil {
				diags = append(diags, diag.Diagnostic{Severity: diag.Fatal, Plugin: name, Stage: string(stage.Render),
					Message: fmt.Sprintf("plugin %s rendered file %q: %v", name, f.Path, err),
					Hint:    "rendered file paths are relative to the output folder and stay inside it"})
				continue
			}
			if prev, dup := owner[clean]; dup {
				diags = append(diags, diag.Diagnostic{Severity: diag.Fatal, Plugin: name, Stage: string(stage.Render),
					Message: fmt.Sprintf("plugins %s and %s both render %s", prev, name, clean),
					Hint:    "each rendered file has one owner; disable one of the plugins or configure one of them to use another path"})
				continue
			}
			owner[clean] = name
			f.Path = clean
			f.Plugin = name
			res.files = append(res.files, f)
		}
		for _, st := range r.Stacks {
			if prev, dup := stackOwner[st.Name]; dup {
				diags = append(diags, diag.Diagnostic{Severity: diag.Fatal, Plugin: name, Stage: string(stage.Render),
					Message: fmt.Sprintf("plugins %s and %s both declare stack %s", prev, name, st.Name),
					Hint:    "stack names are unique across plugins"})
				continue
			}
			stackOwner[st.Name] = name
			stacks = append(stacks, st)
		}
	}
	sort.Slice(res.files, func(i, j int) bool { return res.files[i].Path < res.files[j].Path })
	for _, st := range stacks {
		if st.Template != "" {
			if _, ok := owner[path.Clean(st.Template)]; !ok {
				diags = append(diags, diag.Diagnostic{Severity: diag.Fatal, Plugin: stackOwner[st.Name], Stage: string(stage.Render),
					Message: fmt.Sprintf("stack %s names template %s, which no plugin rendered", st.Name, st.Template)})
			}
		}
	}
	res.Rendered = &stage.Rendered{Stacks: stacks}
	return diags
}

// mergeDeploy combines the deploy results in plugin order.
func mergeDeploy(parts []Plugin, calls []call, c *carry, res *StageResult) diag.List {
	var diags diag.List
	out := &stage.DeployResult{}
	outputOwner := map[string]string{}
	for i, p := range parts {
		r := calls[i].res
		if calls[i].err != nil || r == nil || r.Deploy == nil {
			continue
		}
		diags = append(diags, combineDeploy(out, p.Candidate().Name, r.Deploy, outputOwner)...)
	}
	res.Deploy = out
	return diags
}

// combineDeploy adds one plugin's deploy result to out. A stack reported
// twice keeps the later report (a plugin may update a stack an earlier one
// created); an output set twice to different values is fatal.
func combineDeploy(out *stage.DeployResult, plugin string, r *stage.DeployResult, outputOwner map[string]string) diag.List {
	var diags diag.List
	for _, st := range r.Stacks {
		replaced := false
		for i := range out.Stacks {
			if out.Stacks[i].Name == st.Name {
				out.Stacks[i] = st
				replaced = true
			}
		}
		if !replaced {
			out.Stacks = append(out.Stacks, st)
		}
	}
	keys := make([]string, 0, len(r.Outputs))
	for k := range r.Outputs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := r.Outputs[k]
		if out.Outputs == nil {
			out.Outputs = map[string]string{}
		}
		if old, ok := out.Outputs[k]; ok && old != v {
			diags = append(diags, diag.Diagnostic{Severity: diag.Fatal, Plugin: plugin, Stage: string(stage.Deploy),
				Message: fmt.Sprintf("plugins %s and %s report different values for deploy output %s", outputOwner[k], plugin, k)})
			continue
		}
		out.Outputs[k] = v
		if _, ok := outputOwner[k]; !ok {
			outputOwner[k] = plugin
		}
	}
	return diags
}

// mergeOperation combines the diff or destroy results of the plugins that
// ran the operation, in the order they ran.
func mergeOperation(parts []Plugin, calls []call, res *StageResult) {
	for i := range parts {
		r := calls[i].res
		if calls[i].err != nil || r == nil {
			continue
		}
		if d := r.Diff; d != nil {
			if res.Diff == nil {
				res.Diff = &stage.DiffResult{Stacks: []stage.StackDiff{}}
			}
			res.Diff.Stacks = append(res.Diff.Stacks, d.Stacks...)
			res.Diff.Orphans = append(res.Diff.Orphans, d.Orphans...)
			res.Diff.Machines = append(res.Diff.Machines, d.Machines...)
			res.Diff.Changed = res.Diff.Changed || d.Changed
		}
		if d := r.Destroy; d != nil {
			if res.Destroy == nil {
				res.Destroy = &stage.DestroyResult{}
			}
			res.Destroy.Deleted = append(res.Destroy.Deleted, d.Deleted...)
			res.Destroy.Absent = append(res.Destroy.Absent, d.Absent...)
			res.Destroy.Orphans = append(res.Destroy.Orphans, d.Orphans...)
		}
	}
}

// mergeCredential takes the one admin credential the plugins returned. Two
// plugins providing one is fatal naming both: plugin order never picks the
// credential an operator gets cluster-admin with.
func mergeCredential(parts []Plugin, calls []call, res *StageResult) diag.List {
	var from string
	for i, p := range parts {
		r := calls[i].res
		if calls[i].err != nil || r == nil || r.AdminCredential == nil {
			continue
		}
		name := p.Candidate().Name
		if from != "" {
			res.AdminCredential = nil
			return diag.List{diag.Diagnostic{Severity: diag.Fatal, Plugin: name, Stage: string(stage.AdminCredential),
				Message: fmt.Sprintf("plugins %s and %s both provide the cluster's admin credential", from, name),
				Hint:    "disable one of them (plugins.NAME.enabled: false)"}}
		}
		from, res.AdminCredential = name, r.AdminCredential
	}
	return nil
}

func cloneDeploy(d *stage.DeployResult) *stage.DeployResult {
	if d == nil {
		return nil
	}
	b, _ := json.Marshal(d)
	var out stage.DeployResult
	_ = json.Unmarshal(b, &out)
	return &out
}

// cleanOutputPath checks that a rendered file stays inside the output folder
// and returns its clean, slash-separated form.
func cleanOutputPath(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("empty path")
	}
	if strings.Contains(p, "\\") {
		return "", fmt.Errorf("backslash in path; use /")
	}
	if path.IsAbs(p) {
		return "", fmt.Errorf("absolute path escapes the output folder")
	}
	c := path.Clean(p)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("path escapes the output folder")
	}
	if c == "." {
		return "", fmt.Errorf("path names the output folder itself")
	}
	if c == ManifestName {
		return "", fmt.Errorf("%s is written by kube-aws itself", ManifestName)
	}
	return c, nil
}
