package cloud

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing/types"
)

// Mender does what AWS does and moto leaves out, so that what machines read
// from the EC2 API is what they would read on AWS:
//   - moto creates an AWS::EC2::Volume of a stack without the template's
//     Tags (it takes only Size and AvailabilityZone); machines find their
//     data volumes by tag, so the mender tags each such volume as its
//     template says (a tag whose value is a Ref gets the resource's id);
//   - moto's CloudFormation may create a stack's Auto Scaling group twice
//     and keep only one in the stack (seen with the control-plane group,
//     which names a classic load balancer): the other's instances would
//     boot as machines no stack owns. The mender deletes a group named
//     after a stack (<stack>-<logical id>-<suffix>, as CloudFormation
//     names them) that the stack does not list, and registers the
//     instances of the group the stack keeps with the classic load
//     balancers it names (moto registered the other group's), deregistering
//     instances no group of that balancer holds.
//
// It changes only what moto left out; it never touches what moto did set.
type Mender struct {
	cf   *cloudformation.Client
	ec2  *ec2.Client
	asg  *autoscaling.Client
	elb  *elb.Client
	mu   sync.Mutex
	done map[string]bool // stack id + last change time
	// groups are the Auto Scaling groups each stack (by name) lists.
	groups map[string]map[string]bool
	logf   func(string, ...any)
}

// NewMender returns a mender for the account cfg reaches; logf says what
// it changed.
func NewMender(cfg aws.Config, logf func(string, ...any)) *Mender {
	return &Mender{cf: cloudformation.NewFromConfig(cfg), ec2: ec2.NewFromConfig(cfg), asg: autoscaling.NewFromConfig(cfg), elb: elb.NewFromConfig(cfg),
		done: map[string]bool{}, groups: map[string]map[string]bool{}, logf: logf}
}

// Mend looks at every stack it has not seen in its current version, and at
// the groups and load balancers of snap (the reader's snapshot: the mender
// reads neither again). changed says that it changed what snap shows, so
// the caller reads again.
func (m *Mender) Mend(ctx context.Context, snap *Snapshot) (changed bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var stacks []string
	complete := map[string]bool{}
	p := cloudformation.NewDescribeStacksPaginator(m.cf, &cloudformation.DescribeStacksInput{})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return false, fmt.Errorf("mending moto: listing stacks: %w", err)
		}
		for _, s := range out.Stacks {
			stacks = append(stacks, aws.ToString(s.StackName))
			switch s.StackStatus {
			case "CREATE_COMPLETE", "UPDATE_COMPLETE":
				complete[aws.ToString(s.StackName)] = true
			default:
				continue
			}
			key := aws.ToString(s.StackId) + "@" + aws.ToTime(s.CreationTime).String() + "@" + aws.ToTime(s.LastUpdatedTime).String()
			if m.done[key] {
				continue
			}
			groups, err := m.tagVolumes(ctx, aws.ToString(s.StackId))
			if err != nil {
				return false, err
			}
			m.groups[aws.ToString(s.StackName)] = groups
			m.done[key] = true
		}
	}
	kept, dropped, err := m.dropOrphanGroups(ctx, snap.Groups, stacks, complete)
	if err != nil {
		return false, err
	}
	registered, err := m.registerGroups(ctx, kept, snap.LoadBalancers)
	return dropped || registered, err
}

// registerGroups makes each classic load balancer's instances those of the
// live groups that name it, as Auto Scaling keeps them on AWS; lbs says
// what each holds now. changed says that it registered or deregistered any.
func (m *Mender) registerGroups(ctx context.Context, groups []Group, lbs []LoadBalancer) (changed bool, err error) {
	want := map[string]map[string]bool{} // load balancer -> instances
	for _, g := range groups {
		for _, lb := range g.LoadBalancerNames {
			if want[lb] == nil {
				want[lb] = map[string]bool{}
			}
			for _, id := range g.Instances {
				want[lb][id] = true
			}
		}
	}
	for _, lb := range lbs {
		ids, ok := want[lb.Name]
		if !ok {
			continue
		}
		// A classic balancer's listeners all send to its instances.
		have := map[string]bool{}
		for _, l := range lb.Listeners {
			for _, t := range l.Targets {
				have[t.InstanceID] = true
			}
		}
		var add, drop []elbtypes.Instance
		for id := range have {
			if !ids[id] {
				drop = append(drop, elbtypes.Instance{InstanceId: aws.String(id)})
			}
		}
		for id := range ids {
			if !have[id] {
				add = append(add, elbtypes.Instance{InstanceId: aws.String(id)})
			}
		}
		if len(add) > 0 {
			if _, err := m.elb.RegisterInstancesWithLoadBalancer(ctx, &elb.RegisterInstancesWithLoadBalancerInput{LoadBalancerName: aws.String(lb.Name), Instances: add}); err != nil {
				return changed, fmt.Errorf("mending moto: registering %d instances with load balancer %s: %w", len(add), lb.Name, err)
			}
			m.logf("moto: registered %d instances of its groups with load balancer %s", len(add), lb.Name)
			changed = true
		}
		if len(drop) > 0 {
			if _, err := m.elb.DeregisterInstancesFromLoadBalancer(ctx, &elb.DeregisterInstancesFromLoadBalancerInput{LoadBalancerName: aws.String(lb.Name), Instances: drop}); err != nil {
				return changed, fmt.Errorf("mending moto: deregistering %d instances from load balancer %s: %w", len(drop), lb.Name, err)
			}
			m.logf("moto: deregistered %d instances no group of load balancer %s holds", len(drop), lb.Name)
			changed = true
		}
	}
	return changed, nil
}

