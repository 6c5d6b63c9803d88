package awstest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
)

// clients are the APIs the tests drive, against one moto.
type clients struct {
	cf  *cloudformation.Client
	as  *autoscaling.Client
	ec2 *ec2.Client
	elb *elb.Client
	el2 *elbv2.Client
	iam *iam.Client
	s3  *s3.Client
	sts *sts.Client
	cfg aws.Config // for clients of other credentials (an assumed role's)
}

func newClients(url string) clients {
	cfg := aws.Config{Region: Region, Credentials: Credentials(), BaseEndpoint: aws.String(url)}
	return clients{cloudformation.NewFromConfig(cfg), autoscaling.NewFromConfig(cfg), ec2.NewFromConfig(cfg), elb.NewFromConfig(cfg), elbv2.NewFromConfig(cfg),
		iam.NewFromConfig(cfg), s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true }), sts.NewFromConfig(cfg), cfg}
}

func ref(n string) map[string]any { return map[string]any{"Ref": n} }

// stackSpec is what a test changes in groupStack.
type stackSpec struct {
	userData  string
	desired   int
	heartbeat int    // the termination hook's timeout in seconds; 0: no hook
	tag       string // the value of the group's tag "role"
}

// groupStack is a group of instances in one zone behind a classic load
// balancer and a target group, launched from a launch template at its
// latest version (as kube-aws renders its groups), with a termination hook.
func groupStack(s stackSpec) string {
	group := map[string]any{
		"MinSize": "0", "MaxSize": "6", "DesiredCapacity": fmt.Sprint(s.desired), "VPCZoneIdentifier": []any{ref("Subnet")},
		"LaunchTemplate":    map[string]any{"LaunchTemplateId": ref("LT"), "Version": map[string]any{"Fn::GetAtt": []string{"LT", "LatestVersionNumber"}}},
		"LoadBalancerNames": []any{ref("CLB")}, "TargetGroupARNs": []any{ref("TG")},
		"Tags": []any{map[string]any{"Key": "role", "Value": s.tag, "PropagateAtLaunch": true}},
	}
	if s.heartbeat > 0 {
		group["LifecycleHookSpecificationList"] = []any{map[string]any{
			"LifecycleHookName": "drain", "LifecycleTransition": "autoscaling:EC2_INSTANCE_TERMINATING",
			"HeartbeatTimeout": s.heartbeat, "DefaultResult": "CONTINUE", "NotificationMetadata": "timeout=5m0s"}}
	}
	t := map[string]any{"Resources": map[string]any{
		"VPC":    map[string]any{"Type": "AWS::EC2::VPC", "Properties": map[string]any{"CidrBlock": "10.9.0.0/16"}},
		"Subnet": map[string]any{"Type": "AWS::EC2::Subnet", "Properties": map[string]any{"VpcId": ref("VPC"), "CidrBlock": "10.9.1.0/24", "AvailabilityZone": "us-east-1a"}},
		"CLB": map[string]any{"Type": "AWS::ElasticLoadBalancing::LoadBalancer", "Properties": map[string]any{
			"Subnets": []any{ref("Subnet")}, "Listeners": []any{map[string]any{"LoadBalancerPort": "443", "InstancePort": "6443", "Protocol": "TCP"}}}},
		"TG": map[string]any{"Type": "AWS::ElasticLoadBalancingV2::TargetGroup", "Properties": map[string]any{"Port": 8080, "Protocol": "HTTP", "VpcId": ref("VPC")}},
		"LT": map[string]any{"Type": "AWS::EC2::LaunchTemplate", "Properties": map[string]any{"LaunchTemplateData": map[string]any{
			"ImageId": "ami-12c6146b", "InstanceType": "t3.small", "UserData": map[string]any{"Fn::Base64": s.userData}}}},
		"Group": map[string]any{"Type": "AWS::AutoScaling::AutoScalingGroup", "Properties": group},
	}}
	b, _ := json.Marshal(t)
	return string(b)
}

