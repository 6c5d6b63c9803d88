// Package diag defines the diagnostics every stage and every plugin reports:
// a severity, where the problem is (plugin, stage, config path or file:line)
// and a hint that says what to do about it.
package diag

import (
	"fmt"
	"sort"
	"strings"
)

// Severity says whether a diagnostic stops the run.
type Severity string

const (
	// Fatal stops the run once the current stage has finished in every plugin.
	Fatal Severity = "fatal"
	// Warning is printed and the run goes on (a deprecation, say).
	Warning Severity = "warning"
)

// Diagnostic is one problem found by kube-aws or a plugin.
type Diagnostic struct {
	Severity Severity `json:"severity"`
	Plugin   string   `json:"plugin,omitempty"`
	Stage    string   `json:"stage,omitempty"`
	// Path is a config path such as nodePools[1].name or plugins.dex.values.issuer.
	Path string `json:"path,omitempty"`
	// File, Line and Column locate the problem in a file when there is one.
	File    string `json:"file,omitempty"`
	Line    int    `json:"line,omitempty"`
	Column  int    `json:"column,omitempty"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
	// Code identifies, for programs, a diagnostic that a caller acts on
	// rather than only prints (CodeNeedsConfirmation); empty for most.
	Code string `json:"code,omitempty"`
	// ReportedBy is the plugin that reported the diagnostic when Plugin
	// names another: the plugin whose contribution it is about (a chart
	// the helm plugin found broken names the plugin that shipped it).
	// kube-aws fills it; empty when the reporter is Plugin itself.
	ReportedBy string `json:"reportedBy,omitempty"`
	// ConflictsWith names the other plugin of a conflict between two
	// (two plugins that define one thing differently, or patch one path):
	// Plugin is the one the conflict is blamed on, the later in plugin
	// order, and the heading shows both. Empty for a problem of one plugin.
	ConflictsWith string `json:"conflictsWith,omitempty"`
}

// CodeNeedsConfirmation marks a fatal that the same command, run again with
// --yes, would get past: a plugin that must not do something destructive
// unasked (the deploy plugin recreating a stack left by a failed create).
// kube-aws up asks on a terminal and runs again when the user agrees.
const CodeNeedsConfirmation = "needs-confirmation"

// Location renders where the diagnostic points: file:line:col, then config path.
func (d Diagnostic) Location() string {
	var parts []string
	if d.File != "" {
		loc := d.File
		if d.Line > 0 {
			loc += fmt.Sprintf(":%d", d.Line)
			if d.Column > 0 {
				loc += fmt.Sprintf(":%d", d.Column)
			}
		}
		parts = append(parts, loc)
	}
	if d.Path != "" {
		parts = append(parts, d.Path)
	}
	return strings.Join(parts, " ")
}

// String renders a diagnostic as one line for a terminal, followed by its hint.
func (d Diagnostic) String() string {
	var b strings.Builder
	b.WriteString(string(d.Severity))
	if d.Plugin != "" || d.Stage != "" {
		b.WriteString(" [")
		b.WriteString(d.Plugin)
		if d.Stage != "" {
			if d.Plugin != "" {
				b.WriteString("/")
			}
			b.WriteString(d.Stage)
		}
		if d.ConflictsWith != "" {
			b.WriteString(", conflicts with ")
			b.WriteString(d.ConflictsWith)
		}
		if d.ReportedBy != "" {
			b.WriteString(", reported by ")
			b.WriteString(d.ReportedBy)
		}
		b.WriteString("]")
	}
	if loc := d.Location(); loc != "" {
		b.WriteString(" ")
		b.WriteString(loc)
	}
	b.WriteString(": ")
	b.WriteString(d.Message)
	if d.Hint != "" {
		b.WriteString("\n    hint: ")
		b.WriteString(d.Hint)
	}
	return b.String()
}

// Error makes a single diagnostic usable as an error.
func (d Diagnostic) Error() string { return d.String() }

// List is an ordered collection of diagnostics.
type List []Diagnostic

// HasFatal reports whether any diagnostic is fatal.
func (l List) HasFatal() bool {
	for _, d := range l {
		if d.Severity == Fatal {
			return true
		}
	}
	return false
}

// Count returns the number of fatals and warnings.
func (l List) Count() (fatals, warnings int) {
	for _, d := range l {
		if d.Severity == Fatal {
			fatals++
		} else {
			warnings++
		}
	}
	return
}

// Fatals returns only the fatal diagnostics.
func (l List) Fatals() List {
	var out List
	for _, d := range l {
		if d.Severity == Fatal {
			out = append(out, d)
		}
	}
	return out
}

// WithDefaults fills Plugin and Stage on every diagnostic that lacks them, so
// a plugin need not repeat who and where it is.
func (l List) WithDefaults(plugin, stage string) List {
	out := make(List, len(l))
	for i, d := range l {
		if d.Plugin == "" {
			d.Plugin = plugin
		}
		if d.Stage == "" {
			d.Stage = stage
		}
		out[i] = d
	}
	return out
}

// Reported stamps the diagnostics one plugin reported in a stage: Plugin
// and Stage default to the reporter and the stage, and ReportedBy names the
// reporter exactly when Plugin names another plugin (the one whose
// contribution the diagnostic is about). What a plugin put in ReportedBy
// itself is not trusted.
func (l List) Reported(reporter, stage string) List {
	out := l.WithDefaults(reporter, stage)
	for i := range out {
		out[i].ReportedBy = ""
		if out[i].Plugin != reporter {
			out[i].ReportedBy = reporter
		}
	}
	return out
}

// PromoteWarnings turns every warning into a fatal: --warnings-as-errors.
func (l List) PromoteWarnings() List {
	out := make(List, len(l))
	for i, d := range l {
		if d.Severity == Warning {
			d.Severity = Fatal
			d.Hint = strings.TrimSpace(d.Hint + " (a warning, made fatal by --warnings-as-errors)")
		}
		out[i] = d
	}
	return out
}

// Sort orders diagnostics by file, line, path and plugin so output is stable
// whatever order concurrent plugins finished in. Fatals come first.
func (l List) Sort() {
	sort.SliceStable(l, func(i, j int) bool {
		a, b := l[i], l[j]
		if a.Severity != b.Severity {
			return a.Severity == Fatal
		}
		if a.File != b.File {
			return a.File < b.File
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return false
	})
}

// Error renders every diagnostic, one per line, with a summary line.
func (l List) Error() string {
	var b strings.Builder
	for _, d := range l {
		b.WriteString(d.String())
		b.WriteString("\n")
	}
	f, w := l.Count()
	fmt.Fprintf(&b, "%d fatal, %d warning(s)", f, w)
	return b.String()
}

// Fatalf builds a fatal diagnostic.
func Fatalf(format string, args ...any) Diagnostic {
	return Diagnostic{Severity: Fatal, Message: fmt.Sprintf(format, args...)}
}

// Warningf builds a warning diagnostic.
func Warningf(format string, args ...any) Diagnostic {
	return Diagnostic{Severity: Warning, Message: fmt.Sprintf(format, args...)}
}

// At sets the config path.
func (d Diagnostic) At(path string) Diagnostic { d.Path = path; return d }

// About names the plugin whose contribution the diagnostic is about (a
// construct's Plugin): a plugin that finds another's construct wrong says
// whose it is, and kube-aws records the reporter in ReportedBy. An empty
// plugin (a construct built without the merge) leaves the field alone.
func (d Diagnostic) About(plugin string) Diagnostic {
	if plugin != "" {
		d.Plugin = plugin
	}
	return d
}

// ConflictWith names the other plugin of a conflict between two; the
// diagnostic's own Plugin is the one it is blamed on. Naming the plugin
// itself, or no plugin, leaves the diagnostic alone.
func (d Diagnostic) ConflictWith(plugin string) Diagnostic {
	if plugin != d.Plugin {
		d.ConflictsWith = plugin
	}
	return d
}

// WithHint sets the hint.
func (d Diagnostic) WithHint(hint string) Diagnostic { d.Hint = hint; return d }

// InFile sets file:line:column.
func (d Diagnostic) InFile(file string, line, col int) Diagnostic {
	d.File, d.Line, d.Column = file, line, col
	return d
}
