package stages

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/kube-aws/kube-aws/core/stage"
)

// Reporter receives what plugins report while a stage runs. Plugins run
// concurrently, so implementations must be safe for concurrent use.
type Reporter interface {
	Event(plugin string, st stage.Name, ev stage.Event)
}

// TextReporter prints "[plugin] message" lines, the form for a terminal and
// for CI logs. In JSON mode kube-aws writes these to stderr so stdout holds
// only the JSON document.
type TextReporter struct {
	W       io.Writer
	Verbose bool

	mu sync.Mutex
}

// Event prints a log line, a progress line or a diagnostic the plugin sent
// early. Debug logs and progress are shown only with --verbose.
func (r *TextReporter) Event(plugin string, st stage.Name, ev stage.Event) {
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

// Discard is a Reporter that drops every event.
type Discard struct{}

// Event does nothing.
func (Discard) Event(string, stage.Name, stage.Event) {}

// redactingReporter scrubs plain secrets from events before they reach the
// user: plugins only ever see markers, but a plugin bug must not leak one.
type redactingReporter struct {
	next    Reporter
	redact  func(string, map[string]string) string
	secrets map[string]string
}

func (r redactingReporter) Event(plugin string, st stage.Name, ev stage.Event) {
	if r.redact != nil && len(r.secrets) > 0 {
		ev.Message = r.redact(ev.Message, r.secrets)
		if ev.Diagnostic != nil {
			d := *ev.Diagnostic
			d.Message = r.redact(d.Message, r.secrets)
			d.Hint = r.redact(d.Hint, r.secrets)
			ev.Diagnostic = &d
		}
	}
	r.next.Event(plugin, st, ev)
}