// member is one instance as Auto Scaling and EC2 report it.
type member struct {
	state     string // lifecycle state
	version   string // the launch template version Auto Scaling reports
	ec2State  string
	ec2Tag    string // aws:ec2launchtemplate:version
	userData  string
	groupName string
}

// members reads every instance of the group, from DescribeAutoScalingGroups
// (checked against DescribeAutoScalingInstances) and EC2.
func (c clients) members(ctx context.Context, t *testing.T, group string) map[string]member {
	t.Helper()
	out, err := c.as.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{group}})
	if err != nil || len(out.AutoScalingGroups) != 1 {
		t.Fatalf("DescribeAutoScalingGroups %s: %v, %v", group, out, err)
	}
	ms := map[string]member{}
	for _, i := range out.AutoScalingGroups[0].Instances {
		m := member{state: string(i.LifecycleState), groupName: group}
		if i.LaunchTemplate != nil {
			m.version = aws.ToString(i.LaunchTemplate.Version)
		}
		ms[aws.ToString(i.InstanceId)] = m
	}
	if len(ms) == 0 {
		return ms
	}
	ids := slices.Sorted(func(yield func(string) bool) {
		for id := range ms {
			if !yield(id) {
				return
			}
		}
	})
	ai, err := c.as.DescribeAutoScalingInstances(ctx, &autoscaling.DescribeAutoScalingInstancesInput{InstanceIds: ids})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range ai.AutoScalingInstances {
		m := ms[aws.ToString(i.InstanceId)]
		v := ""
		if i.LaunchTemplate != nil {
			v = aws.ToString(i.LaunchTemplate.Version)
		}
		if aws.ToString(i.LifecycleState) != m.state || v != m.version {
			t.Errorf("instance %s: DescribeAutoScalingInstances says %s version %s, DescribeAutoScalingGroups %s version %s",
				aws.ToString(i.InstanceId), aws.ToString(i.LifecycleState), v, m.state, m.version)
		}
	}
	for id, m := range ms {
		m.ec2State, m.ec2Tag = c.instance(ctx, t, id)
		ud, err := c.ec2.DescribeInstanceAttribute(ctx, &ec2.DescribeInstanceAttributeInput{InstanceId: aws.String(id), Attribute: ec2types.InstanceAttributeNameUserData})
		if err != nil {
			t.Fatal(err)
		}
		if ud.UserData != nil {
			b, _ := base64.StdEncoding.DecodeString(aws.ToString(ud.UserData.Value))
			m.userData = string(b)
		}
		ms[id] = m
	}
	return ms
}

// instance returns an instance's EC2 state and aws:ec2launchtemplate:version tag.
func (c clients) instance(ctx context.Context, t *testing.T, id string) (state, version string) {
	t.Helper()
	out, err := c.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil || len(out.Reservations) != 1 || len(out.Reservations[0].Instances) != 1 {
		t.Fatalf("DescribeInstances %s: %v, %v", id, out, err)
	}
	in := out.Reservations[0].Instances[0]
	for _, tag := range in.Tags {
		if aws.ToString(tag.Key) == "aws:ec2launchtemplate:version" {
			version = aws.ToString(tag.Value)
		}
	}
	return string(in.State.Name), version
}

// balanced returns the instances registered with the stack's classic load
// balancer and its target group.
func (c clients) balanced(ctx context.Context, t *testing.T, stack string) (classic, targets []string) {
	t.Helper()
	res := func(logical string) string {
		out, err := c.cf.DescribeStackResource(ctx, &cloudformation.DescribeStackResourceInput{StackName: aws.String(stack), LogicalResourceId: aws.String(logical)})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.StackResourceDetail.PhysicalResourceId)
	}
	lb, err := c.elb.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{LoadBalancerNames: []string{res("CLB")}})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range lb.LoadBalancerDescriptions[0].Instances {
		classic = append(classic, aws.ToString(i.InstanceId))
	}
	th, err := c.el2.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: aws.String(res("TG"))})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range th.TargetHealthDescriptions {
		targets = append(targets, aws.ToString(d.Target.Id))
	}
	sort.Strings(classic)
	sort.Strings(targets)
	return classic, targets
}

