//go:build e2ecluster

package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/kube-aws/kube-aws/test/awstest"
	"github.com/kube-aws/kube-aws/test/machines"
)

//go:embed bootstrap.sh
var bootstrap string

const (
	bucket     = "harness-assets"
	recordName = "svc.harness.internal"
	stackName  = "harness"
)

// run is one harness run against a fresh moto with the proof stack.
type run struct {
	h      *machines.Harness
	cfg    aws.Config
	moto   string
	stopMo func()
	s3     *s3.Client
	ec2    *ec2.Client
	asg    *autoscaling.Client
	volume string
	asset  []byte
}

// startRun starts moto, uploads the asset, starts the harness and creates
// the proof stack. logf receives progress.
func startRun(ctx context.Context, log io.Writer) (r *run, err error) {
	r = &run{}
	url, stop, err := awstest.StartServer()
	if err != nil {
		return nil, err
	}
	r.moto, r.stopMo = url, stop
	remove := machines.AtExit(stop)
	defer func() {
		if err != nil {
			remove()
			r.close(true)
		}
	}()
	r.cfg = aws.Config{Region: awstest.Region, Credentials: awstest.Credentials(), BaseEndpoint: aws.String(url)}
	r.s3 = s3.NewFromConfig(r.cfg, func(o *s3.Options) { o.UsePathStyle = true })
	r.ec2 = ec2.NewFromConfig(r.cfg)
	r.asg = autoscaling.NewFromConfig(r.cfg)
	if err := awstest.WarmUp(ctx, url); err != nil {
		return nil, err
	}
	if _, err := r.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		return nil, fmt.Errorf("creating the bucket: %w", err)
	}
	// A 1 MiB asset with a content-addressed key, as kube-aws uploads
	// kube-aws-node.
	r.asset = bytes.Repeat([]byte("kube-aws harness asset\n"), 1<<16)[:1<<20]
	sum := sha256.Sum256(r.asset)
	sha := hex.EncodeToString(sum[:])
	if _, err := r.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("assets/" + sha), Body: bytes.NewReader(r.asset)}); err != nil {
		return nil, fmt.Errorf("uploading the asset: %w", err)
	}
	host := strings.TrimPrefix(url, "http://")
	r.h, err = machines.Start(ctx, machines.Options{AWS: r.cfg, Moto: host, Log: log})
	if err != nil {
		return nil, err
	}
	if pid, ok := awstest.PID(url); ok {
		if err := r.h.Adopt(pid); err != nil {
			return nil, err
		}
	}
	tpl, err := json.Marshal(stackTemplate())
	if err != nil {
		return nil, err
	}
	cf := cloudformation.NewFromConfig(r.cfg)
	if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{
		StackName: aws.String(stackName), TemplateBody: aws.String(string(tpl)),
		Capabilities: []cftypes.Capability{cftypes.CapabilityCapabilityIam},
		Parameters: []cftypes.Parameter{
			{ParameterKey: aws.String("Bucket"), ParameterValue: aws.String(bucket)},
			{ParameterKey: aws.String("AssetSHA"), ParameterValue: aws.String(sha)},
			{ParameterKey: aws.String("RecordName"), ParameterValue: aws.String(recordName)},
		},
	}); err != nil {
		return nil, fmt.Errorf("creating the proof stack: %w", err)
	}
	out, err := cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stackName)})
	if err != nil {
		return nil, err
	}
	st := out.Stacks[0]
	if st.StackStatus != cftypes.StackStatusCreateComplete {
		return nil, fmt.Errorf("proof stack is %s: %s", st.StackStatus, aws.ToString(st.StackStatusReason))
	}
	for _, o := range st.Outputs {
		if aws.ToString(o.OutputKey) == "Volume" {
			r.volume = aws.ToString(o.OutputValue)
		}
	}
	return r, nil
}

func (r *run) close(failed bool) error {
	var err error
	if r.h != nil {
		err = r.h.Close(failed)
	}
	if r.stopMo != nil {
		r.stopMo()
	}
	return err
}

