package engine

import (
	"bytes"
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/kube-aws/kube-aws/builtin/deploy/engine/roll"
	"github.com/kube-aws/kube-aws/core/names"
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
	if ic := issuerChange(p.t.Cluster, current[names.StackIAM]); ic != nil && !t.AllowIssuerChange {
		e.say("", "up would refuse this: %v; %s", ic, ic.Hint())
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
	if res.Machines, err = e.diffMachines(ctx, p, diffs, keys, contents); err != nil {
		return nil, err
	}
	res.Changed = res.Changed || len(res.Machines) > 0
	return res, nil
}

// diffMachines lists the machines an up would replace: every machine of a
// group whose launch template the up changes (what for, from the version
// it runs to the render), and every machine that is out of date already (a
// roll an earlier up did not finish, a failed boot).
func (e *Engine) diffMachines(ctx context.Context, p *prepared, diffs map[string]*stage.StackDiff, keys map[string]string, contents map[string][]byte) ([]stage.MachineDiff, error) {
	specs, err := e.rollSpecs(ctx, p)
	if err != nil {
		return nil, err
	}
	x := newExplainer(e, p)
	f := &fleet{e: e, p: p}
	plans, err := roll.Plan(ctx, f, specs, e.rollOptions(x))
	if err != nil {
		return nil, err
	}
	var out []stage.MachineDiff
	for _, gp := range plans {
		s := gp.Spec
		rendered := x.rendered(s.Stack, keys, contents)
		current, err := x.version(ctx, gp.State.Template, gp.State.Version)
		if err != nil {
			return nil, err
		}
		// The change set says whether the launch template changes; the
		// keys say it too where the change set lists only parameters.
		changes := launchTemplateChanges(diffs[s.Stack]) || !current.unknown && current.boot.UserDataKey != "" && !sameLaunch(rendered, current)
		already := map[string]string{}
		for _, od := range gp.Outdated {
			already[od.ID] = od.Reason
		}
		for _, in := range gp.State.Instances {
			if strings.HasPrefix(in.Lifecycle, "Terminat") {
				continue
			}
			md := stage.MachineDiff{Stack: s.Stack, Role: s.Role, Group: s.Group, InstanceID: in.ID, Address: in.Address}
			if changes {
				old, err := x.version(ctx, gp.State.Template, in.Version)
				if err != nil {
					return nil, err
				}
				md.Reasons = rendered.reasons(old)
			} else if r, ok := already[in.ID]; ok {
				md.Reasons = []string{r}
			} else {
				continue
			}
			out = append(out, md)
		}
	}
	return out, nil
}

// launchTemplateChanges says a stack's change set modifies its launch
// template.
func launchTemplateChanges(d *stage.StackDiff) bool {
	if d == nil {
		return false
	}
	for _, c := range d.Changes {
		if c.LogicalID == names.LaunchTemplate && c.Action != "Add" {
			return true
		}
	}
	return false
}

// sameLaunch says the render launches what a group launches now: the same
// userdata, kube-aws-node and instance type (what a machine is made of).
func sameLaunch(rendered, current launchPlan) bool {
	return !current.unknown && rendered.boot == current.boot &&
		(rendered.instanceType == "" || rendered.instanceType == current.instanceType)
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