func (c clients) groupOf(ctx context.Context, t *testing.T, stack string) string {
	t.Helper()
	out, err := c.cf.DescribeStackResource(ctx, &cloudformation.DescribeStackResourceInput{StackName: aws.String(stack), LogicalResourceId: aws.String("Group")})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.StackResourceDetail.PhysicalResourceId)
}

func (c clients) createStack(ctx context.Context, t *testing.T, name string, s stackSpec) string {
	t.Helper()
	if _, err := c.cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String(name), TemplateBody: aws.String(groupStack(s))}); err != nil {
		t.Fatal(err)
	}
	return c.groupOf(ctx, t, name)
}

// updateStack updates the stack through a change set, as kube-aws deploys,
// and returns the change set's resource changes (action logical-id).
func (c clients) updateStack(ctx context.Context, t *testing.T, name string, s stackSpec) []string {
	t.Helper()
	cs := fmt.Sprintf("u%d", time.Now().UnixNano())
	if _, err := c.cf.CreateChangeSet(ctx, &cloudformation.CreateChangeSetInput{StackName: aws.String(name), ChangeSetName: aws.String(cs),
		ChangeSetType: cftypes.ChangeSetTypeUpdate, TemplateBody: aws.String(groupStack(s))}); err != nil {
		t.Fatal(err)
	}
	d, err := c.cf.DescribeChangeSet(ctx, &cloudformation.DescribeChangeSetInput{StackName: aws.String(name), ChangeSetName: aws.String(cs)})
	if err != nil {
		t.Fatal(err)
	}
	var changes []string
	for _, ch := range d.Changes {
		changes = append(changes, string(ch.ResourceChange.Action)+" "+aws.ToString(ch.ResourceChange.LogicalResourceId))
	}
	if _, err := c.cf.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{StackName: aws.String(name), ChangeSetName: aws.String(cs)}); err != nil {
		t.Fatal(err)
	}
	return changes
}

// validationError checks that err is AWS's ValidationError saying want.
func validationError(t *testing.T, what string, err error, want string) {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "ValidationError" || !strings.Contains(ae.ErrorMessage(), want) {
		t.Errorf("%s: %v; want a ValidationError saying %q", what, err, want)
	}
}

