package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
)

// instanceStater returns an instance's state name (pending, running,
// stopped...), or an error when it cannot be looked up.
type instanceStater func(ctx context.Context, id string) (string, error)

// errNotFound is an instance EC2 does not know.
var errNotFound = errors.New("no such instance")

// ec2Stater asks EC2 with the AWS settings kube-aws gives plugins that
// declare they reach AWS (stage.Input.AWS: --region, else cluster.yaml's
// region, else the SDK's own AWS_REGION or profile; --profile, else the
// SDK's credential chain; --endpoint-url for an emulator such as moto).
func ec2Stater(settings *stage.AWSSettings, clusterRegion string) instanceStater {
	var a stage.AWSSettings
	if settings != nil {
		a = *settings
	}
	return func(ctx context.Context, id string) (string, error) {
		var lo []func(*awsconfig.LoadOptions) error
		region := a.Region
		if region == "" {
			region = clusterRegion
		}
		if region != "" {
			lo = append(lo, awsconfig.WithRegion(region))
		}
		if a.Profile != "" {
			lo = append(lo, awsconfig.WithSharedConfigProfile(a.Profile))
		}
		cfg, err := awsconfig.LoadDefaultConfig(ctx, lo...)
		if err != nil {
			return "", fmt.Errorf("loading AWS configuration: %w", err)
		}
		client := ec2.NewFromConfig(cfg, func(o *ec2.Options) {
			if a.EndpointURL != "" {
				o.BaseEndpoint = aws.String(a.EndpointURL)
			}
		})
		out, err := client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
		if err != nil {
			return "", err
		}
		for _, r := range out.Reservations {
			for _, in := range r.Instances {
				if aws.ToString(in.InstanceId) == id && in.State != nil {
					return string(in.State.Name), nil
				}
			}
		}
		return "", errNotFound
	}
}

// validate checks the deploy result: the bastion stack is deployed and
// says which instance it made, and EC2 reports that instance running. The
// deploy result names stacks as CloudFormation does, <clusterName>-bastion.
func validate(ctx context.Context, dep *stage.DeployResult, clusterName string, describe instanceStater) diag.List {
	hint := "run kube-aws up (or kube-aws stage deploy) with the bastion plugin enabled"
	if dep == nil {
		return diag.List{diag.Fatalf("bastion: there is no deploy result to check").WithHint(hint)}
	}
	name := clusterName + "-" + Stack
	var st *stage.StackStatus
	for i := range dep.Stacks {
		if dep.Stacks[i].Name == name {
			st = &dep.Stacks[i]
		}
	}
	if st == nil {
		return diag.List{diag.Fatalf("bastion: stack %q is not in the deploy result", name).WithHint(hint)}
	}
	switch st.Status {
	case "CREATE_COMPLETE", "UPDATE_COMPLETE", "UPDATE_ROLLBACK_COMPLETE", "IMPORT_COMPLETE":
	default:
		return diag.List{diag.Fatalf("bastion: stack %q is %s, not complete", name, st.Status).
			WithHint("see the stack's events: aws cloudformation describe-stack-events --stack-name " + st.ID)}
	}
	id := st.Outputs[OutputInstanceID]
	if id == "" {
		return diag.List{diag.Fatalf("bastion: stack %q has no %s output", name, OutputInstanceID).WithHint(hint)}
	}
	state, err := describe(ctx, id)
	switch {
	case errors.Is(err, errNotFound):
		return diag.List{diag.Fatalf("bastion: instance %s is gone (terminated?)", id).
			WithHint("run kube-aws up again: CloudFormation recreates it only when the stack changes, so delete the bastion stack first")}
	case err != nil:
		return diag.List{diag.Fatalf("bastion: cannot look up instance %s: %v", id, err).
			WithHint("check AWS credentials and that the role may call ec2:DescribeInstances")}
	case state != "running":
		return diag.List{diag.Fatalf("bastion: instance %s is %s, not running", id, state).
			WithHint("start it: aws ec2 start-instances --instance-ids " + id)}
	}
	return nil
}
