package cloud

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	astypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"

	"github.com/kube-aws/kube-aws/test/awstest"
)

func ref(n string) map[string]any { return map[string]any{"Ref": n} }

// template: a group of two behind a classic and an application load
// balancer, an instance profile in the launch template, a Route 53 record
// and a volume.
var template = map[string]any{
	"Resources": map[string]any{
		"VPC":    map[string]any{"Type": "AWS::EC2::VPC", "Properties": map[string]any{"CidrBlock": "10.7.0.0/16"}},
		"Subnet": map[string]any{"Type": "AWS::EC2::Subnet", "Properties": map[string]any{"VpcId": ref("VPC"), "CidrBlock": "10.7.3.0/24", "AvailabilityZone": "us-east-1c"}},
		"Role": map[string]any{"Type": "AWS::IAM::Role", "Properties": map[string]any{"RoleName": "node-role",
			"AssumeRolePolicyDocument": map[string]any{"Version": "2012-10-17", "Statement": []any{map[string]any{
				"Effect": "Allow", "Principal": map[string]any{"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}}}}},
		"Profile": map[string]any{"Type": "AWS::IAM::InstanceProfile", "Properties": map[string]any{"Roles": []any{ref("Role")}}},
		"LT": map[string]any{"Type": "AWS::EC2::LaunchTemplate", "Properties": map[string]any{"LaunchTemplateData": map[string]any{
			"ImageId": "ami-12c6146b", "InstanceType": "t3.small",
			"IamInstanceProfile": map[string]any{"Arn": map[string]any{"Fn::GetAtt": []string{"Profile", "Arn"}}},
			"MetadataOptions":    map[string]any{"HttpTokens": "required", "HttpPutResponseHopLimit": 2},
			"UserData":           map[string]any{"Fn::Base64": "#!/bin/sh\necho hello\n"}}}},
		"CLB": map[string]any{"Type": "AWS::ElasticLoadBalancing::LoadBalancer", "Properties": map[string]any{
			"Subnets": []any{ref("Subnet")}, "Listeners": []any{map[string]any{"LoadBalancerPort": "443", "InstancePort": "6443", "Protocol": "TCP"}}}},
		"ALB": map[string]any{"Type": "AWS::ElasticLoadBalancingV2::LoadBalancer", "Properties": map[string]any{"Subnets": []any{ref("Subnet")}}},
		"TG":  map[string]any{"Type": "AWS::ElasticLoadBalancingV2::TargetGroup", "Properties": map[string]any{"Port": 8080, "Protocol": "HTTP", "VpcId": ref("VPC")}},
		"Listener": map[string]any{"Type": "AWS::ElasticLoadBalancingV2::Listener", "Properties": map[string]any{
			"LoadBalancerArn": ref("ALB"), "Port": 80, "Protocol": "HTTP",
			"DefaultActions": []any{map[string]any{"Type": "forward", "TargetGroupArn": ref("TG")}}}},
		"Group": map[string]any{"Type": "AWS::AutoScaling::AutoScalingGroup", "Properties": map[string]any{
			"MinSize": "2", "MaxSize": "2", "DesiredCapacity": "2", "VPCZoneIdentifier": []any{ref("Subnet")},
			"LaunchTemplate":    map[string]any{"LaunchTemplateId": ref("LT"), "Version": map[string]any{"Fn::GetAtt": []string{"LT", "LatestVersionNumber"}}},
			"LoadBalancerNames": []any{ref("CLB")}, "TargetGroupARNs": []any{ref("TG")}}},
		"Zone": map[string]any{"Type": "AWS::Route53::HostedZone", "Properties": map[string]any{"Name": "c.internal"}},
		"Rec": map[string]any{"Type": "AWS::Route53::RecordSet", "Properties": map[string]any{"HostedZoneId": ref("Zone"),
			"Name": "api.c.internal", "Type": "CNAME", "TTL": "60", "ResourceRecords": []any{map[string]any{"Fn::GetAtt": []string{"CLB", "DNSName"}}}}},
		"Vol": map[string]any{"Type": "AWS::EC2::Volume", "Properties": map[string]any{"AvailabilityZone": "us-east-1c", "Size": 3}},
	},
	"Outputs": map[string]any{"Vol": map[string]any{"Value": ref("Vol")}},
}

// stackOfTemplate starts moto and makes stack "c" of template in it.
func stackOfTemplate(t *testing.T) (aws.Config, *cloudformation.Client) {
	t.Helper()
	url := awstest.Start(t)
	cfg := aws.Config{Region: awstest.Region, Credentials: awstest.Credentials(), BaseEndpoint: aws.String(url)}
	body, _ := json.Marshal(template)
	cf := cloudformation.NewFromConfig(cfg)
	if _, err := cf.CreateStack(context.Background(), &cloudformation.CreateStackInput{StackName: aws.String("c"), TemplateBody: aws.String(string(body)),
		Capabilities: []cftypes.Capability{cftypes.CapabilityCapabilityNamedIam}}); err != nil {
		t.Fatal(err)
	}
	return cfg, cf
}

// TestRead: a snapshot of what moto made from a stack holds everything the
// harness plays, read the way moto stores it.
func TestRead(t *testing.T) {
	ctx := context.Background()
	cfg, cf := stackOfTemplate(t)
	out, err := cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String("c")})
	if err != nil || out.Stacks[0].StackStatus != cftypes.StackStatusCreateComplete {
		t.Fatalf("stack: %v %v", out, err)
	}
	vol := aws.ToString(out.Stacks[0].Outputs[0].OutputValue)
	r := NewReader(cfg)
	s, err := r.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Instances) != 2 {
		t.Fatalf("instances %v, want the group's two", s.Instances)
	}
	var first *Instance
	for _, in := range s.Instances {
		first = in
		sn, ok := s.Subnets[in.SubnetID]
		switch {
		case !ok || sn.CIDR.String() != "10.7.3.0/24" || !sn.CIDR.Contains(in.PrivateIP):
			t.Errorf("%s: address %v in subnet %+v", in.ID, in.PrivateIP, sn)
		case sn.Gateway().String() != "10.7.3.1" || s.VPCs[sn.VPCID].DNS().String() != "10.7.0.2":
			t.Errorf("gateway %v, VPC resolver %v", sn.Gateway(), s.VPCs[sn.VPCID].DNS())
		case string(in.UserData) != "#!/bin/sh\necho hello\n":
			t.Errorf("%s: user data %q", in.ID, in.UserData)
		case in.Role != "node-role" || in.RoleARN == "" || in.ProfileARN == "":
			t.Errorf("%s: role %q %q profile %q", in.ID, in.Role, in.RoleARN, in.ProfileARN)
		case in.HopLimit != 2:
			t.Errorf("%s: metadata hop limit %d, want the launch template's 2", in.ID, in.HopLimit)
		case !in.Running() || in.Zone != "us-east-1c" || in.Group == "" || in.Version != "1" || in.Lifecycle != "InService" || in.RootDevice == "":
			t.Errorf("%s: %+v", in.ID, in)
		}
	}
	var classic, v2 bool
	for _, lb := range s.LoadBalancers {
		for _, l := range lb.Listeners {
			switch {
			case l.Port == 443 && len(l.Targets) == 2 && l.Targets[0].Port == 6443:
				classic = true
			case l.Port == 80 && len(l.Targets) == 2 && l.Targets[0].Port == 8080:
				v2 = true
			}
		}
	}
	if !classic || !v2 {
		t.Errorf("load balancers %+v: classic listener found %v, v2 listener found %v", s.LoadBalancers, classic, v2)
	}
	var rec bool
	for _, z := range s.Zones {
		for _, rr := range z.Records {
			if rr.Name == "api.c.internal" && rr.Type == "CNAME" && len(rr.Values) == 1 {
				rec = true
			}
		}
	}
	if !rec {
		t.Errorf("zones %+v lack the CNAME", s.Zones)
	}

	e := ec2.NewFromConfig(cfg)
	if _, err := e.AttachVolume(ctx, &ec2.AttachVolumeInput{VolumeId: aws.String(vol), InstanceId: aws.String(first.ID), Device: aws.String("/dev/xvdg")}); err != nil {
		t.Fatal(err)
	}
	s, err = r.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, a := range s.Attachments {
		if a.VolumeID == vol {
			found = a.InstanceID == first.ID && a.Device == "/dev/xvdg" && a.SizeGiB == 3
		}
	}
	if !found {
		t.Errorf("attachments %+v lack %s on %s as /dev/xvdg", s.Attachments, vol, first.ID)
	}

	c, err := r.Credentials(ctx, first.ID, first.RoleARN)
	if err != nil || c.AccessKeyID == "" || c.SessionToken == "" || !c.CanExpire {
		t.Fatalf("credentials %+v, %v", c, err)
	}
	if c2, _ := r.Credentials(ctx, first.ID, first.RoleARN); c2.AccessKeyID != c.AccessKeyID {
		t.Error("credentials were not reused while valid")
	}
	if acct, err := r.AccountID(ctx); err != nil || len(acct) != 12 {
		t.Errorf("account %q, %v", acct, err)
	}
}

// TestMendDropsOrphanGroups: a group named after a complete stack that the
// stack does not list is deleted; the stack's own group, and groups named
// after no stack, are left alone.
func TestMendDropsOrphanGroups(t *testing.T) {
	ctx := context.Background()
	cfg, cf := stackOfTemplate(t)
	res, err := cf.DescribeStackResource(ctx, &cloudformation.DescribeStackResourceInput{StackName: aws.String("c"), LogicalResourceId: aws.String("LT")})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := cf.DescribeStackResource(ctx, &cloudformation.DescribeStackResourceInput{StackName: aws.String("c"), LogicalResourceId: aws.String("Subnet")})
	if err != nil {
		t.Fatal(err)
	}
	as := autoscaling.NewFromConfig(cfg)
	for _, name := range []string{"c-Group-ORPHAN", "other-Group-1"} {
		if _, err := as.CreateAutoScalingGroup(ctx, &autoscaling.CreateAutoScalingGroupInput{
			AutoScalingGroupName: aws.String(name), MinSize: aws.Int32(1), MaxSize: aws.Int32(1),
			VPCZoneIdentifier: sub.StackResourceDetail.PhysicalResourceId,
			LaunchTemplate:    &astypes.LaunchTemplateSpecification{LaunchTemplateId: res.StackResourceDetail.PhysicalResourceId},
		}); err != nil {
			t.Fatal(err)
		}
	}
	// The balancer ends with the instances of the group that names it
	// (moto left the example's without them once; that state is not one its
	// API can make, so it is checked by make e2e-cluster).
	clb, err := cf.DescribeStackResource(ctx, &cloudformation.DescribeStackResourceInput{StackName: aws.String("c"), LogicalResourceId: aws.String("CLB")})
	if err != nil {
		t.Fatal(err)
	}
	lbName := clb.StackResourceDetail.PhysicalResourceId
	lbs := elb.NewFromConfig(cfg)
	lb, err := lbs.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{LoadBalancerNames: []string{aws.ToString(lbName)}})
	if err != nil || len(lb.LoadBalancerDescriptions[0].Instances) != 2 {
		t.Fatalf("balancer before: %v %v", lb, err)
	}
	var said []string
	m := NewMender(cfg, func(f string, a ...any) { said = append(said, fmt.Sprintf(f, a...)) })
	if changed, err := mend(ctx, cfg, m); err != nil || !changed {
		t.Fatalf("mend: changed %v, %v; want the orphan deleted", changed, err)
	}
	out, err := as.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{})
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, g := range out.AutoScalingGroups {
		left = append(left, aws.ToString(g.AutoScalingGroupName))
	}
	sort.Strings(left)
	if len(left) != 2 || !strings.HasPrefix(left[0], "c-Group-") || left[0] == "c-Group-ORPHAN" || left[1] != "other-Group-1" {
		t.Errorf("groups left %v, want the stack's and other-Group-1", left)
	}
	if len(said) != 1 || !strings.Contains(said[0], "deleted Auto Scaling group c-Group-ORPHAN (1 instances): stack c does not list it") {
		t.Errorf("said %q", said)
	}
	lb, err = lbs.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{LoadBalancerNames: []string{aws.ToString(lbName)}})
	if err != nil || len(lb.LoadBalancerDescriptions[0].Instances) != 2 {
		t.Errorf("balancer after: %v %v", lb, err)
	}
}

