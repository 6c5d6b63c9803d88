package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbv2types "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/kube-aws/kube-aws/builtin/deploy/engine/roll"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
)

// rollSpecs are the Auto Scaling groups of the machine stacks in roll
// order: the etcd members' groups (by logical ID), the controllers', then
// each node pool's in the order of cluster.yaml. A stack not deployed yet
// has no groups to roll.
func (e *Engine) rollSpecs(ctx context.Context, p *prepared) ([]roll.Spec, error) {
	var specs []roll.Spec
	rank := func(stack string) int {
		switch stack {
		case names.StackEtcd:
			return 0
		case names.StackControlPlane:
			return 1
		}
		return 2
	}
	stacks := make([]string, 0, len(p.graph.order))
	for _, s := range p.graph.order {
		if names.UserDataName(s) != "" {
			stacks = append(stacks, s)
		}
	}
	poolRank := map[string]int{}
	for i, np := range p.t.Cluster.NodePools {
		poolRank[names.NodePoolStack(np.Name)] = i
	}
	sort.SliceStable(stacks, func(i, j int) bool {
		a, b := stacks[i], stacks[j]
		if rank(a) != rank(b) {
			return rank(a) < rank(b)
		}
		return poolRank[a] < poolRank[b]
	})
	for _, stack := range stacks {
		groups, err := e.groupsByLogicalID(ctx, p.stackName(stack))
		if err != nil {
			return nil, err
		}
		ids := make([]string, 0, len(groups))
		for id := range groups {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		for _, id := range ids {
			s := roll.Spec{Stack: stack, Role: names.UserDataName(stack), Group: groups[id], Target: p.tmpl[stack].desiredCapacity(id)}
			switch stack {
			case names.StackEtcd:
				s.Kind = roll.Etcd
			case names.StackControlPlane:
				s.Kind = roll.Controller
			default:
				s.Kind = roll.Worker
				s.MaxSurge, s.MaxUnavailable, s.DefaultUnavailable = poolRollingUpdate(p.t.Cluster, stack)
			}
			specs = append(specs, s)
		}
	}
	return specs, nil
}

// poolRollingUpdate is a pool's maxSurge and maxUnavailable from
// cluster.yaml (nodePools[].rollingUpdate); unavailable defaults to 0, or
// 1 when the group has no room to surge (DefaultUnavailable).
func poolRollingUpdate(c *config.Cluster, stack string) (surge, unavailable int, defaulted bool) {
	for _, np := range c.NodePools {
		if names.NodePoolStack(np.Name) != stack {
			continue
		}
		ru := np.RollingUpdate.WithDefaults()
		return *ru.MaxSurge, *ru.MaxUnavailable, np.RollingUpdate == nil || np.RollingUpdate.MaxUnavailable == nil
	}
	return 1, 0, true
}

// groupsByLogicalID maps each Auto Scaling group of a deployed stack's
// logical ID to its name; none when the stack does not exist.
func (e *Engine) groupsByLogicalID(ctx context.Context, stackName string) (map[string]string, error) {
	out := map[string]string{}
	res, err := e.cfn.DescribeStackResources(ctx, &cloudformation.DescribeStackResourcesInput{StackName: aws.String(stackName)})
	if err != nil {
		if strings.Contains(apiMessage(err), "does not exist") {
			return out, nil
		}
		return nil, fmt.Errorf("listing the resources of stack %s: %w", stackName, err)
	}
	for _, r := range res.StackResources {
		if aws.ToString(r.ResourceType) == "AWS::AutoScaling::AutoScalingGroup" && r.PhysicalResourceId != nil {
			out[aws.ToString(r.LogicalResourceId)] = aws.ToString(r.PhysicalResourceId)
		}
	}
	return out, nil
}

// rollOptions are the roll's settings from the engine's.
func (e *Engine) rollOptions(x *explainer) roll.Options {
	return roll.Options{
		Explain: func(ctx context.Context, s roll.Spec, st roll.State, in roll.Instance) (string, error) {
			return x.explain(ctx, st.Template, in.Version, st.Version)
		},
		Drain:     nodeplan.DrainRequest{Timeout: e.opts.DrainTimeout, Force: e.opts.DrainForce},
		BootGrace: e.opts.BootGrace,
		Poll:      e.opts.RollPoll,
		Now:       e.opts.Now,
		Report:    e.reportMachine,
	}
}

// reportMachine turns a roll event into an engine event: one line per
// machine step, "<stack> <instance> <phase>: <message>".
func (e *Engine) reportMachine(ev roll.Event) {
	e.report(Event{Time: ev.Time, Kind: EventMachine, Stack: ev.Stack, Instance: ev.Instance, Address: ev.Address,
		Phase: string(ev.Phase), Message: ev.Message})
}

// rollCluster replaces every out-of-date machine (package roll), after
// the stacks are deployed.
func (e *Engine) rollCluster(ctx context.Context, p *prepared) (roll.Summary, error) {
	specs, err := e.rollSpecs(ctx, p)
	if err != nil {
		return roll.Summary{}, err
	}
	return roll.Run(ctx, &fleet{e: e, p: p}, specs, e.rollOptions(newExplainer(e, p)))
}

// fleet is roll.Fleet on AWS: Auto Scaling for groups, EC2 for instances
// and drain requests (a tag), S3 for machines' and drains' status objects.
type fleet struct {
	e *Engine
	p *prepared
}

func (f *fleet) State(ctx context.Context, group string) (roll.State, error) {
	out, err := f.e.asg.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{group}})
	if err != nil {
		return roll.State{}, fmt.Errorf("describing auto scaling group %s: %w", group, err)
	}
	if len(out.AutoScalingGroups) == 0 {
		return roll.State{}, fmt.Errorf("auto scaling group %s does not exist: run kube-aws up again", group)
	}
	g := out.AutoScalingGroups[0]
	st := roll.State{Min: int(aws.ToInt32(g.MinSize)), Max: int(aws.ToInt32(g.MaxSize)), Desired: int(aws.ToInt32(g.DesiredCapacity))}
	if g.LaunchTemplate != nil {
		st.Template = aws.ToString(g.LaunchTemplate.LaunchTemplateId)
		st.Version = aws.ToString(g.LaunchTemplate.Version)
	}
	var ids []string
	for _, i := range g.Instances {
		in := roll.Instance{ID: aws.ToString(i.InstanceId), Lifecycle: string(i.LifecycleState)}
		if i.LaunchTemplate != nil {
			in.Version = aws.ToString(i.LaunchTemplate.Version)
		}
		st.Instances = append(st.Instances, in)
		ids = append(ids, in.ID)
	}
	if len(ids) == 0 {
		return st, nil
	}
	// Launch times and addresses; a filter, so an instance gone since the
	// group was read is left out rather than failing the call.
	byID := map[string]ec2types.Instance{}
	pg := ec2.NewDescribeInstancesPaginator(f.e.ec2, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("instance-id"), Values: ids}}})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return roll.State{}, fmt.Errorf("describing the instances of group %s: %w", group, err)
		}
		for _, r := range page.Reservations {
			for _, i := range r.Instances {
				byID[aws.ToString(i.InstanceId)] = i
			}
		}
	}
	for k := range st.Instances {
		if i, ok := byID[st.Instances[k].ID]; ok {
			st.Instances[k].Launched = aws.ToTime(i.LaunchTime)
			st.Instances[k].Address = aws.ToString(i.PrivateIpAddress)
		}
	}
	return st, nil
}