// dropOrphanGroups deletes, with their instances, the Auto Scaling groups
// (of groups) named after a stack (the longest stack name that prefixes theirs: pool
// "a" and pool "a-b") that the stack does not list; a stack being created or
// updated may be making a group, so only complete stacks are judged.
func (m *Mender) dropOrphanGroups(ctx context.Context, groups []Group, stacks []string, complete map[string]bool) (kept []Group, dropped bool, err error) {
	for _, g := range groups {
		name := g.Name
		owner := ""
		for _, s := range stacks {
			if strings.HasPrefix(name, s+"-") && len(s) > len(owner) {
				owner = s
			}
		}
		listed, mended := m.groups[owner]
		if owner == "" || !mended || !complete[owner] || listed[name] {
			kept = append(kept, g)
			continue
		}
		// The listing may be stale: moto reports no LastUpdatedTime, so a
		// stack update that added a group (a new logical id, or a new
		// AutoScalingGroupName, which replaces a group on AWS too) leaves
		// the listing as it was. Ask the stack again.
		fresh, err := m.stackGroups(ctx, owner)
		if err != nil {
			return nil, dropped, err
		}
		m.groups[owner] = fresh
		if fresh[name] {
			kept = append(kept, g)
			continue
		}
		if _, err := m.asg.DeleteAutoScalingGroup(ctx, &autoscaling.DeleteAutoScalingGroupInput{AutoScalingGroupName: aws.String(name), ForceDelete: aws.Bool(true)}); err != nil {
			return nil, dropped, fmt.Errorf("mending moto: deleting Auto Scaling group %s, which stack %s does not list: %w", name, owner, err)
		}
		m.logf("moto: deleted Auto Scaling group %s (%d instances): stack %s does not list it", name, len(g.Instances), owner)
		dropped = true
	}
	return kept, dropped, nil
}

// stackGroups returns the Auto Scaling groups a stack lists now.
func (m *Mender) stackGroups(ctx context.Context, stack string) (map[string]bool, error) {
	resources, err := m.resources(ctx, stack)
	if err != nil {
		return nil, err
	}
	groups := map[string]bool{}
	for _, r := range resources {
		if aws.ToString(r.ResourceType) == "AWS::AutoScaling::AutoScalingGroup" {
			groups[aws.ToString(r.PhysicalResourceId)] = true
		}
	}
	return groups, nil
}

// resources lists a stack's resources.
func (m *Mender) resources(ctx context.Context, stack string) ([]cftypes.StackResourceSummary, error) {
	var out []cftypes.StackResourceSummary
	p := cloudformation.NewListStackResourcesPaginator(m.cf, &cloudformation.ListStackResourcesInput{StackName: aws.String(stack)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("mending moto: resources of %s: %w", stack, err)
		}
		out = append(out, page.StackResourceSummaries...)
	}
	return out, nil
}

// tagVolumes gives each volume of the stack the Tags its template names,
// and returns the Auto Scaling groups the stack lists.
func (m *Mender) tagVolumes(ctx context.Context, stack string) (map[string]bool, error) {
	resources, err := m.resources(ctx, stack)
	if err != nil {
		return nil, err
	}
	groups := map[string]bool{}
	volumes := map[string]string{}  // logical id -> volume id
	physical := map[string]string{} // logical id -> physical id, for Refs in tags
	for _, r := range resources {
		physical[aws.ToString(r.LogicalResourceId)] = aws.ToString(r.PhysicalResourceId)
		if aws.ToString(r.ResourceType) == "AWS::AutoScaling::AutoScalingGroup" {
			groups[aws.ToString(r.PhysicalResourceId)] = true
		}
		if aws.ToString(r.ResourceType) == "AWS::EC2::Volume" && aws.ToString(r.PhysicalResourceId) != "" {
			volumes[aws.ToString(r.LogicalResourceId)] = aws.ToString(r.PhysicalResourceId)
		}
	}
	if len(volumes) == 0 {
		return groups, nil
	}
	tpl, err := m.cf.GetTemplate(ctx, &cloudformation.GetTemplateInput{StackName: aws.String(stack)})
	if err != nil {
		return nil, fmt.Errorf("mending moto: template of %s: %w", stack, err)
	}
	var t struct {
		Resources map[string]struct {
			Properties struct {
				Tags []struct{ Key, Value any }
			}
		}
	}
	if err := json.Unmarshal([]byte(aws.ToString(tpl.TemplateBody)), &t); err != nil {
		return nil, fmt.Errorf("mending moto: template of %s is not JSON: %w", stack, err)
	}
	for logical, id := range volumes {
		var tags []ec2types.Tag
		for _, tag := range t.Resources[logical].Properties.Tags {
			k, kok := tag.Key.(string)
			v, vok := tag.Value.(string)
			if ref, isRef := tag.Value.(map[string]any); isRef && len(ref) == 1 {
				// {"Ref": resource}: the resource's id, as CloudFormation gives it.
				if name, ok := ref["Ref"].(string); ok && physical[name] != "" {
					v, vok = physical[name], true
				}
			}
			if kok && vok { // a tag built by another intrinsic function is left out
				tags = append(tags, ec2types.Tag{Key: aws.String(k), Value: aws.String(v)})
			}
		}
		if len(tags) == 0 {
			continue
		}
		if _, err := m.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: tags}); err != nil {
			return nil, fmt.Errorf("mending moto: tagging volume %s (%s of %s): %w", id, logical, stack, err)
		}
	}
	return groups, nil
}
