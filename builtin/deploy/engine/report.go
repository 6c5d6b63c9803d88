package engine

import (
	"fmt"
	"strings"
	"time"
)

// EventKind says what an Event is about.
type EventKind string

const (
	// EventStack is one CloudFormation stack event (a resource or the
	// stack itself changed status), reported as it is seen.
	EventStack EventKind = "stack"
	// EventAction is something the engine does or decided about a stack
	// (create, update, no change, recreate, delete).
	EventAction EventKind = "action"
	// EventUpload is an asset or secret uploaded (or found already there).
	EventUpload EventKind = "upload"
	// EventLock is the deploy lock taken or released.
	EventLock EventKind = "lock"
	// EventMachine is one step of a roll about one machine (Instance) or
	// one machine stack's group.
	EventMachine EventKind = "machine"
)

// Event is one line of progress. A CLI prints String() line by line when it
// is not on a terminal, or keeps a per-stack live view from the fields.
type Event struct {
	Time time.Time
	Kind EventKind
	// Stack is the rendered stack name (network, nodepool-a); empty for
	// events about the whole cluster.
	Stack string
	// For EventStack: the resource and its new status.
	LogicalID    string
	ResourceType string
	Status       string
	Reason       string
	// For EventMachine: the instance, its address, and the roll's phase
	// (package roll's Phase: draining, ready...).
	Instance string
	Address  string
	Phase    string
	// Message is a human sentence for the other kinds.
	Message string
}

// String renders the event as one line. Sensitive values never reach an
// Event, so the line is safe to log.
func (e Event) String() string {
	var b strings.Builder
	b.WriteString(e.Time.UTC().Format("15:04:05"))
	if e.Stack != "" {
		fmt.Fprintf(&b, " %-16s", e.Stack)
	}
	switch e.Kind {
	case EventStack:
		fmt.Fprintf(&b, " %-28s %-40s %s", e.Status, e.ResourceType, e.LogicalID)
		if e.Reason != "" {
			fmt.Fprintf(&b, ": %s", e.Reason)
		}
	case EventMachine:
		// "machine <instance> <phase>: <message>": the CLI's live view
		// keeps a row per machine from it.
		who := e.Instance
		if who == "" {
			who = "-"
		}
		fmt.Fprintf(&b, " machine %s %s: %s", who, e.Phase, e.Message)
	default:
		b.WriteString(" ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// Reporter receives progress events. Report is called from several
// goroutines at once (stacks are deployed in parallel).
type Reporter interface {
	Report(Event)
}

// ReporterFunc adapts a function to Reporter.
type ReporterFunc func(Event)

// Report calls f.
func (f ReporterFunc) Report(e Event) { f(e) }

func (e *Engine) report(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	e.opts.Reporter.Report(ev)
}

func (e *Engine) say(stack, format string, args ...any) {
	e.report(Event{Kind: EventAction, Stack: stack, Message: fmt.Sprintf(format, args...)})
}
