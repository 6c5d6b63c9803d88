package main

import (
	"fmt"
	"strings"

	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
)

// diffText renders a diff for a terminal or a CI log: one line per stack,
// one indented line per resource (+ add, ~ modify, - remove) with its type
// and whether it is replaced; then, per role, the machines an up would
// replace and why.
func diffText(d *stage.DiffResult) string {
	var b strings.Builder
	for _, s := range d.Stacks {
		what := map[string]string{stage.ActionNone: "no change", stage.ActionCreate: "would create",
			stage.ActionRecreate: "would delete and create again (failed create)", stage.ActionUpdate: "would update"}[s.Action]
		if what == "" {
			what = s.Action
		}
		fmt.Fprintf(&b, "%s (%s): %s\n", s.Stack, s.StackName, what)
		if s.Action == stage.ActionUpdate && len(s.Changes) == 0 {
			b.WriteString("    ~ parameters only\n")
		}
		for _, c := range s.Changes {
			sign := map[string]string{"Add": "+", "Modify": "~", "Remove": "-"}[c.Action]
			if sign == "" {
				sign = "*"
			}
			fmt.Fprintf(&b, "    %s %-7s %-40s %s", sign, c.Action, c.LogicalID, c.ResourceType)
			if c.Replacement != "" && c.Replacement != "False" {
				fmt.Fprintf(&b, "  replacement: %s", c.Replacement)
			}
			b.WriteString("\n")
		}
	}
	for _, o := range d.Orphans {
		fmt.Fprintf(&b, "%s: no longer rendered; kube-aws up leaves it, kube-aws destroy deletes it\n", o)
	}
	// The machines an up would replace, per role, in the roll's order.
	role := ""
	for _, m := range d.Machines {
		if m.Role != role {
			role = m.Role
			n := 0
			for _, o := range d.Machines {
				if o.Role == role {
					n++
				}
			}
			how := "drained first"
			if m.Role == names.RoleEtcd {
				how = "one member at a time" // members run no pods
			}
			fmt.Fprintf(&b, "%s (%s): %d machine(s) would be replaced, %s\n", m.Role, m.Stack, n, how)
		}
		who := m.InstanceID
		if m.Address != "" {
			who += " (" + m.Address + ")"
		}
		fmt.Fprintf(&b, "    ! %s: %s\n", who, strings.Join(m.Reasons, "; "))
	}
	if !d.Changed {
		b.WriteString("no change\n")
	}
	return b.String()
}

// destroyText says what destroy deleted.
func destroyText(d *stage.DestroyResult) string {
	var b strings.Builder
	for _, s := range d.Orphans {
		fmt.Fprintf(&b, "deleted %s (no longer rendered)\n", s)
	}
	for _, s := range d.Deleted {
		fmt.Fprintf(&b, "deleted stack %s\n", s)
	}
	for _, s := range d.Absent {
		fmt.Fprintf(&b, "stack %s: already gone\n", s)
	}
	return b.String()
}
