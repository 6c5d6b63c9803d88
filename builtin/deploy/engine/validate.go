package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
)

// Validate checks a deployed cluster: every stack exists in a healthy state
// (CREATE_COMPLETE or UPDATE_COMPLETE), has every output its template
// declares, every auto scaling group in it has its desired number of
// instances in service, and every instance of a machine stack reached its
// role's goal by its status object (validateMachines). Problems come back as
// fatal diagnostics, machines still booting as warnings; the error is for
// when the check itself could not run.
func (e *Engine) Validate(ctx context.Context, t Target) (diag.List, error) {
	ctx, cancel := e.run(ctx)
	defer cancel()
	p, err := e.prepare(t)
	if err != nil {
		return nil, err
	}
	listed, _, err := e.survey(ctx, p)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	found := map[string]diag.List{}
	err = forEach(ctx, e.opts.Parallelism, p.graph.order, func(ctx context.Context, stack string) error {
		ds, err := e.validateStack(ctx, p, stack, listed[stack])
		if err != nil {
			return err
		}
		mu.Lock()
		found[stack] = ds
		mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out diag.List
	for _, stack := range p.graph.order {
		out = append(out, found[stack]...)
	}
	return out, nil
}

func fatal(stack, msg, hint string) diag.Diagnostic {
	return diag.Diagnostic{Severity: diag.Fatal, Stage: "validate", Path: "stacks/" + stack, Message: msg, Hint: hint}
}

func (e *Engine) validateStack(ctx context.Context, p *prepared, stack string, st *types.Stack) (diag.List, error) {
	name := p.stackName(stack)
	if st == nil {
		return diag.List{fatal(stack, fmt.Sprintf("stack %s does not exist", name), "run `kube-aws up` to create it")}, nil
	}
	var ds diag.List
	switch st.StackStatus {
	case types.StackStatusCreateComplete, types.StackStatusUpdateComplete:
	default:
		reason := aws.ToString(st.StackStatusReason)
		if reason != "" {
			reason = " (" + reason + ")"
		}
		ds = append(ds, fatal(stack, fmt.Sprintf("stack %s is in %s%s, not CREATE_COMPLETE or UPDATE_COMPLETE", name, st.StackStatus, reason),
			"see `aws cloudformation describe-stack-events --stack-name "+name+"`, then run `kube-aws up` again"))
	}
	have, err := e.stackOutputs(ctx, name, p.tmpl[stack], st)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, o := range p.tmpl[stack].outputNames() {
		if _, ok := have[o]; !ok {
			missing = append(missing, o)
		}
	}
	if len(missing) > 0 {
		ds = append(ds, fatal(stack, fmt.Sprintf("stack %s lacks outputs %s that its template declares", name, strings.Join(missing, ", ")),
			"the deployed stack is older than the render output: run `kube-aws up`"))
	}
	groups, missingGroups, err := e.stackGroups(ctx, name)
	if err != nil {
		return nil, err
	}
	for _, g := range missingGroups {
		ds = append(ds, fatal(stack, fmt.Sprintf("auto scaling group %s of stack %s does not exist", g, name), "run `kube-aws up` to recreate it"))
	}
	for _, g := range groups {
		inService := 0
		for _, i := range g.Instances {
			if i.LifecycleState == astypes.LifecycleStateInService {
				inService++
			}
		}
		want := int(aws.ToInt32(g.DesiredCapacity))
		if inService < want {
			ds = append(ds, fatal(stack, fmt.Sprintf("auto scaling group %s has %d of %d instances in service", aws.ToString(g.AutoScalingGroupName), inService, want),
				"see the group's activity history (aws autoscaling describe-scaling-activities) for why instances did not launch"))
		}
	}
	if role := names.UserDataName(stack); role != "" {
		ms, err := e.validateMachines(ctx, p, stack, role, groups)
		if err != nil {
			return nil, err
		}
		ds = append(ds, ms...)
	}
	return ds, nil
}

// stackGroups returns the auto scaling groups a stack made.
func (e *Engine) stackGroups(ctx context.Context, name string) (groups []astypes.AutoScalingGroup, missing []string, err error) {
	out, err := e.cfn.DescribeStackResources(ctx, &cloudformation.DescribeStackResourcesInput{StackName: aws.String(name)})
	if err != nil {
		return nil, nil, fmt.Errorf("listing the resources of stack %s: %w", name, err)
	}
	var names []string
	for _, r := range out.StackResources {
		if aws.ToString(r.ResourceType) == "AWS::AutoScaling::AutoScalingGroup" && r.PhysicalResourceId != nil {
			names = append(names, aws.ToString(r.PhysicalResourceId))
		}
	}
	if len(names) == 0 {
		return nil, nil, nil
	}
	sort.Strings(names)
	p := autoscaling.NewDescribeAutoScalingGroupsPaginator(e.asg, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: names})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("describing auto scaling groups %s of stack %s: %w", strings.Join(names, ", "), name, err)
		}
		groups = append(groups, page.AutoScalingGroups...)
	}
	exists := map[string]bool{}
	for _, g := range groups {
		exists[aws.ToString(g.AutoScalingGroupName)] = true
	}
	for _, n := range names {
		if !exists[n] {
			missing = append(missing, n)
		}
	}
	return groups, missing, nil
}
