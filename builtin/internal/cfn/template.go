package cfn

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
)

// CloudFormation's hard limits per template, and the size over which a
// template must be passed by TemplateURL rather than in the API call.
const (
	MaxResources      = 500
	MaxParameters     = 200
	MaxOutputs        = 200
	MaxTemplateBytes  = 1_000_000
	MaxTemplateBody   = 51_200
	MaxStackTags      = 50
	templateFormatVer = "2010-09-09"
)

// Template writes the template of a merged Stack construct as JSON with
// sorted object keys, indented by two spaces and ending in a newline: the
// bytes Marshal(v, true) gives for the template as plain data, with every
// section's values decoded by Decode. metadata, when not nil, becomes the
// template's top-level Metadata. The construct JSON is written from its
// bytes (appendIndented) rather than decoded and encoded again.
func Template(s construct.Stack, metadata map[string]any) ([]byte, error) {
	size := 64 + len(s.Description)
	sections := []struct {
		name string
		m    map[string]json.RawMessage
	}{
		{"Conditions", s.Conditions},
		{"Mappings", s.Mappings},
		{"Outputs", s.Outputs},
		{"Parameters", s.Parameters},
		{"Resources", s.Resources},
	}
	for _, sec := range sections {
		for id, raw := range sec.m {
			if !json.Valid(raw) {
				_, err := Decode(raw)
				return nil, fmt.Errorf("%s %s: invalid JSON: %v", sec.name, id, err)
			}
			if sec.name == "Resources" {
				if err := checkResource(raw); err != nil {
					return nil, fmt.Errorf("resource %s %v", id, err)
				}
			}
			// Indentation about doubles compact JSON; growing the buffer
			// would copy it again.
			size += len(id) + 8 + 3*len(raw)
		}
	}

	// The top-level keys in sorted order, as encoding/json writes a map.
	var sc scanner
	out := make([]byte, 0, size)
	out = append(out, '{')
	first := true
	key := func(k string) {
		if !first {
			out = append(out, ',')
		}
		first = false
		out = newline(out, 1)
		out = appendJSONString(out, []byte(k))
		out = append(out, ':', ' ')
	}
	section := func(name string, m map[string]json.RawMessage) {
		if len(m) == 0 {
			return
		}
		key(name)
		ids := make([]string, 0, len(m))
		for id := range m {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		out = append(out, '{')
		for i, id := range ids {
			if i > 0 {
				out = append(out, ',')
			}
			out = newline(out, 2)
			out = appendJSONString(out, []byte(id))
			out = append(out, ':', ' ')
			out = sc.indent(out, m[id], 2)
		}
		out = newline(out, 1)
		out = append(out, '}')
	}
	key("AWSTemplateFormatVersion")
	out = appendJSONString(out, []byte(templateFormatVer))
	section("Conditions", s.Conditions)
	if s.Description != "" {
		key("Description")
		out = appendJSONString(out, []byte(s.Description))
	}
	section("Mappings", s.Mappings)
	if len(metadata) > 0 {
		b, err := json.Marshal(metadata)
		if err != nil {
			return nil, fmt.Errorf("metadata: %v", err)
		}
		key("Metadata")
		out = sc.indent(out, b, 1)
	}
	section("Outputs", s.Outputs)
	section("Parameters", s.Parameters)
	section("Resources", s.Resources)
	out = newline(out, 0)
	out = append(out, '}', '\n')
	return out, nil
}

// checkResource refuses a resource body that is not an object with a
// non-empty string Type (the last Type, as decoding keeps the last of two).
func checkResource(raw []byte) error {
	sc := scanner{b: raw}
	sc.skipSpace()
	if sc.b[sc.i] != '{' {
		return errors.New("is not a JSON object")
	}
	var ty []byte
	sc.i++
	sc.skipSpace()
	for sc.b[sc.i] != '}' {
		k := unquote(sc.str())
		sc.skipSpace()
		sc.i++ // :
		sc.skipSpace()
		if sc.b[sc.i] == '"' {
			v := unquote(sc.str())
			if string(k) == "Type" {
				ty = v
			}
		} else {
			if string(k) == "Type" {
				ty = nil
			}
			sc.skip()
		}
		sc.skipSpace()
		if sc.b[sc.i] == ',' {
			sc.i++
			sc.skipSpace()
		}
	}
	if len(ty) == 0 {
		return errors.New("has no Type")
	}
	return nil
}

// Rendered is one stack rendered to a file, with what deploy needs to know.
type Rendered struct {
	File stage.File
	Spec stage.StackSpec
}

// RenderStack writes the template of a merged Stack construct to
// stacks/<name>.json and builds its StackSpec. Tags are the cluster's tags,
// then extra (a plugin's values), then the stack's own; later ones win.
// Limits are checked on the result: a fatal names the stack and the count.
func RenderStack(s construct.Stack, clusterTags, extra map[string]string) (*Rendered, diag.List) {
	var diags diag.List
	// Which rendered file's S3 key fills which parameter, for deploy.
	files := map[string]any{}
	if f := names.UserDataFile(s.Name); f != "" {
		if _, ok := s.Parameters[names.ParamUserDataKey]; ok {
			files[names.ParamUserDataKey] = f
		}
	}
	if _, ok := s.Parameters[names.ParamChartsIndexKey]; ok {
		files[names.ParamChartsIndexKey] = names.ChartsIndexFile
	}
	var meta map[string]any
	if len(files) > 0 {
		meta = map[string]any{names.MetadataKey: map[string]any{names.MetadataParameterFiles: files}}
	}
	body, err := Template(s, meta)
	if err != nil {
		return nil, diag.List{diag.Fatalf("stack %s: %v", s.Name, err)}
	}
	diags = append(diags, CheckLimits(s.Name, len(s.Resources), len(s.Parameters), len(s.Outputs), len(body))...)
	if len(s.Resources) == 0 {
		diags = append(diags, diag.Fatalf("stack %s has no resources; CloudFormation refuses an empty template", s.Name).
			WithHint("add a resource to the stack or stop contributing it"))
	}

	spec := stage.StackSpec{
		Name:        s.Name,
		Template:    "stacks/" + s.Name + ".json",
		UploadByURL: len(body) > MaxTemplateBody,
	}
	deps := map[string]bool{}
	for _, d := range s.DependsOn {
		deps[d] = true
	}
	if len(s.ParameterSources) > 0 {
		spec.ParameterSources = make(map[string]names.Source, len(s.ParameterSources))
		for p, src := range s.ParameterSources {
			// core/merge checked every source once; a set built by hand
			// (a test) may still hold a broken one.
			if err := src.Valid(); err != nil {
				diags = append(diags, diag.Fatalf("stack %s: %v", s.Name, err))
				continue
			}
			if _, declared := s.Parameters[p]; !declared {
				diags = append(diags, diag.Fatalf("stack %s: parameter source for %s, which the template does not declare", s.Name, p).
					WithHint("declare the parameter in the same Stack construct as its source"))
			}
			spec.ParameterSources[p] = src
			deps[src.Stack] = true
		}
	}
	delete(deps, s.Name)
	for d := range deps {
		spec.DependsOn = append(spec.DependsOn, d)
	}
	sort.Strings(spec.DependsOn)

	tags := map[string]string{}
	for _, m := range []map[string]string{clusterTags, extra, s.Tags} {
		for k, v := range m {
			tags[k] = v
		}
	}
	if len(tags) > 0 {
		spec.Tags = tags
	}
	if len(tags) > MaxStackTags {
		diags = append(diags, diag.Fatalf("stack %s has %d tags, over the CloudFormation limit of %d", s.Name, len(tags), MaxStackTags))
	}
	return &Rendered{
		File: stage.File{Path: spec.Template, Content: body, Mode: "0644"},
		Spec: spec,
	}, diags
}

// CheckLimits returns a fatal for every CloudFormation hard limit the
// template of a stack crosses.
func CheckLimits(stack string, resources, parameters, outputs, bytes int) diag.List {
	var diags diag.List
	hint := "split the stack: move resources into a stack of their own (a Stack construct with another name)"
	if resources > MaxResources {
		diags = append(diags, diag.Fatalf("stack %s has %d resources, over the CloudFormation limit of %d", stack, resources, MaxResources).WithHint(hint))
	}
	if parameters > MaxParameters {
		diags = append(diags, diag.Fatalf("stack %s has %d parameters, over the CloudFormation limit of %d", stack, parameters, MaxParameters).WithHint(hint))
	}
	if outputs > MaxOutputs {
		diags = append(diags, diag.Fatalf("stack %s has %d outputs, over the CloudFormation limit of %d", stack, outputs, MaxOutputs).WithHint(hint))
	}
	if bytes > MaxTemplateBytes {
		diags = append(diags, diag.Fatalf("stack %s template is %d bytes, over the CloudFormation limit of %d", stack, bytes, MaxTemplateBytes).WithHint(hint))
	}
	return diags
}