// mend reads a snapshot as the harness does and mends with it.
func mend(ctx context.Context, cfg aws.Config, m *Mender) (bool, error) {
	snap, err := NewReader(cfg).Read(ctx)
	if err != nil {
		return false, err
	}
	return m.Mend(ctx, snap)
}

// TestMendKeepsAGroupAChangeSetMade: a change set (as kube-aws deploys)
// that scales a stack's group and adds a second one: the first is updated
// in place (its name and instances kept), and the mender, whose listing of
// the stack's groups moto's missing LastUpdatedTime leaves stale, asks the
// stack again rather than take the new group for an orphan.
func TestMendKeepsAGroupAChangeSetMade(t *testing.T) {
	url := awstest.Start(t)
	ctx := context.Background()
	cfg := aws.Config{Region: awstest.Region, Credentials: awstest.Credentials(), BaseEndpoint: aws.String(url)}
	cf := cloudformation.NewFromConfig(cfg)
	as := autoscaling.NewFromConfig(cfg)
	stack := func(n string, second bool) string {
		res := template["Resources"].(map[string]any)
		group := map[string]any{"Type": "AWS::AutoScaling::AutoScalingGroup", "Properties": map[string]any{
			"MinSize": "0", "MaxSize": n, "DesiredCapacity": n, "VPCZoneIdentifier": []any{ref("Subnet")},
			"LaunchTemplate": map[string]any{"LaunchTemplateId": ref("LT"), "Version": map[string]any{"Fn::GetAtt": []string{"LT", "LatestVersionNumber"}}}}}
		r := map[string]any{
			"VPC": res["VPC"], "Subnet": res["Subnet"],
			"LT": map[string]any{"Type": "AWS::EC2::LaunchTemplate", "Properties": map[string]any{"LaunchTemplateData": map[string]any{
				"ImageId": "ami-12c6146b", "InstanceType": "t3.small"}}},
			"Group": group,
		}
		if second {
			r["Second"] = group
		}
		b, _ := json.Marshal(map[string]any{"Resources": r})
		return string(b)
	}
	groupOf := func(logical string) string {
		res, err := cf.DescribeStackResource(ctx, &cloudformation.DescribeStackResourceInput{StackName: aws.String("c"), LogicalResourceId: aws.String(logical)})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(res.StackResourceDetail.PhysicalResourceId)
	}
	instancesOf := func(group string) []string {
		out, err := as.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{AutoScalingGroupNames: []string{group}})
		if err != nil || len(out.AutoScalingGroups) != 1 {
			t.Fatalf("group %s: %+v, %v", group, out, err)
		}
		var ids []string
		for _, i := range out.AutoScalingGroups[0].Instances {
			ids = append(ids, aws.ToString(i.InstanceId))
		}
		sort.Strings(ids)
		return ids
	}
	if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("c"), TemplateBody: aws.String(stack("2", false))}); err != nil {
		t.Fatal(err)
	}
	var said []string
	m := NewMender(cfg, func(f string, a ...any) { said = append(said, fmt.Sprintf(f, a...)) })
	if _, err := mend(ctx, cfg, m); err != nil {
		t.Fatal(err)
	}
	first := groupOf("Group")
	before := instancesOf(first)
	_, err := cf.CreateChangeSet(ctx, &cloudformation.CreateChangeSetInput{StackName: aws.String("c"), ChangeSetName: aws.String("grow"), ChangeSetType: cftypes.ChangeSetTypeUpdate,
		TemplateBody: aws.String(stack("3", true))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cf.ExecuteChangeSet(ctx, &cloudformation.ExecuteChangeSetInput{StackName: aws.String("c"), ChangeSetName: aws.String("grow")}); err != nil {
		t.Fatal(err)
	}
	if _, err := mend(ctx, cfg, m); err != nil {
		t.Fatal(err)
	}
	if g := groupOf("Group"); g != first {
		t.Fatalf("the stack's group is %s after the change set, was %s: replaced, not updated in place", g, first)
	}
	after := instancesOf(first)
	if len(after) != 3 {
		t.Errorf("group %s after the change set: %v, want 3", first, after)
	}
	for _, id := range before {
		if !slices.Contains(after, id) {
			t.Errorf("instance %s of %s is gone after scaling it from 2 to 3 (before %v, after %v)", id, first, before, after)
		}
	}
	if got := instancesOf(groupOf("Second")); len(got) != 3 {
		t.Errorf("the added group has %v, want 3 instances", got)
	}
	for _, s := range said {
		if strings.Contains(s, "deleted Auto Scaling group") {
			t.Errorf("the mender deleted a group: %q", s)
		}
	}
}

// rollTemplate: a group behind a classic load balancer, launched from its
// launch template's latest version with userData, with a termination hook.
func rollTemplate(userData string, desired int) string {
	res := template["Resources"].(map[string]any)
	b, _ := json.Marshal(map[string]any{"Resources": map[string]any{
		"VPC": res["VPC"], "Subnet": res["Subnet"], "CLB": res["CLB"],
		"LT": map[string]any{"Type": "AWS::EC2::LaunchTemplate", "Properties": map[string]any{"LaunchTemplateData": map[string]any{
			"ImageId": "ami-12c6146b", "InstanceType": "t3.small", "UserData": map[string]any{"Fn::Base64": userData}}}},
		"Group": map[string]any{"Type": "AWS::AutoScaling::AutoScalingGroup", "Properties": map[string]any{
			"MinSize": "0", "MaxSize": "4", "DesiredCapacity": fmt.Sprint(desired), "VPCZoneIdentifier": []any{ref("Subnet")},
			"LaunchTemplate":    map[string]any{"LaunchTemplateId": ref("LT"), "Version": map[string]any{"Fn::GetAtt": []string{"LT", "LatestVersionNumber"}}},
			"LoadBalancerNames": []any{ref("CLB")},
			"LifecycleHookSpecificationList": []any{map[string]any{"LifecycleHookName": "drain",
				"LifecycleTransition": "autoscaling:EC2_INSTANCE_TERMINATING", "HeartbeatTimeout": 600, "DefaultResult": "CONTINUE"}}}},
	}})
	return string(b)
}

// TestReadVersionsAndLifecycle: after an update that gives the launch
// template a new version, each instance reads the version it was launched
// from and that version's user data (what its machine boots); an instance
// its group scales in waits on the termination hook: still running (its
// machine stays), leaving, out of the group's instances and its load
// balancer, and the mender does not put it back.
func TestReadVersionsAndLifecycle(t *testing.T) {
	url := awstest.Start(t)
	ctx := context.Background()
	cfg := aws.Config{Region: awstest.Region, Credentials: awstest.Credentials(), BaseEndpoint: aws.String(url)}
	cf := cloudformation.NewFromConfig(cfg)
	if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("r"), TemplateBody: aws.String(rollTemplate("v1", 2))}); err != nil {
		t.Fatal(err)
	}
	if _, err := cf.UpdateStack(ctx, &cloudformation.UpdateStackInput{StackName: aws.String("r"), TemplateBody: aws.String(rollTemplate("v2", 3))}); err != nil {
		t.Fatal(err)
	}
	r := NewReader(cfg)
	s, err := r.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Groups) != 1 || s.Groups[0].Version != "2" || s.Groups[0].LaunchTemplate == "" || len(s.Groups[0].Instances) != 3 {
		t.Fatalf("groups %+v, want one at version 2 with 3 instances", s.Groups)
	}
	group := s.Groups[0].Name
	versions := map[string]int{}
	for id, in := range s.Instances {
		versions[in.Version]++
		want := map[string]string{"1": "v1", "2": "v2"}[in.Version]
		if in.HopLimit != 1 {
			t.Errorf("%s: metadata hop limit %d, want EC2's default 1 for a template that sets none", id, in.HopLimit)
		}
		if string(in.UserData) != want || in.Lifecycle != "InService" || in.Leaving() || in.LaunchTemplate != s.Groups[0].LaunchTemplate {
			t.Errorf("instance %s: version %q, user data %q, lifecycle %q, template %q; want the user data of its version, in service",
				id, in.Version, in.UserData, in.Lifecycle, in.LaunchTemplate)
		}
	}
	if versions["1"] != 2 || versions["2"] != 1 {
		t.Errorf("instances by version %v, want the 2 of before at 1 and the new one at 2", versions)
	}

	if _, err := autoscaling.NewFromConfig(cfg).SetDesiredCapacity(ctx, &autoscaling.SetDesiredCapacityInput{AutoScalingGroupName: aws.String(group), DesiredCapacity: aws.Int32(2)}); err != nil {
		t.Fatal(err)
	}
	m := NewMender(cfg, func(string, ...any) {})
	if _, err := mend(ctx, cfg, m); err != nil {
		t.Fatal(err)
	}
	if s, err = r.Read(ctx); err != nil {
		t.Fatal(err)
	}
	var leaving []string
	for id, in := range s.Instances {
		if in.Leaving() {
			leaving = append(leaving, id)
			if in.Lifecycle != "Terminating:Wait" || !in.Running() || in.Version != "1" || string(in.UserData) != "v1" {
				t.Errorf("the leaving instance %s: %+v; want it waiting, running, of version 1", id, in)
			}
		}
	}
	if len(s.Instances) != 3 || len(leaving) != 1 {
		t.Fatalf("instances %v, leaving %v; want one of the 3 leaving", s.Instances, leaving)
	}
	if slices.Contains(s.Groups[0].Instances, leaving[0]) || len(s.Groups[0].Instances) != 2 {
		t.Errorf("the group's instances %v, want the two in service", s.Groups[0].Instances)
	}
	for _, lb := range s.LoadBalancers {
		for _, l := range lb.Listeners {
			for _, tg := range l.Targets {
				if tg.InstanceID == leaving[0] {
					t.Errorf("load balancer %s still sends to the leaving instance %s", lb.Name, leaving[0])
				}
			}
			if len(l.Targets) != 2 {
				t.Errorf("load balancer %s port %d targets %v, want the two in service", lb.Name, l.Port, l.Targets)
			}
		}
	}
}
