package engine

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/kube-aws/kube-aws/core/stage"
)

// Destroy deletes every stack of the cluster in reverse dependency order
// (node pools before the control plane before the network) and waits for
// each, holding the deploy lock. Stacks tagged with the cluster that are no
// longer rendered are deleted first. Stacks already gone are skipped, so a rerun
// finishes an interrupted Destroy. Assets in S3 are kept: they are small,
// content-addressed, and may be shared with a redeploy.
func (e *Engine) Destroy(ctx context.Context, t Target) (*stage.DestroyResult, error) {
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
	res := &stage.DestroyResult{}
	// Stacks no longer rendered (a removed node pool) most likely depend
	// on the rendered ones: they go first.
	if _, res.Orphans, err = e.survey(ctx, p); err != nil {
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
	// The issuer's documents are the cluster's only public objects: they
	// go with it, so that nothing of a destroyed cluster stays readable.
	if err := e.unpublishDiscovery(ctx, p); err != nil {
		return res, fmt.Errorf("destroying cluster %s: %w", p.cluster, err)
	}
	return res, nil
}
