// Package step is the contract every kube-aws-node step keeps, in the shape
// of kops' nodeup tasks: Check reads the step's plan and the machine and
// says what the step would change, changing nothing; Apply makes those
// changes. A step is idempotent because Check finds nothing to change once
// the machine is as planned, and `kube-aws-node <step> --dry-run` stops
// after Check and prints what it found.
//
// Which steps there are, which plan each reads, what each needs and the
// order a machine runs them in are declared in core/nodeplan (Steps);
// package steps lists the implementations, one package per step.
package step

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/kube-aws/kube-aws/node/agent"
)

// Step is one step of kube-aws-node.
type Step interface {
	// Name is the step's name, its subcommand, as core/nodeplan declares it.
	Name() string
	// Flags declares the step's own flags (timeouts and the like).
	Flags(fs *flag.FlagSet)
	// Check reads the step's plan and the machine (and what it asks of
	// AWS or the cluster) and returns what Apply would change. It changes
	// nothing: no file, no object, no cluster. A plan or a machine the
	// step cannot work with is an error, as it would be for Apply.
	Check(ctx context.Context, e *agent.Env) (Changes, error)
	// Apply makes the changes Check returned; Run calls it only when there
	// are some.
	Apply(ctx context.Context, e *agent.Env, c Changes) error
}

// Change is one thing a step would change, or wait for.
type Change struct {
	// Action is what the step would do: a verb such as install, issue,
	// substitute, attach, mount, upsert, wait, upload.
	Action string `json:"action"`
	// Target is what it would do it to: a path, a volume, a record, a
	// release, a node.
	Target string `json:"target"`
	// Detail says more, for people. Never a secret's value.
	Detail string `json:"detail,omitempty"`
	// Data is what the step's Apply needs to make the change, of the
	// step's own type; nil when the change is a part of another one.
	Data any `json:"-"`
}

func (c Change) String() string {
	s := c.Action + " " + c.Target
	if c.Detail != "" {
		s += ": " + c.Detail
	}
	return s
}

// Changes are a step's changes, in the order Apply makes them.
type Changes []Change

// Fresh is implemented by a step that reads the instance's facts from the
// metadata service even when earlier steps kept them (boot: the machine, or
// the disk it booted from, may be new).
type Fresh interface {
	FreshFacts() bool
}

// Run is the step on a machine: Check, then Apply what it found.
func Run(ctx context.Context, e *agent.Env, s Step) error {
	c, err := s.Check(ctx, e)
	if err != nil || len(c) == 0 {
		return err
	}
	return s.Apply(ctx, e, c)
}

// DryRun runs Check only and writes the changes to w: one line each, or as
// JSON, {"step": <name>, "changes": [{"action", "target", "detail"}...]}.
func DryRun(ctx context.Context, e *agent.Env, s Step, w io.Writer, asJSON bool) error {
	c, err := s.Check(ctx, e)
	if err != nil {
		return err
	}
	e.Logf("dry run: %d changes, none made", len(c))
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if c == nil {
			c = Changes{}
		}
		return enc.Encode(struct {
			Step    string  `json:"step"`
			Changes Changes `json:"changes"`
		}{s.Name(), c})
	}
	for _, ch := range c {
		if _, err := fmt.Fprintln(w, ch); err != nil {
			return err
		}
	}
	return nil
}

// Mode says how Main runs a step.
type Mode struct {
	// DryRun stops after Check and writes the changes to Out.
	DryRun bool
	// JSON writes them as JSON.
	JSON bool
	Out  io.Writer
}

// Main runs s as `kube-aws-node <step>` does once its flags are parsed, and
// returns the exit code (agent.Main).
func Main(s Step, o agent.Options, m Mode) int {
	if f, ok := s.(Fresh); ok {
		o.FreshFacts = f.FreshFacts()
	}
	o.DryRun = m.DryRun
	return agent.Main(s.Name(), o, func(ctx context.Context, e *agent.Env) error {
		if m.DryRun {
			return DryRun(ctx, e, s, m.Out, m.JSON)
		}
		return Run(ctx, e, s)
	})
}