func (f *fleet) SetDesired(ctx context.Context, group string, n int) error {
	_, err := f.e.asg.SetDesiredCapacity(ctx, &autoscaling.SetDesiredCapacityInput{AutoScalingGroupName: aws.String(group), DesiredCapacity: aws.Int32(int32(n)), HonorCooldown: aws.Bool(false)})
	if err != nil {
		return fmt.Errorf("setting the desired capacity of %s to %d: %w", group, n, err)
	}
	return nil
}

func (f *fleet) Terminate(ctx context.Context, instance string, decrement bool) error {
	_, err := f.e.asg.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{InstanceId: aws.String(instance), ShouldDecrementDesiredCapacity: aws.Bool(decrement)})
	if err != nil {
		return fmt.Errorf("terminating %s: %w", instance, err)
	}
	return nil
}

func (f *fleet) RequestDrain(ctx context.Context, instance string, r nodeplan.DrainRequest) error {
	_, err := f.e.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{instance}, Tags: []ec2types.Tag{{Key: aws.String(nodeplan.DrainTag), Value: aws.String(r.String())}}})
	if err != nil {
		return fmt.Errorf("asking for the drain of %s (tag %s): %w", instance, nodeplan.DrainTag, err)
	}
	return nil
}

func (f *fleet) WithdrawDrain(ctx context.Context, instance string) error {
	_, err := f.e.ec2.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{instance}, Tags: []ec2types.Tag{{Key: aws.String(nodeplan.DrainTag)}}})
	return err
}

