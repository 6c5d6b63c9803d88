package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/kube-aws/kube-aws/core/stage"
)

// graph is the stacks and what each needs first: its DependsOn plus every
// stack its parameters take outputs from.
type graph struct {
	specs map[string]stage.StackSpec
	// order is a topological order that keeps the render order among
	// stacks that do not depend on each other (network, etcd, control
	// plane, node pools, plugin stacks), so runs are predictable.
	order      []string
	index      map[string]int
	deps       map[string][]string
	dependents map[string][]string
}

func newGraph(specs []stage.StackSpec) (*graph, error) {
	g := &graph{specs: map[string]stage.StackSpec{}, index: map[string]int{}, deps: map[string][]string{}, dependents: map[string][]string{}}
	for i, s := range specs {
		if s.Name == "" {
			return nil, fmt.Errorf("stack #%d of the render output has no name; this is a render bug", i+1)
		}
		if _, dup := g.specs[s.Name]; dup {
			return nil, fmt.Errorf("stack %s is rendered twice; this is a render bug", s.Name)
		}
		g.specs[s.Name] = s
		g.index[s.Name] = i
	}
	for _, s := range specs {
		seen := map[string]bool{}
		add := func(d, why string) error {
			if d == s.Name {
				return fmt.Errorf("stack %s depends on itself (%s)", s.Name, why)
			}
			if _, ok := g.specs[d]; !ok {
				return fmt.Errorf("stack %s needs stack %s (%s), which is not rendered", s.Name, d, why)
			}
			if !seen[d] {
				seen[d] = true
				g.deps[s.Name] = append(g.deps[s.Name], d)
				g.dependents[d] = append(g.dependents[d], s.Name)
			}
			return nil
		}
		for _, d := range s.DependsOn {
			if err := add(d, "dependsOn"); err != nil {
				return nil, err
			}
		}
		params := make([]string, 0, len(s.ParameterSources))
		for p := range s.ParameterSources {
			params = append(params, p)
		}
		sort.Strings(params)
		for _, p := range params {
			src := s.ParameterSources[p]
			if err := src.Valid(); err != nil {
				return nil, fmt.Errorf("stack %s: %w", s.Name, err)
			}
			if err := add(src.Stack, "parameter "+p+" from "+src.String()); err != nil {
				return nil, err
			}
		}
	}
	// Kahn's algorithm, always taking the earliest rendered ready stack.
	pending := map[string]int{}
	var ready []string
	for _, s := range specs {
		pending[s.Name] = len(g.deps[s.Name])
		if pending[s.Name] == 0 {
			ready = append(ready, s.Name)
		}
	}
	for len(ready) > 0 {
		sort.Slice(ready, func(i, j int) bool { return g.index[ready[i]] < g.index[ready[j]] })
		n := ready[0]
		ready = ready[1:]
		g.order = append(g.order, n)
		for _, d := range g.dependents[n] {
			pending[d]--
			if pending[d] == 0 {
				ready = append(ready, d)
			}
		}
	}
	if len(g.order) != len(specs) {
		var cyc []string
		for _, s := range specs {
			if pending[s.Name] > 0 {
				cyc = append(cyc, s.Name)
			}
		}
		return nil, fmt.Errorf("stacks %s depend on each other in a cycle; check their dependsOn and parameterSources", strings.Join(cyc, ", "))
	}
	return g, nil
}

// walk calls fn for every stack, at most parallel at a time, each only once
// everything it needs has succeeded (reverse: once every stack that needs it
// has succeeded, the order for deleting). After a failure no new stack is
// started; those already running finish, and every error is returned.
func (g *graph) walk(ctx context.Context, parallel int, reverse bool, fn func(ctx context.Context, stack string) error) error {
	before, after := g.deps, g.dependents
	if reverse {
		before, after = g.dependents, g.deps
	}
	pending := map[string]int{}
	var ready []string
	for _, n := range g.order {
		pending[n] = len(before[n])
		if pending[n] == 0 {
			ready = append(ready, n)
		}
	}
	type done struct {
		stack string
		err   error
	}
	results := make(chan done)
	running, finished := 0, 0
	var errs []error
	for {
		for running < parallel && len(ready) > 0 && len(errs) == 0 && ctx.Err() == nil {
			sort.Slice(ready, func(i, j int) bool {
				if reverse {
					return g.index[ready[i]] > g.index[ready[j]]
				}
				return g.index[ready[i]] < g.index[ready[j]]
			})
			n := ready[0]
			ready = ready[1:]
			running++
			go func() { results <- done{n, fn(ctx, n)} }()
		}
		if running == 0 {
			break
		}
		r := <-results
		running--
		finished++
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		for _, d := range after[r.stack] {
			pending[d]--
			if pending[d] == 0 {
				ready = append(ready, d)
			}
		}
	}
	if len(errs) == 0 && finished < len(g.order) {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("stopped after %d of %d stacks: %w", finished, len(g.order), err)
		}
	}
	return errors.Join(errs...)
}