func byState(ms map[string]member, state string) []string {
	var ids []string
	for id, m := range ms {
		if m.state == state {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// TestMotoPlaysAWS drives, through the AWS SDK, each behaviour the patched
// moto plays as AWS does (motoaws.py), on one server reset between cases.
func TestMotoPlaysAWS(t *testing.T) {
	url := Start(t)
	ctx := context.Background()
	if err := WarmUp(ctx, url); err != nil {
		t.Fatal(err)
	}
	c := newClients(url)
	for _, tc := range []struct {
		name string
		run  func(context.Context, *testing.T, clients)
	}{
		{"CloudFormation updates a group in place", testUpdateInPlace},
		{"scale-in waits for the termination hook", testScaleInWaits},
		{"TerminateInstanceInAutoScalingGroup waits and replaces", testTerminateInGroup},
		{"heartbeat timeout applies the default result", testHeartbeatTimeout},
		{"EC2 TerminateInstances terminates at once", testDirectTerminate},
		{"CloudFormation creates, updates and deletes an IAM OIDC provider", testOIDCProviderStack},
		{"STS AssumeRoleWithWebIdentity verifies the token and the trust policy", testWebIdentity},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := Reset(ctx, url); err != nil {
				t.Fatal(err)
			}
			tc.run(ctx, t, c)
		})
	}
}

// testUpdateInPlace: a stack update with a new launch template version and a
// larger group keeps the group (its name, its instances and the version
// they were launched from); the new instance is launched from the new
// version, with its user data, and joins the load balancers.
func testUpdateInPlace(ctx context.Context, t *testing.T, c clients) {
	group := c.createStack(ctx, t, "roll", stackSpec{userData: "v1", desired: 2, heartbeat: 60, tag: "a"})
	before := c.members(ctx, t, group)
	if len(before) != 2 {
		t.Fatalf("instances %v, want 2", before)
	}
	for id, m := range before {
		if m.state != "InService" || m.version != "1" || m.ec2Tag != "1" || m.ec2State != "running" || m.userData != "v1" {
			t.Errorf("instance %s before the update: %+v", id, m)
		}
	}
	changes := c.updateStack(ctx, t, "roll", stackSpec{userData: "v2", desired: 3, heartbeat: 60, tag: "b"})
	// AWS lists the group: the version it reads from the template changed.
	if !slices.Contains(changes, "Modify LT") || !slices.Contains(changes, "Modify Group") {
		t.Errorf("change set %v, want the template and the group modified", changes)
	}
	if got := c.groupOf(ctx, t, "roll"); got != group {
		t.Fatalf("the stack's group is %s after the update, was %s: replaced, not updated in place", got, group)
	}
	g, err := c.as.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{})
	if err != nil || len(g.AutoScalingGroups) != 1 {
		t.Fatalf("groups %v, %v; want the one", g, err)
	}
	if v := aws.ToString(g.AutoScalingGroups[0].LaunchTemplate.Version); v != "2" || aws.ToInt32(g.AutoScalingGroups[0].DesiredCapacity) != 3 {
		t.Errorf("group's launch template version %s, desired %d; want 2 and 3", v, aws.ToInt32(g.AutoScalingGroups[0].DesiredCapacity))
	}
	if tags := g.AutoScalingGroups[0].Tags; len(tags) != 1 || aws.ToString(tags[0].Value) != "b" {
		t.Errorf("group tags %v, want role=b", tags)
	}
	after := c.members(ctx, t, group)
	if len(after) != 3 {
		t.Fatalf("instances after the update %v, want the 2 of before and 1 new", after)
	}
	for id, m := range after {
		want := member{state: "InService", version: "2", ec2State: "running", ec2Tag: "2", userData: "v2", groupName: group}
		if _, old := before[id]; old {
			want.version, want.ec2Tag, want.userData = "1", "1", "v1"
		}
		if m != want {
			t.Errorf("instance %s after the update: %+v, want %+v", id, m, want)
		}
	}
	classic, targets := c.balanced(ctx, t, "roll")
	if all := slices.Sorted(mapKeys(after)); !slices.Equal(classic, all) || !slices.Equal(targets, all) {
		t.Errorf("load balancer %v, target group %v; want every instance %v", classic, targets, all)
	}
	hooks, err := c.as.DescribeLifecycleHooks(ctx, &autoscaling.DescribeLifecycleHooksInput{AutoScalingGroupName: aws.String(group)})
	if err != nil || len(hooks.LifecycleHooks) != 1 || aws.ToInt32(hooks.LifecycleHooks[0].HeartbeatTimeout) != 60 ||
		aws.ToString(hooks.LifecycleHooks[0].NotificationMetadata) != "timeout=5m0s" {
		t.Errorf("hooks %v, %v; want the template's one, with its metadata", hooks, err)
	}
	// The template's hook list is the group's: a hook it drops is deleted.
	c.updateStack(ctx, t, "roll", stackSpec{userData: "v2", desired: 3, tag: "b"})
	hooks, err = c.as.DescribeLifecycleHooks(ctx, &autoscaling.DescribeLifecycleHooksInput{AutoScalingGroupName: aws.String(group)})
	if err != nil || len(hooks.LifecycleHooks) != 0 {
		t.Errorf("hooks after the template dropped them: %v, %v", hooks, err)
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// testScaleInWaits: a smaller desired capacity takes an instance out of its
// load balancers into Terminating:Wait, still running, until
// CompleteLifecycleAction; heartbeats and completion find it by instance id.
func testScaleInWaits(ctx context.Context, t *testing.T, c clients) {
	group := c.createStack(ctx, t, "pool", stackSpec{userData: "v1", desired: 2, heartbeat: 600, tag: "a"})
	// A new version first: scale-in picks the instance not on the group's
	// current version.
	c.updateStack(ctx, t, "pool", stackSpec{userData: "v2", desired: 3, heartbeat: 600, tag: "a"})
	before := c.members(ctx, t, group)
	var newest string
	for id, m := range before {
		if m.version == "2" {
			newest = id
		}
	}
	c.updateStack(ctx, t, "pool", stackSpec{userData: "v2", desired: 2, heartbeat: 600, tag: "a"})
	ms := c.members(ctx, t, group)
	waiting := byState(ms, "Terminating:Wait")
	if len(ms) != 3 || len(waiting) != 1 || len(byState(ms, "InService")) != 2 {
		t.Fatalf("after scaling in to 2: %+v; want one of 3 in Terminating:Wait and no replacement", ms)
	}
	w := waiting[0]
	if ms[w].version != "1" || ms[w].ec2State != "running" {
		t.Errorf("the waiting instance %s: %+v; want one of version 1, still running", w, ms[w])
	}
	if ms[newest].state != "InService" {
		t.Errorf("the instance of the current version %s is %s", newest, ms[newest].state)
	}
	if classic, targets := c.balanced(ctx, t, "pool"); slices.Contains(classic, w) || slices.Contains(targets, w) || len(classic) != 2 || len(targets) != 2 {
		t.Errorf("load balancer %v, target group %v; want the two in service only (%s left them)", classic, targets, w)
	}
	if _, err := c.as.RecordLifecycleActionHeartbeat(ctx, &autoscaling.RecordLifecycleActionHeartbeatInput{
		AutoScalingGroupName: aws.String(group), LifecycleHookName: aws.String("drain"), InstanceId: aws.String(w)}); err != nil {
		t.Errorf("heartbeat: %v", err)
	}
	inService := byState(ms, "InService")[0]
	_, err := c.as.CompleteLifecycleAction(ctx, &autoscaling.CompleteLifecycleActionInput{AutoScalingGroupName: aws.String(group),
		LifecycleHookName: aws.String("drain"), LifecycleActionResult: aws.String("CONTINUE"), InstanceId: aws.String(inService)})
	validationError(t, "completing an action of an instance in service", err, "No active Lifecycle Action found with instance ID "+inService)
	_, err = c.as.CompleteLifecycleAction(ctx, &autoscaling.CompleteLifecycleActionInput{AutoScalingGroupName: aws.String(group),
		LifecycleHookName: aws.String("drain"), LifecycleActionResult: aws.String("CONTINUE"), LifecycleActionToken: aws.String("not-a-token")})
	validationError(t, "completing by an unknown token", err, "No active Lifecycle Action found with token not-a-token")
	_, err = c.as.CompleteLifecycleAction(ctx, &autoscaling.CompleteLifecycleActionInput{AutoScalingGroupName: aws.String(group),
		LifecycleHookName: aws.String("nope"), LifecycleActionResult: aws.String("CONTINUE"), InstanceId: aws.String(w)})
	validationError(t, "completing for a hook the group lacks", err, "No Lifecycle Hook found")
	if ms := c.members(ctx, t, group); ms[w].state != "Terminating:Wait" || ms[w].ec2State != "running" {
		t.Fatalf("after a heartbeat and refused completions, %s is %+v; want it still waiting, running", w, ms[w])
	}
	if _, err := c.as.CompleteLifecycleAction(ctx, &autoscaling.CompleteLifecycleActionInput{AutoScalingGroupName: aws.String(group),
		LifecycleHookName: aws.String("drain"), LifecycleActionResult: aws.String("CONTINUE"), InstanceId: aws.String(w)}); err != nil {
		t.Fatal(err)
	}
	ms = c.members(ctx, t, group)
	if _, in := ms[w]; in || len(ms) != 2 {
		t.Errorf("after CompleteLifecycleAction the group holds %+v; want %s gone", ms, w)
	}
	if st, _ := c.instance(ctx, t, w); st != "terminated" {
		t.Errorf("%s is %s after CompleteLifecycleAction, want terminated", w, st)
	}
}

// testTerminateInGroup: with a hook put by PutLifecycleHook, an instance
// terminated through Auto Scaling without decrement waits while its
// replacement is launched at once; ABANDON ends the wait too. A decrement
// below the minimum size, and a second termination, are refused.
func testTerminateInGroup(ctx context.Context, t *testing.T, c clients) {
	group := c.createStack(ctx, t, "ctl", stackSpec{userData: "v1", desired: 2, tag: "a"})
	if _, err := c.as.UpdateAutoScalingGroup(ctx, &autoscaling.UpdateAutoScalingGroupInput{AutoScalingGroupName: aws.String(group), MinSize: aws.Int32(2)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.as.PutLifecycleHook(ctx, &autoscaling.PutLifecycleHookInput{AutoScalingGroupName: aws.String(group), LifecycleHookName: aws.String("drain"),
		LifecycleTransition: aws.String("autoscaling:EC2_INSTANCE_TERMINATING"), HeartbeatTimeout: aws.Int32(600)}); err != nil {
		t.Fatal(err)
	}
	ms := c.members(ctx, t, group)
	victim := slices.Sorted(mapKeys(ms))[0]
	_, err := c.as.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{InstanceId: aws.String(victim), ShouldDecrementDesiredCapacity: aws.Bool(true)})
	validationError(t, "a decrement below the minimum size", err, "desiredSize equals minSize (2)")
	_, err = c.as.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{InstanceId: aws.String("i-0123456789abcdef0"), ShouldDecrementDesiredCapacity: aws.Bool(false)})
	validationError(t, "an instance of no group", err, "No managed instance found for instance ID: i-0123456789abcdef0")
	out, err := c.as.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{InstanceId: aws.String(victim), ShouldDecrementDesiredCapacity: aws.Bool(false)})
	if err != nil || out.Activity == nil {
		t.Fatalf("TerminateInstanceInAutoScalingGroup: %v, %v", out, err)
	}
	ms = c.members(ctx, t, group)
	if ms[victim].state != "Terminating:Wait" || ms[victim].ec2State != "running" || len(byState(ms, "InService")) != 2 {
		t.Fatalf("after terminating %s: %+v; want it waiting, running, and a replacement in service", victim, ms)
	}
	_, err = c.as.TerminateInstanceInAutoScalingGroup(ctx, &autoscaling.TerminateInstanceInAutoScalingGroupInput{InstanceId: aws.String(victim), ShouldDecrementDesiredCapacity: aws.Bool(false)})
	validationError(t, "terminating a terminating instance", err, "already Terminating:Wait")
	if _, err := c.as.CompleteLifecycleAction(ctx, &autoscaling.CompleteLifecycleActionInput{AutoScalingGroupName: aws.String(group),
		LifecycleHookName: aws.String("drain"), LifecycleActionResult: aws.String("ABANDON"), InstanceId: aws.String(victim)}); err != nil {
		t.Fatal(err)
	}
	ms = c.members(ctx, t, group)
	if _, in := ms[victim]; in || len(byState(ms, "InService")) != 2 {
		t.Errorf("after ABANDON the group holds %+v; want %s gone and two in service", ms, victim)
	}
	if st, _ := c.instance(ctx, t, victim); st != "terminated" {
		t.Errorf("%s is %s after ABANDON, want terminated", victim, st)
	}
}

// testHeartbeatTimeout: an action nobody completes ends when its heartbeat
// timeout passes, with the hook's default result; a heartbeat restarts the
// timeout. (AWS's least timeout is 30 s; moto takes 3 to keep this short.)
func testHeartbeatTimeout(ctx context.Context, t *testing.T, c clients) {
	const timeout = 3 * time.Second
	group := c.createStack(ctx, t, "hb", stackSpec{userData: "v1", desired: 1, heartbeat: int(timeout / time.Second), tag: "a"})
	id := slices.Sorted(mapKeys(c.members(ctx, t, group)))[0]
	start := time.Now()
	if _, err := c.as.SetDesiredCapacity(ctx, &autoscaling.SetDesiredCapacityInput{AutoScalingGroupName: aws.String(group), DesiredCapacity: aws.Int32(0)}); err != nil {
		t.Fatal(err)
	}
	if ms := c.members(ctx, t, group); ms[id].state != "Terminating:Wait" {
		t.Fatalf("after scaling to 0, %s is %+v; want it waiting", id, ms[id])
	}
	time.Sleep(time.Until(start.Add(2 * time.Second)))
	beat := time.Now()
	if _, err := c.as.RecordLifecycleActionHeartbeat(ctx, &autoscaling.RecordLifecycleActionHeartbeatInput{
		AutoScalingGroupName: aws.String(group), LifecycleHookName: aws.String("drain"), InstanceId: aws.String(id)}); err != nil {
		t.Fatal(err)
	}
	// Past the first timeout, within the one the heartbeat restarted.
	time.Sleep(time.Until(start.Add(timeout + time.Second/2)))
	if ms := c.members(ctx, t, group); ms[id].state != "Terminating:Wait" {
		t.Fatalf("%.1fs after the scale-in and %.1fs after a heartbeat, %s is %+v; want it still waiting",
			time.Since(start).Seconds(), time.Since(beat).Seconds(), id, ms[id])
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		ms := c.members(ctx, t, group)
		if _, in := ms[id]; !in {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still in the group %.1fs after its last heartbeat: %+v", id, time.Since(beat).Seconds(), ms[id])
		}
		time.Sleep(200 * time.Millisecond)
	}
	if since := time.Since(beat); since < timeout {
		t.Errorf("the action ended %.1fs after the heartbeat, before its timeout of %v", since.Seconds(), timeout)
	}
	if st, _ := c.instance(ctx, t, id); st != "terminated" {
		t.Errorf("%s is %s after its hook timed out (default CONTINUE), want terminated", id, st)
	}
}

// testDirectTerminate: EC2 TerminateInstances, not through Auto Scaling,
// ends the instance at once even with a termination hook; the group
// launches a replacement.
func testDirectTerminate(ctx context.Context, t *testing.T, c clients) {
	group := c.createStack(ctx, t, "ec2", stackSpec{userData: "v1", desired: 1, heartbeat: 600, tag: "a"})
	id := slices.Sorted(mapKeys(c.members(ctx, t, group)))[0]
	if _, err := c.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		t.Fatal(err)
	}
	if st, _ := c.instance(ctx, t, id); st != "terminated" {
		t.Errorf("%s is %s after TerminateInstances, want terminated", id, st)
	}
	ms := c.members(ctx, t, group)
	if _, in := ms[id]; in || len(byState(ms, "InService")) != 1 {
		t.Errorf("after TerminateInstances the group holds %+v; want %s gone and a replacement in service", ms, id)
	}
}

