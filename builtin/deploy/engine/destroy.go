package engine

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
)

// DestroyResult is what Destroy removed.
type DestroyResult struct {
	// Deleted names the stacks deleted; Absent those already gone.
	Deleted, Absent []string
	// Orphans are CloudFormation names of stacks tagged with the cluster
	// that the render output no longer has (a removed node pool), deleted
	// first.
	Orphans []string
}

// orphans lists the live stacks tagged kube-aws:cluster=<cluster> that are
// not in the render output, by CloudFormation name.
func (e *Engine) orphans(ctx context.Context, p *prepared) ([]string, error) {
	rendered := map[string]bool{}
	for _, s := range p.graph.order {
		rendered[p.stackName(s)] = true
	}
	var out []string
	pg := cloudformation.NewDescribeStacksPaginator(e.cfn, &cloudformation.DescribeStacksInput{})
	for pg.HasMorePages() {
		page, err := pg.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing stacks to find those of cluster %s: %w", p.cluster, err)
		}
		for _, st := range page.Stacks {
			name := aws.ToString(st.StackName)
			if rendered[name] || st.StackStatus == types.StackStatusDeleteComplete {
				continue
			}
			for _, t := range st.Tags {
				if aws.ToString(t.Key) == TagCluster && aws.ToString(t.Value) == p.cluster {
					out = append(out, name)
					break
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}

// Destroy deletes every stack of the cluster in reverse dependency order
// (node pools before the control plane before the network) and waits for
// each, holding the deploy lock. Stacks tagged with the cluster that are no
// longer rendered are deleted first. Stacks already gone are skipped, so a rerun
// finishes an interrupted Destroy. Assets in S3 are kept: they are small,
// content-addressed, and may be shared with a redeploy.
func (e *Engine) Destroy(ctx context.Context, t Target) (*DestroyResult, error) {
	ctx, cancel := e.run(ctx)
	defer cancel()
	p, err := e.prepare(t)
	if err != nil {
		return nil, err
	}
	release, err := e.lock(ctx, p, "destroy")
	if err != nil {
		return nil, err
	}
	defer release()
	var mu sync.Mutex
	res := &DestroyResult{}
	// Stacks no longer rendered (a removed node pool) most likely depend
	// on the rendered ones: they go first.
	if res.Orphans, err = e.orphans(ctx, p); err != nil {
		return nil, err
	}
	err = forEach(ctx, e.opts.Parallelism, res.Orphans, func(ctx context.Context, name string) error {
		return e.deleteAndWait(ctx, name, name)
	})
	if err != nil {
		return res, fmt.Errorf("destroying cluster %s: %w", p.cluster, err)
	}
	err = p.graph.walk(ctx, e.opts.Parallelism, true, func(ctx context.Context, stack string) error {
		name := p.stackName(stack)
		st, err := e.describe(ctx, name)
		if err != nil {
			return err
		}
		if st != nil && st.StackStatus != types.StackStatusDeleteComplete {
			if err := e.deleteAndWait(ctx, stack, name); err != nil {
				return err
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if st == nil {
			res.Absent = append(res.Absent, stack)
		} else {
			res.Deleted = append(res.Deleted, stack)
		}
		return nil
	})
	if err != nil {
		return res, fmt.Errorf("destroying cluster %s: %w", p.cluster, err)
	}
	return res, nil
}