func (f *fleet) Status(ctx context.Context, role, instance string) (*nodeplan.Status, error) {
	return f.e.readStatus(ctx, f.p, role, instance)
}

func (f *fleet) DrainStatus(ctx context.Context, instance string) (*nodeplan.DrainStatus, error) {
	var ds nodeplan.DrainStatus
	ok, err := f.e.readJSON(ctx, f.p, nodeplan.DrainStatusKey(instance), &ds)
	if err != nil || !ok {
		return nil, err
	}
	return &ds, nil
}

// Serving reads the health of the instance in every load balancer of its
// group: a classic load balancer's InService, a target group's healthy.
func (f *fleet) Serving(ctx context.Context, group, instance string) (bool, string, error) {
	out, err := f.e.asg.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{group}})
	if err != nil {
		return false, "", fmt.Errorf("describing auto scaling group %s: %w", group, err)
	}
	if len(out.AutoScalingGroups) == 0 {
		return false, "", fmt.Errorf("auto scaling group %s does not exist", group)
	}
	g := out.AutoScalingGroups[0]
	for _, lb := range g.LoadBalancerNames {
		h, err := f.e.elb.DescribeInstanceHealth(ctx, &elb.DescribeInstanceHealthInput{LoadBalancerName: aws.String(lb), Instances: []elbtypes.Instance{{InstanceId: aws.String(instance)}}})
		if err != nil {
			return false, "", fmt.Errorf("reading the health of %s in load balancer %s: %w", instance, lb, err)
		}
		for _, s := range h.InstanceStates {
			if aws.ToString(s.State) != "InService" {
				return false, fmt.Sprintf("load balancer %s: %s %s", lb, aws.ToString(s.State), aws.ToString(s.Description)), nil
			}
		}
	}
	for _, tg := range g.TargetGroupARNs {
		h, err := f.e.elbv2.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: aws.String(tg), Targets: []elbv2types.TargetDescription{{Id: aws.String(instance)}}})
		if err != nil {
			return false, "", fmt.Errorf("reading the health of %s in target group %s: %w", instance, tg, err)
		}
		for _, d := range h.TargetHealthDescriptions {
			if th := d.TargetHealth; th == nil || th.State != elbv2types.TargetHealthStateEnumHealthy {
				state, why := "unknown", ""
				if th != nil {
					state, why = string(th.State), aws.ToString(th.Description)
				}
				return false, fmt.Sprintf("target group %s: %s %s", tg, state, why), nil
			}
		}
	}
	return true, "", nil
}

// readJSON reads a JSON object under the cluster's prefix; false when
// there is none.
func (e *Engine) readJSON(ctx context.Context, p *prepared, rel string, v any) (bool, error) {
	key := p.loc.key(rel)
	out, err := e.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(p.loc.Bucket), Key: aws.String(key)})
	if err != nil {
		if apiCode(err) == "NoSuchKey" {
			return false, nil
		}
		return false, fmt.Errorf("reading s3://%s/%s: %w", p.loc.Bucket, key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return false, fmt.Errorf("reading s3://%s/%s: %w", p.loc.Bucket, key, err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("s3://%s/%s is not what kube-aws-node writes: %w", p.loc.Bucket, key, err)
	}
	return true, nil
}

// desiredCapacity is the DesiredCapacity a template gives a group; 0 when
// it gives none.
func (t *template) desiredCapacity(logicalID string) int {
	r, ok := t.Resources[logicalID]
	if !ok {
		return 0
	}
	var props struct {
		DesiredCapacity json.RawMessage `json:"DesiredCapacity"`
	}
	if err := json.Unmarshal(r.Properties, &props); err != nil {
		return 0
	}
	var s string
	if json.Unmarshal(props.DesiredCapacity, &s) == nil {
		n, _ := strconv.Atoi(s)
		return n
	}
	var n int
	_ = json.Unmarshal(props.DesiredCapacity, &n)
	return n
}

// isRollError says whether err stopped a roll at a machine.
func isRollError(err error) bool {
	var re *roll.Error
	return errors.As(err, &re)
}
