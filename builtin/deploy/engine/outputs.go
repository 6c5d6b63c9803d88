package engine

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

// refOutputs maps each output of a template whose value is a plain Ref to
// one of the template's own resources to that resource's logical ID.
func refOutputs(outputs map[string]json.RawMessage, resources map[string]templateResource) map[string]string {
	refs := map[string]string{}
	for name, raw := range outputs {
		var o struct {
			Value struct {
				Ref string `json:"Ref"`
			} `json:"Value"`
		}
		if json.Unmarshal(raw, &o) != nil || o.Value.Ref == "" {
			continue // not a Ref (GetAtt, Join, a literal)
		}
		if _, ok := resources[o.Value.Ref]; ok {
			refs[name] = o.Value.Ref
		}
	}
	return refs
}

// stackOutputs returns a deployed stack's outputs as they are after its
// latest operation. DescribeStacks's outputs (st, just described) are the
// base; every output the rendered template declares as a plain Ref to one of
// its resources is read from the resource itself, whose physical ID is what
// a Ref returns. On AWS the two agree. An emulator need not refresh a stack's
// outputs when it executes a change set (moto does not: a node pool added to
// a deployed cluster found the iam stack without its instance profile
// output), while the stack's resources are current on both, so this one way
// of reading works against AWS and moto alike. Outputs computed otherwise
// (GetAtt, Join) come from DescribeStacks alone.
func (e *Engine) stackOutputs(ctx context.Context, name string, tp *template, st *types.Stack) (map[string]string, error) {
	outs := outputsOf(st)
	if tp == nil || len(tp.RefOutputs) == 0 {
		return outs, nil
	}
	physical := map[string]string{}
	pg := cloudformation.NewListStackResourcesPaginator(e.cfn, &cloudformation.ListStackResourcesInput{StackName: aws.String(name)})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("reading the outputs of stack %s from its resources: %w", name, err)
		}
		for _, r := range page.StackResourceSummaries {
			if id := aws.ToString(r.PhysicalResourceId); id != "" {
				physical[aws.ToString(r.LogicalResourceId)] = id
			}
		}
	}
	for out, logical := range tp.RefOutputs {
		if id, ok := physical[logical]; ok {
			outs[out] = id
		}
	}
	return outs, nil
}