// stackTemplate is the proof stack: a VPC with two subnets, an instance
// profile, a launch template whose user data is bootstrap.sh, an Auto
// Scaling group of one behind a classic load balancer (moto takes every
// ELBv2 load balancer for an application one), a Route 53 record naming
// the load balancer, and an EBS volume in the instance's zone.
func stackTemplate() map[string]any {
	ref := func(n string) map[string]any { return map[string]any{"Ref": n} }
	return map[string]any{
		"Parameters": map[string]any{
			"Bucket": map[string]any{"Type": "String"}, "AssetSHA": map[string]any{"Type": "String"},
			"RecordName": map[string]any{"Type": "String"},
		},
		"Resources": map[string]any{
			"VPC": map[string]any{"Type": "AWS::EC2::VPC", "Properties": map[string]any{"CidrBlock": "10.42.0.0/16"}},
			"SubnetA": map[string]any{"Type": "AWS::EC2::Subnet", "Properties": map[string]any{
				"VpcId": ref("VPC"), "CidrBlock": "10.42.1.0/24", "AvailabilityZone": "us-east-1a"}},
			"SubnetB": map[string]any{"Type": "AWS::EC2::Subnet", "Properties": map[string]any{
				"VpcId": ref("VPC"), "CidrBlock": "10.42.2.0/24", "AvailabilityZone": "us-east-1b"}},
			"Role": map[string]any{"Type": "AWS::IAM::Role", "Properties": map[string]any{
				"AssumeRolePolicyDocument": map[string]any{"Version": "2012-10-17", "Statement": []any{map[string]any{
					"Effect": "Allow", "Principal": map[string]any{"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}}},
				"Policies": []any{map[string]any{"PolicyName": "harness", "PolicyDocument": map[string]any{
					"Version": "2012-10-17", "Statement": []any{
						map[string]any{"Effect": "Allow", "Action": []string{"s3:GetObject", "s3:PutObject"}, "Resource": "*"},
						map[string]any{"Effect": "Allow", "Action": "ec2:AttachVolume", "Resource": "*"}}}}}}},
			"Profile": map[string]any{"Type": "AWS::IAM::InstanceProfile", "Properties": map[string]any{"Roles": []any{ref("Role")}}},
			"Volume":  map[string]any{"Type": "AWS::EC2::Volume", "Properties": map[string]any{"AvailabilityZone": "us-east-1a", "Size": 1}},
			"LaunchTemplate": map[string]any{"Type": "AWS::EC2::LaunchTemplate", "Properties": map[string]any{
				"LaunchTemplateData": map[string]any{
					"ImageId": "ami-12c6146b", "InstanceType": "t3.micro",
					"IamInstanceProfile": map[string]any{"Arn": map[string]any{"Fn::GetAtt": []string{"Profile", "Arn"}}},
					"MetadataOptions":    map[string]any{"HttpTokens": "required", "HttpEndpoint": "enabled"},
					"UserData":           map[string]any{"Fn::Base64": map[string]any{"Fn::Sub": bootstrap}},
				}}},
			"LoadBalancer": map[string]any{"Type": "AWS::ElasticLoadBalancing::LoadBalancer", "Properties": map[string]any{
				"Scheme": "internal", "Subnets": []any{ref("SubnetA"), ref("SubnetB")},
				"Listeners": []any{map[string]any{"LoadBalancerPort": "80", "InstancePort": "8080", "Protocol": "TCP"}}}},
			"Group": map[string]any{"Type": "AWS::AutoScaling::AutoScalingGroup", "Properties": map[string]any{
				"MinSize": "1", "MaxSize": "2", "DesiredCapacity": "1",
				"VPCZoneIdentifier": []any{ref("SubnetA")},
				"LaunchTemplate": map[string]any{"LaunchTemplateId": ref("LaunchTemplate"),
					"Version": map[string]any{"Fn::GetAtt": []string{"LaunchTemplate", "LatestVersionNumber"}}},
				"LoadBalancerNames": []any{ref("LoadBalancer")}}},
			"Zone": map[string]any{"Type": "AWS::Route53::HostedZone", "Properties": map[string]any{
				"Name": "harness.internal", "VPCs": []any{map[string]any{"VPCId": ref("VPC"), "VPCRegion": "us-east-1"}}}},
			"Record": map[string]any{"Type": "AWS::Route53::RecordSet", "Properties": map[string]any{
				"HostedZoneId": ref("Zone"), "Name": ref("RecordName"), "Type": "CNAME", "TTL": "60",
				"ResourceRecords": []any{map[string]any{"Fn::GetAtt": []string{"LoadBalancer", "DNSName"}}}}},
		},
		"Outputs": map[string]any{"Volume": map[string]any{"Value": ref("Volume")}},
	}
}

// groupInstances returns the ids of the proof group's instances in moto.
func (r *run) groupInstances(ctx context.Context) ([]string, error) {
	out, err := r.asg.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{})
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, g := range out.AutoScalingGroups {
		for _, i := range g.Instances {
			ids = append(ids, aws.ToString(i.InstanceId))
		}
	}
	return ids, nil
}

// status is what bootstrap.sh writes to S3.
type status struct {
	Instance, Address, Zone, Role, Resolved, Found string
	Times                                          map[string]float64
}

// waitStatus waits for the status object of instance id.
func (r *run) waitStatus(ctx context.Context, id string) (*status, error) {
	key := "status/harness/" + id + ".json"
	for {
		out, err := r.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err == nil {
			defer out.Body.Close()
			var s status
			if err := json.NewDecoder(out.Body).Decode(&s); err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			return &s, nil
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no %s in s3://%s: %w (console: %s)", key, bucket, errors.Join(ctx.Err(), err), r.h.Logs.ConsolePath(id))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// consoleTail returns the end of an instance's console log, for failures.
func (r *run) consoleTail(id string) string {
	b, _ := os.ReadFile(r.h.Logs.ConsolePath(id))
	if len(b) > 3000 {
		b = b[len(b)-3000:]
	}
	return string(b)
}
