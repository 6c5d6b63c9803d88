package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/kube-aws/kube-aws/core/stage"
)

// The progress views of the CLI: stages.Reporters that print what plugins
// report while a stage runs.

// textReporter prints "[plugin] message" lines, the form for a terminal and
// for CI logs. In JSON mode kube-aws writes these to stderr so stdout holds
// only the JSON document.
type textReporter struct {
	W       io.Writer
	Verbose bool

	mu sync.Mutex
}

// Event prints a log line, a progress line or a diagnostic the plugin sent
// early. Debug logs and progress are shown only with --verbose.
func (r *textReporter) Event(plugin string, st stage.Name, ev stage.Event) {
	var line string
	switch ev.Kind {
	case stage.EventLog:
		if ev.Level == "debug" && !r.Verbose {
			return
		}
		line = ev.Message
		if ev.Level == "warn" || ev.Level == "error" {
			line = ev.Level + ": " + line
		}
	case stage.EventProgress:
		if !r.Verbose {
			return
		}
		if ev.Total > 0 {
			line = fmt.Sprintf("%s (%d/%d)", ev.Message, ev.Current, ev.Total)
		} else {
			line = fmt.Sprintf("%s (%d)", ev.Message, ev.Current)
		}
	default:
		// Diagnostics sent as events are reported with the stage's other
		// diagnostics, once, when the stage ends.
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, l := range strings.Split(strings.TrimRight(line, "\n"), "\n") {
		fmt.Fprintf(r.W, "[%s] %s\n", plugin, l)
	}
}

// liveReporter is the progress view of `kube-aws up`, `diff` and `destroy`
// on a terminal: one line per CloudFormation stack with its latest status,
// redrawn in place as the deploy plugin reports stack events, with every
// other line printed above it. Off a terminal (or with CI set) kube-aws uses
// textReporter instead: the same events line by line, which is what a CI log
// can keep.
//
// Stack events reach kube-aws as the deploy engine's log lines
// ("15:04:05 <stack> <STATUS> <resource type> <logical id>[: reason]"), so
// that plugins need no protocol change to take part; a line of that shape
// updates its stack's row.
type liveReporter struct {
	W       io.Writer
	Verbose bool

	mu     sync.Mutex
	text   textReporter
	order  []string
	rows   map[string]string
	drawn  int
	inited bool
}

// Event updates a stack's row or prints the line above the view.
func (r *liveReporter) Event(plugin string, st stage.Name, ev stage.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.inited {
		r.text = textReporter{W: r.W, Verbose: r.Verbose}
		r.rows = map[string]string{}
		r.inited = true
	}
	if ev.Kind == stage.EventLog {
		if m, ok := parseMachineEvent(ev.Message); ok && m.Instance != "" {
			// A machine of a roll gets a row of its own under its stack.
			key := m.Stack + " " + m.Instance
			if _, seen := r.rows[key]; !seen {
				r.order = append(r.order, key)
			}
			r.rows[key] = m.Phase + ": " + m.Message
			r.redraw()
			return
		}
		if stack, row, ok := parseStackEvent(ev.Message); ok {
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
func (r *liveReporter) Done() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drawn = 0
	r.order, r.rows = nil, map[string]string{}
}

// clear removes the drawn rows, so a plain line can be printed in their place.
func (r *liveReporter) clear() {
	if r.drawn > 0 {
		fmt.Fprintf(r.W, "\x1b[%dA\x1b[J", r.drawn)
		r.drawn = 0
	}
}

func (r *liveReporter) redraw() {
	r.clear()
	width := 24
	for _, s := range r.order {
		width = max(width, len(s))
	}
	for _, s := range r.order {
		fmt.Fprintf(r.W, "\x1b[2K  %-*s %s\n", width, s, r.rows[s])
	}
	r.drawn = len(r.order)
}

// parseStackEvent recognises a line of the deploy engine about one stack and
// returns the stack and what its row shows. Stack events
// ("15:04:05 <stack> <STATUS> <type> <logical id>[: reason]") show the status
// and, for a resource rather than the stack itself, the resource; the
// engine's own messages about a stack ("15:04:05 <stack padded to 16>
// creating demo-network") show the message. A line about the whole cluster
// ("15:04:05 uploaded 11 objects...") is not one: its first word is not
// padded to the stack column.
func parseStackEvent(line string) (stack, row string, ok bool) {
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

// machineEvent is one step of a roll as the deploy engine reports it
// ("15:04:05 <stack> machine <instance> <phase>: <message>"; instance "-"
// for the whole group).
type machineEvent struct {
	Time     string `json:"time"`
	Stack    string `json:"stack"`
	Instance string `json:"instance,omitempty"`
	Phase    string `json:"phase"`
	Message  string `json:"message"`
}

// parseMachineEvent recognises a roll's line about a machine.
func parseMachineEvent(line string) (machineEvent, bool) {
	f := strings.Fields(line)
	if len(f) < 5 || !isClock(f[0]) || f[2] != "machine" || !strings.HasSuffix(f[4], ":") {
		return machineEvent{}, false
	}
	m := machineEvent{Time: f[0], Stack: f[1], Instance: f[3], Phase: strings.TrimSuffix(f[4], ":")}
	if m.Instance == "-" {
		m.Instance = ""
	}
	if i := strings.Index(line, f[4]); i >= 0 {
		m.Message = strings.TrimSpace(line[i+len(f[4]):])
	}
	return m, true
}

// jsonReporter is --progress json: every event as one JSON object per
// line on stderr, for a CI system or a dashboard to follow a long up. A
// roll's machine steps and stack events carry their fields.
type jsonReporter struct {
	W  io.Writer
	mu sync.Mutex
}

type jsonEvent struct {
	Plugin  string        `json:"plugin"`
	Stage   string        `json:"stage"`
	Kind    string        `json:"kind"`
	Level   string        `json:"level,omitempty"`
	Message string        `json:"message,omitempty"`
	Current int64         `json:"current,omitempty"`
	Total   int64         `json:"total,omitempty"`
	Machine *machineEvent `json:"machine,omitempty"`
	Stack   string        `json:"stack,omitempty"`
	Status  string        `json:"status,omitempty"`
}

// Event writes the event as a line of JSON. Diagnostics are not events
// here: they are in the run's result (--output json) and on stderr once.
func (r *jsonReporter) Event(plugin string, st stage.Name, ev stage.Event) {
	if ev.Kind != stage.EventLog && ev.Kind != stage.EventProgress {
		return
	}
	out := jsonEvent{Plugin: plugin, Stage: string(st), Kind: string(ev.Kind), Level: ev.Level, Message: ev.Message, Current: ev.Current, Total: ev.Total}
	if ev.Kind == stage.EventLog {
		if m, ok := parseMachineEvent(ev.Message); ok {
			out.Kind, out.Machine = "machine", &m
		} else if stack, row, ok := parseStackEvent(ev.Message); ok {
			out.Kind, out.Stack, out.Status = "stack", stack, row
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.W.Write(append(b, '\n'))
}
