package stages

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/kube-aws/kube-aws/core/stage"
)

// LiveReporter is the progress view of `kube-aws up`, `diff` and `destroy`
// on a terminal: one line per CloudFormation stack with its latest status,
// redrawn in place as the deploy plugin reports stack events, with every
// other line printed above it. Off a terminal (or with CI set) kube-aws uses
// TextReporter instead: the same events line by line, which is what a CI log
// can keep.
//
// Stack events reach kube-aws as the deploy engine's log lines
// ("15:04:05 <stack> <STATUS> <resource type> <logical id>[: reason]"), so
// that plugins need no protocol change to take part; a line of that shape
// updates its stack's row.
type LiveReporter struct {
	W       io.Writer
	Verbose bool

	mu     sync.Mutex
	text   TextReporter
	order  []string
	rows   map[string]string
	drawn  int
	inited bool
}

// Event updates a stack's row or prints the line above the view.
func (r *LiveReporter) Event(plugin string, st stage.Name, ev stage.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.inited {
		r.text = TextReporter{W: r.W, Verbose: r.Verbose}
		r.rows = map[string]string{}
		r.inited = true
	}
	if ev.Kind == stage.EventLog {
		if stack, row, ok := ParseStackEvent(ev.Message); ok {
			if _, seen := r.rows[stack]; !seen {
				r.order = append(r.order, stack)
			}
			r.rows[stack] = row
			r.redraw()
			return
		}
	}
	r.clear()
	r.text.Event(plugin, st, ev)
	r.redraw()
}

// Done leaves the view as it is and ends it: later output goes below it.
func (r *LiveReporter) Done() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drawn = 0
	r.order, r.rows = nil, map[string]string{}
}

// clear removes the drawn rows, so a plain line can be printed in their place.
func (r *LiveReporter) clear() {
	if r.drawn > 0 {
		fmt.Fprintf(r.W, "\x1b[%dA\x1b[J", r.drawn)
		r.drawn = 0
	}
}

func (r *LiveReporter) redraw() {
	r.clear()
	for _, s := range r.order {
		fmt.Fprintf(r.W, "\x1b[2K  %-24s %s\n", s, r.rows[s])
	}
	r.drawn = len(r.order)
}

// ParseStackEvent recognises a line of the deploy engine about one stack and
// returns the stack and what its row shows. Stack events
// ("15:04:05 <stack> <STATUS> <type> <logical id>[: reason]") show the status
// and, for a resource rather than the stack itself, the resource; the
// engine's own messages about a stack ("15:04:05 <stack padded to 16>
// creating demo-network") show the message. A line about the whole cluster
// ("15:04:05 uploaded 11 objects...") is not one: its first word is not
// padded to the stack column.
func ParseStackEvent(line string) (stack, row string, ok bool) {
	f := strings.Fields(line)
	if len(f) < 3 || !isClock(f[0]) {
		return "", "", false
	}
	if isStatus(f[2]) {
		row = f[2]
		if len(f) >= 5 && f[3] != "AWS::CloudFormation::Stack" {
			row += "  " + strings.Join(f[4:], " ") + " (" + f[3] + ")"
		} else if i := strings.Index(line, ": "); i >= 0 {
			row += ": " + line[i+2:]
		}
		return f[1], row, true
	}
	// The engine writes "%s %-16s %s": time, stack, message.
	const col = 16
	rest := line[len(f[0]):]
	if !strings.HasPrefix(rest, " "+f[1]) {
		return "", "", false
	}
	pad := rest[1+len(f[1]):]
	if len(f[1]) < col && !strings.HasPrefix(pad, strings.Repeat(" ", col-len(f[1])+1)) {
		return "", "", false
	}
	return f[1], strings.Join(f[2:], " "), true
}

func isClock(s string) bool {
	return len(s) == 8 && s[2] == ':' && s[5] == ':'
}

func isStatus(s string) bool {
	if !strings.Contains(s, "_") {
		return false
	}
	for _, c := range s {
		if (c < 'A' || c > 'Z') && c != '_' {
			return false
		}
	}
	return true
}