// TestLauncherRefusesAnotherMoto: the patches are for one moto; the launcher
// says what does not match and stops rather than patch a moto they were
// not checked against.
func TestLauncherRefusesAnotherMoto(t *testing.T) {
	py, err := PythonPath()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		files map[string]string // a fake moto package
		want  string
	}{
		{"another version", map[string]string{"__init__.py": "__version__ = \"9.9.9\"\n"},
			"moto 9.9.9 is installed, these patches are for moto 5.2.1"},
		{"a patched function gone", map[string]string{
			"__init__.py":             "__version__ = \"5.2.1\"\n",
			"autoscaling/models.py":   "class FakeAutoScalingGroup:\n    def set_desired_capacity(self): pass\n",
			"autoscaling/__init__.py": ""},
			"moto 5.2.1 has no FakeAutoScalingGroup.create_from_cloudformation_json"},
		{"a patched module gone", map[string]string{"__init__.py": "__version__ = \"5.2.1\"\n"},
			"moto 5.2.1 has no module moto.autoscaling.models"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := t.TempDir()
			for name, body := range tc.files {
				path := filepath.Join(fake, "moto", name)
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			cmd := motoCommand(py, "-H", "127.0.0.1", "-p", "1")
			cmd.Env = append(os.Environ(), "PYTHONPATH="+fake)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), tc.want) {
				t.Errorf("launcher: %v\n%s\nwant exit 2 saying %q", err, out, tc.want)
			}
		})
	}
}
