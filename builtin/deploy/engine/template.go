package engine

import (
	"encoding/json"
	"fmt"
	"sort"
)

// template is what the engine needs to know of a rendered template: which
// parameters it takes, which outputs it promises, which resources it makes.
// Render writes JSON (templates are built as data), so JSON is all we parse.
type template struct {
	Body       []byte
	Parameters map[string]templateParam
	Outputs    map[string]json.RawMessage
	Resources  map[string]templateResource
	// RefOutputs maps each output that is a plain Ref to one of the
	// template's resources to that resource's logical ID (stackOutputs).
	RefOutputs map[string]string
	// ParameterFiles maps a parameter to the rendered file whose S3 key
	// fills it, from the template's Metadata
	// {"kube-aws": {"parameterFiles": {"UserDataKey": "userdata/controller.yaml"}}}:
	// the render side says which file a stack boots from.
	ParameterFiles map[string]string
}

type templateParam struct {
	Default json.RawMessage `json:"Default"`
}

// hasDefault reports whether a template parameter declares a Default ("" counts).
func hasDefault(p templateParam) bool {
	return len(p.Default) > 0 && string(p.Default) != "null"
}

type templateResource struct {
	Type       string          `json:"Type"`
	Properties json.RawMessage `json:"Properties"`
}

func parseTemplate(body []byte) (*template, error) {
	var t struct {
		Metadata struct {
			KubeAWS struct {
				ParameterFiles map[string]string `json:"parameterFiles"`
			} `json:"kube-aws"`
		} `json:"Metadata"`
		Parameters map[string]templateParam    `json:"Parameters"`
		Outputs    map[string]json.RawMessage  `json:"Outputs"`
		Resources  map[string]templateResource `json:"Resources"`
	}
	if err := json.Unmarshal(body, &t); err != nil {
		return nil, fmt.Errorf("not a JSON CloudFormation template: %w", err)
	}
	if len(t.Resources) == 0 {
		return nil, fmt.Errorf("declares no Resources; CloudFormation needs at least one")
	}
	return &template{Body: body, Parameters: t.Parameters, Outputs: t.Outputs, Resources: t.Resources,
		RefOutputs: refOutputs(t.Outputs, t.Resources), ParameterFiles: t.Metadata.KubeAWS.ParameterFiles}, nil
}

// outputNames lists the template's outputs in a stable order.
func (t *template) outputNames() []string {
	names := make([]string, 0, len(t.Outputs))
	for n := range t.Outputs {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
