package stages

import (
	"github.com/kube-aws/kube-aws/core/stage"
)

// Reporter receives what plugins report while a stage runs. Plugins run
// concurrently, so implementations must be safe for concurrent use.
type Reporter interface {
	Event(plugin string, st stage.Name, ev stage.Event)
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
