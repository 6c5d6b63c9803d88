package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/kube-aws/kube-aws/contrib/internal/contribtest"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
	"github.com/kube-aws/kube-aws/test/awstest"
)

// TestDeployAndValidateAgainstMoto deploys the bastion stack the plugin
// contributes to moto (with a VPC, subnet and role groups standing in for the
// network stack's outputs), then runs the validate stage against the real
// EC2 API: running passes, stopped is fatal.
func TestDeployAndValidateAgainstMoto(t *testing.T) {
	url := awstest.Start(t)
	t.Setenv("AWS_ACCESS_KEY_ID", awstest.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", awstest.SecretAccessKey)
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", "/dev/null")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
	ctx := context.Background()
	cfg := aws.Config{Region: awstest.Region, Credentials: awstest.Credentials()}
	ec := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(url) })
	cf := cloudformation.NewFromConfig(cfg, func(o *cloudformation.Options) { o.BaseEndpoint = aws.String(url) })

	// What the network stack would output.
	vpc, err := ec.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.0.0.0/16")})
	if err != nil {
		t.Fatal(err)
	}
	vpcID := aws.ToString(vpc.Vpc.VpcId)
	sub, err := ec.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: aws.String(vpcID), CidrBlock: aws.String("10.0.0.0/20"), AvailabilityZone: aws.String("us-east-1a")})
	if err != nil {
		t.Fatal(err)
	}
	params := map[string]string{"VpcId": vpcID, "SubnetId": aws.ToString(sub.Subnet.SubnetId)}
	for _, role := range []string{"Controller", "Etcd", "Worker"} {
		sg, err := ec.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String(role), Description: aws.String(role), VpcId: aws.String(vpcID)})
		if err != nil {
			t.Fatal(err)
		}
		params[role+"SecurityGroupId"] = aws.ToString(sg.GroupId)
	}
	imgs, err := ec.DescribeImages(ctx, &ec2.DescribeImagesInput{Owners: []string{"amazon"}})
	if err != nil || len(imgs.Images) == 0 {
		t.Fatalf("moto has no images: %v", err)
	}
	ami := aws.ToString(imgs.Images[0].ImageId)

	yaml := strings.Replace(contribtest.ClusterYAML, "region: us-east-1\n", "region: us-east-1\namiId: "+ami+"\nkeyName: ops\n", 1)
	res := initialiseReq(t, yaml, `{"allowedCIDRs": ["203.0.113.0/24"]}`)
	st := bastionStack(t, res)
	for p := range st.ParameterSources {
		if _, ok := params[p]; !ok {
			t.Fatalf("test does not provide parameter %s", p)
		}
	}
	var cfnParams []cfntypes.Parameter
	for k, v := range params {
		cfnParams = append(cfnParams, cfntypes.Parameter{ParameterKey: aws.String(k), ParameterValue: aws.String(v)})
	}
	if _, err := ec.CreateKeyPair(ctx, &ec2.CreateKeyPairInput{KeyName: aws.String("ops")}); err != nil {
		t.Fatal(err)
	}
	if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{
		StackName: aws.String("demo-bastion"), TemplateBody: aws.String(template(t, st)), Parameters: cfnParams,
	}); err != nil {
		t.Fatalf("CreateStack: %v", err)
	}
	out, err := cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String("demo-bastion")})
	if err != nil {
		t.Fatal(err)
	}
	s := out.Stacks[0]
	// Named as the deploy result names it: the CloudFormation stack name.
	status := stage.StackStatus{Name: aws.ToString(s.StackName), ID: aws.ToString(s.StackId), Status: string(s.StackStatus), Outputs: map[string]string{}}
	for _, o := range s.Outputs {
		status.Outputs[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	id := status.Outputs[OutputInstanceID]
	if !strings.HasPrefix(id, "i-") {
		t.Fatalf("stack %s outputs %v", status.Status, status.Outputs)
	}
	// The address to SSH to is the instance's Elastic IP.
	addrs, err := ec.DescribeAddresses(ctx, &ec2.DescribeAddressesInput{PublicIps: []string{status.Outputs[OutputPublicIP]}})
	if err != nil || len(addrs.Addresses) != 1 || aws.ToString(addrs.Addresses[0].InstanceId) != id {
		t.Fatalf("the PublicIp output %q is not an Elastic IP of the bastion %s: %v %+v", status.Outputs[OutputPublicIP], id, err, addrs)
	}
	// The instance has the security group admitting SSH from the CIDR.
	di, err := ec.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	inst := di.Reservations[0].Instances[0]
	if aws.ToString(inst.SubnetId) != params["SubnetId"] || aws.ToString(inst.KeyName) != "ops" {
		t.Errorf("instance subnet %s key %s", aws.ToString(inst.SubnetId), aws.ToString(inst.KeyName))
	}
	// The bastion's group admits SSH from the CIDR, and the node groups
	// admit SSH from it. (moto does not attach a CloudFormation instance's
	// SecurityGroupIds to the instance, so the group is found by the
	// stack's output rather than on the instance.)
	sgID := status.Outputs["SecurityGroupId"]
	sgs, err := ec.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{sgID, params["WorkerSecurityGroupId"]}})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range sgs.SecurityGroups {
		switch aws.ToString(g.GroupId) {
		case sgID:
			if !admitsSSH(g.IpPermissions, "203.0.113.0/24") {
				t.Errorf("bastion group does not admit SSH from 203.0.113.0/24: %+v", g.IpPermissions)
			}
		default:
			var fromBastion bool
			for _, p := range g.IpPermissions {
				for _, pair := range p.UserIdGroupPairs {
					fromBastion = fromBastion || (aws.ToString(pair.GroupId) == sgID && aws.ToInt32(p.FromPort) == 22)
				}
			}
			if !fromBastion {
				t.Errorf("worker group does not admit SSH from the bastion: %+v", g.IpPermissions)
			}
		}
	}

	validateNow := func() *stage.Result {
		req := contribtest.Request(t, stage.Validate, nil, Name, schema, `{"allowedCIDRs": ["203.0.113.0/24"]}`, t.TempDir())
		req.Deploy = &stage.DeployResult{Stacks: []stage.StackStatus{status}}
		req.AWS = &stage.AWSSettings{Region: awstest.Region, EndpointURL: url}
		r, err := sdk.Call(ctx, sdk.Typed[Values](plugin{}), req)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := validateNow(); len(r.Diagnostics) != 0 {
		t.Fatalf("validate of a running bastion: %v", r.Diagnostics)
	}
	if _, err := ec.StopInstances(ctx, &ec2.StopInstancesInput{InstanceIds: []string{id}}); err != nil {
		t.Fatal(err)
	}
	r := validateNow()
	if !r.Diagnostics.HasFatal() || !strings.Contains(r.Diagnostics[0].Message, "not running") {
		t.Errorf("validate of a stopped bastion: %v", r.Diagnostics)
	}
}

func admitsSSH(perms []ec2types.IpPermission, cidr string) bool {
	for _, p := range perms {
		if aws.ToInt32(p.FromPort) != 22 || aws.ToInt32(p.ToPort) != 22 {
			continue
		}
		for _, r := range p.IpRanges {
			if aws.ToString(r.CidrIp) == cidr {
				return true
			}
		}
	}
	return false
}

// template turns a Stack construct into a CloudFormation template, as the
// cloudformation built-in's render does for every stack.
func template(t *testing.T, s construct.Stack) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{
		"AWSTemplateFormatVersion": "2010-09-09",
		"Description":              s.Description,
		"Parameters":               s.Parameters,
		"Resources":                s.Resources,
		"Outputs":                  s.Outputs,
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
