package engine

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/kube-aws/kube-aws/core/stage"
)

// Diff previews a deploy: a change set per existing stack, what each would
// change per resource, every change set deleted again, nothing executed.
// Absent stacks are reported as "create" with every resource of their
// template; a change set cannot be made for them before the stacks they take
// parameters from exist. Parameters from other stacks' outputs use the
// outputs those stacks have now.
func (e *Engine) Diff(ctx context.Context, t Target) (*stage.DiffResult, error) {
	ctx, cancel := e.run(ctx)
	defer cancel()
	p, err := e.prepare(t)
	if err != nil {
		return nil, err
	}
	keys, contents, err := assetKeys(p)
	if err != nil {
		return nil, err
	}
	if err := p.resolveNodeAgent(); err != nil {
		return nil, err
	}
	current, orphans, err := e.survey(ctx, p)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	// The outputs of every live stack, read the way Deploy reads them
	// (stackOutputs), for the parameters of the stacks that take them.
	live := make([]string, 0, len(current))
	for stack := range current {
		live = append(live, stack)
	}
	read := map[string]map[string]string{}
	err = forEach(ctx, e.opts.Parallelism, live, func(ctx context.Context, stack string) error {
		outs, err := e.stackOutputs(ctx, p.stackName(stack), p.tmpl[stack], current[stack])
		mu.Lock()
		read[stack] = outs
		mu.Unlock()
		return err
	})
	if err != nil {
		return nil, err
	}
	outputs := func(stack string) (map[string]string, bool) {
		outs, ok := read[stack]
		return outs, ok
	}
	diffs := map[string]*stage.StackDiff{}
	err = forEach(ctx, e.opts.Parallelism, p.graph.order, func(ctx context.Context, stack string) error {
		d := &stage.StackDiff{Stack: stack, StackName: p.stackName(stack)}
		defer func() { mu.Lock(); diffs[stack] = d; mu.Unlock() }()
		st := current[stack]
		if st != nil {
			d.Status = string(st.StackStatus)
		}
		switch {
		case st == nil || st.StackStatus == types.StackStatusReviewInProgress:
			d.Action, d.Changes = stage.ActionCreate, templateAdds(p.tmpl[stack])
			return nil
		case st.StackStatus == types.StackStatusRollbackComplete || st.StackStatus == types.StackStatusRollbackFailed || st.StackStatus == types.StackStatusCreateFailed:
			d.Action, d.Changes = stage.ActionRecreate, templateAdds(p.tmpl[stack])
			return nil
		}
		in, err := e.input(p, stack, keys, outputs, true)
		if err != nil {
			return err
		}
		if in.templateURL != nil {
			// CloudFormation reads big templates from S3: put this one
			// there (content-addressed, so Deploy will find it present).
			if err := e.putIfAbsent(ctx, p.loc.Bucket, keys[p.graph.specs[stack].Template], contents[p.graph.specs[stack].Template]); err != nil {
				return err
			}
		}
		cs, err := e.makeChangeSet(ctx, stack, in, types.ChangeSetTypeUpdate, "kube-aws diff (never executed)")
		if err != nil {
			return err
		}
		if cs == nil {
			d.Action = stage.ActionNone
			return nil
		}
		e.deleteChangeSet(ctx, in.name, cs.name)
		// A change set that changes only parameters can list no resource
		// (moto does so); it is a change all the same.
		d.Action, d.Changes = stage.ActionUpdate, cs.changes
		return nil
	})
	if err != nil {
		return nil, err
	}
	res := &stage.DiffResult{Orphans: orphans}
	for _, stack := range p.graph.order {
		d := diffs[stack]
		res.Stacks = append(res.Stacks, *d)
		res.Changed = res.Changed || d.Action != stage.ActionNone
	}
	return res, nil
}

func templateAdds(t *template) []stage.ResourceChange {
	ids := make([]string, 0, len(t.Resources))
	for id := range t.Resources {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	out := make([]stage.ResourceChange, 0, len(ids))
	for _, id := range ids {
		out = append(out, stage.ResourceChange{Action: "Add", LogicalID: id, ResourceType: t.Resources[id].Type})
	}
	return out
}

func (e *Engine) putIfAbsent(ctx context.Context, bucket, key string, body []byte) error {
	exists, err := e.objectExists(ctx, bucket, key)
	if err != nil || exists {
		return err
	}
	_, err = e.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))})
	if err != nil {
		return fmt.Errorf("uploading template to s3://%s/%s: %w", bucket, key, err)
	}
	return nil
}
