package awsenv

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/route53"
)

// The SDK's paginators and waiters, and the drainer, take a client as an
// interface. An SDK client converted to an interface keeps every operation
// of its service in kube-aws-node, not only those it calls: Helm's
// templates call methods by name, so the linker keeps every exported method
// of a type that reaches an interface, and of the types its fields hold. For
// EC2 that is some 20 MB of the binary every machine downloads at boot. The
// types below hold the operations kube-aws-node calls as functions, which
// keep no client type within reflection's reach, and implement the
// interfaces with them.

// EC2DescribeVolumes is ec2.DescribeVolumesAPIClient for the volumes
// paginator: pass client.DescribeVolumes.
type EC2DescribeVolumes func(context.Context, *ec2.DescribeVolumesInput, ...func(*ec2.Options)) (*ec2.DescribeVolumesOutput, error)

func (f EC2DescribeVolumes) DescribeVolumes(ctx context.Context, in *ec2.DescribeVolumesInput, opts ...func(*ec2.Options)) (*ec2.DescribeVolumesOutput, error) {
	return f(ctx, in, opts...)
}

// EC2DescribeInstances is ec2.DescribeInstancesAPIClient: pass
// client.DescribeInstances.
type EC2DescribeInstances func(context.Context, *ec2.DescribeInstancesInput, ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error)

func (f EC2DescribeInstances) DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, opts ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	return f(ctx, in, opts...)
}

// Route53GetChange is route53.GetChangeAPIClient for the change waiter:
// pass client.GetChange.
type Route53GetChange func(context.Context, *route53.GetChangeInput, ...func(*route53.Options)) (*route53.GetChangeOutput, error)

func (f Route53GetChange) GetChange(ctx context.Context, in *route53.GetChangeInput, opts ...func(*route53.Options)) (*route53.GetChangeOutput, error) {
	return f(ctx, in, opts...)
}

// AutoScaling is the Auto Scaling the drainer calls: the four operations
// of its termination hook.
type AutoScaling struct {
	describeGroups func(context.Context, *autoscaling.DescribeAutoScalingGroupsInput, ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error)
	complete       func(context.Context, *autoscaling.CompleteLifecycleActionInput, ...func(*autoscaling.Options)) (*autoscaling.CompleteLifecycleActionOutput, error)
	heartbeat      func(context.Context, *autoscaling.RecordLifecycleActionHeartbeatInput, ...func(*autoscaling.Options)) (*autoscaling.RecordLifecycleActionHeartbeatOutput, error)
	describeHooks  func(context.Context, *autoscaling.DescribeLifecycleHooksInput, ...func(*autoscaling.Options)) (*autoscaling.DescribeLifecycleHooksOutput, error)
}

// NewAutoScaling returns the AutoScaling of cfg.
func NewAutoScaling(cfg aws.Config) AutoScaling {
	c := autoscaling.NewFromConfig(cfg)
	return AutoScaling{c.DescribeAutoScalingGroups, c.CompleteLifecycleAction, c.RecordLifecycleActionHeartbeat, c.DescribeLifecycleHooks}
}

func (a AutoScaling) DescribeAutoScalingGroups(ctx context.Context, in *autoscaling.DescribeAutoScalingGroupsInput, opts ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error) {
	return a.describeGroups(ctx, in, opts...)
}

func (a AutoScaling) CompleteLifecycleAction(ctx context.Context, in *autoscaling.CompleteLifecycleActionInput, opts ...func(*autoscaling.Options)) (*autoscaling.CompleteLifecycleActionOutput, error) {
	return a.complete(ctx, in, opts...)
}

func (a AutoScaling) RecordLifecycleActionHeartbeat(ctx context.Context, in *autoscaling.RecordLifecycleActionHeartbeatInput, opts ...func(*autoscaling.Options)) (*autoscaling.RecordLifecycleActionHeartbeatOutput, error) {
	return a.heartbeat(ctx, in, opts...)
}

func (a AutoScaling) DescribeLifecycleHooks(ctx context.Context, in *autoscaling.DescribeLifecycleHooksInput, opts ...func(*autoscaling.Options)) (*autoscaling.DescribeLifecycleHooksOutput, error) {
	return a.describeHooks(ctx, in, opts...)
}
