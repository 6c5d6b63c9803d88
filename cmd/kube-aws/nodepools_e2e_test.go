package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
)

// physicalID returns the physical ID of a stack's resource, "" when the
// stack has no such resource.
func (l *awsLayout) physicalID(stack, logicalID string) string {
	l.t.Helper()
	pg := cloudformation.NewListStackResourcesPaginator(l.cfn, &cloudformation.ListStackResourcesInput{StackName: aws.String(stack)})
	for pg.HasMorePages() {
		page, err := pg.NextPage(context.Background())
		if err != nil {
			l.t.Fatal(err)
		}
		for _, r := range page.StackResourceSummaries {
			if aws.ToString(r.LogicalResourceId) == logicalID {
				return aws.ToString(r.PhysicalResourceId)
			}
		}
	}
	return ""
}

// parameter returns a stack's parameter value.
func (l *awsLayout) parameter(stack, key string) string {
	l.t.Helper()
	out, err := l.cfn.DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
	if err != nil || len(out.Stacks) != 1 {
		l.t.Fatalf("describing %s: %v", stack, err)
	}
	for _, p := range out.Stacks[0].Parameters {
		if aws.ToString(p.ParameterKey) == key {
			return aws.ToString(p.ParameterValue)
		}
	}
	return ""
}

// A node pool added to a deployed cluster: up updates the iam stack through
// a change set (moto does not refresh its outputs then) and creates the
// pool's stack with the new instance profile; validate passes and diff
// finds nothing left to do. Removed again: up updates iam, leaves the
// pool's stack and says so, and destroy removes it with the rest.
func TestAddAndRemoveANodePoolAgainstMoto(t *testing.T) {
	l := newAWSLayout(t)
	l.up(l.endpoint)

	const pool = "  - name: extra\n    instanceType: t3.large\n    minSize: 1\n    desiredCapacity: 1\n    maxSize: 2\n"
	l.edit("\nnodePools:\n", "\nnodePools:\n"+pool)
	d, stderr := l.up(l.endpoint)
	changed := changedStacks(d)
	slices.Sort(changed)
	if want := []string{"demo-iam", "demo-nodepool-extra"}; !slices.Equal(changed, want) {
		t.Fatalf("up after adding a pool changed %v, want %v\n%s", changed, want, stderr)
	}
	profile := l.physicalID("demo-iam", "NodePoolExtraInstanceProfile")
	if profile == "" || l.parameter("demo-nodepool-extra", "InstanceProfile") != profile {
		t.Fatalf("the new pool boots with instance profile %q, the iam stack made %q",
			l.parameter("demo-nodepool-extra", "InstanceProfile"), profile)
	}
	for _, s := range d.Stacks {
		if s.Name == "demo-iam" && s.Outputs["NodePoolExtraInstanceProfile"] != profile {
			t.Fatalf("the deploy result's iam outputs lack the new profile: %v", s.Outputs)
		}
	}
	if stdout, stderr, code := l.run("validate", "--endpoint-url", l.endpoint); code != 0 {
		t.Fatalf("validate after adding a pool: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if stdout, stderr, code := l.run("diff", "--exit-code", "--endpoint-url", l.endpoint); code != 0 {
		t.Fatalf("diff after adding a pool: exit %d, want 0 (nothing left to do)\n%s\n%s", code, stdout, stderr)
	}
	// And up again with nothing to do.
	if d, _ := l.up(l.endpoint); len(changedStacks(d)) != 0 {
		t.Fatalf("a second up after adding a pool changed %v", changedStacks(d))
	}

	l.edit("\nnodePools:\n"+pool, "\nnodePools:\n")
	d, stderr = l.up(l.endpoint)
	if got := changedStacks(d); len(got) != 1 || got[0] != "demo-iam" {
		t.Fatalf("up after removing the pool changed %v, want [demo-iam]\n%s", got, stderr)
	}
	if !strings.Contains(stderr, "stack demo-nodepool-extra of cluster demo is no longer rendered") {
		t.Fatalf("up does not say the removed pool's stack is left:\n%s", stderr)
	}
	if id := l.physicalID("demo-iam", "NodePoolExtraInstanceProfile"); id != "" {
		t.Fatalf("the iam stack still has the removed pool's instance profile %s", id)
	}
	if stdout, stderr, code := l.run("validate", "--endpoint-url", l.endpoint); code != 0 {
		t.Fatalf("validate after removing a pool: exit %d\n%s\n%s", code, stdout, stderr)
	}
	stdout, stderr, code := l.run("diff", "--endpoint-url", l.endpoint)
	if code != 0 || !strings.Contains(stdout, "demo-nodepool-extra: no longer rendered") {
		t.Fatalf("diff after removing a pool: exit %d, want the left stack listed\n%s\n%s", code, stdout, stderr)
	}
	if stdout, stderr, code := l.run("destroy", "--yes", "--endpoint-url", l.endpoint); code != 0 {
		t.Fatalf("destroy: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if left := l.liveStacks(); len(left) != 0 {
		t.Fatalf("destroy left %v", left)
	}
}
