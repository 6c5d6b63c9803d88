package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/stages"
)

// runDocument is what `--output json` prints for commands that run stages.
// Its shape is stable: fields are only ever added.
type runDocument struct {
	Command  string `json:"command"`
	OK       bool   `json:"ok"`
	ExitCode int    `json:"exitCode"`
	Error    string `json:"error,omitempty"`
	*stages.Outcome
}

// report prints a command's outcome (text or JSON) and returns err marked
// as printed, so run does not print it twice.
func report(g *globals, command string, out *stages.Outcome, err error) error {
	if out == nil {
		out = &stages.Outcome{Stages: []stages.StageReport{}}
	}
	if out.Diagnostics == nil {
		out.Diagnostics = diag.List{}
	}
	if e, ok := err.(*stages.Error); ok && len(out.Diagnostics) == 0 && len(e.Diagnostics) > 0 {
		out.Diagnostics = e.Diagnostics
	}
	if g.json() {
		doc := runDocument{Command: command, OK: err == nil, ExitCode: stages.ExitCode(err), Outcome: out}
		if err != nil {
			doc.Error = err.Error()
		}
		if werr := writeJSON(g.stdout, doc); werr != nil {
			return werr
		}
		if err != nil {
			return &printedError{err}
		}
		return nil
	}
	for _, st := range out.Stages {
		fmt.Fprintf(g.stdout, "%s: %s\n", st.Stage, pluginList(st.Plugins))
		if g.verbose {
			fmt.Fprintf(g.stderr, "stage %s took %s\n", st.Stage, st.Duration.Round(time.Millisecond))
		}
	}
	if out.Rendered != nil {
		fmt.Fprintf(g.stdout, "rendered %d file(s) and %d stack(s) to %s (see %s)\n", len(out.Rendered.Files),
			len(out.Rendered.Stacks), out.Rendered.Dir, filepath.Join(out.Rendered.Dir, stages.ManifestName))
	}
	if out.Deploy != nil {
		for _, s := range out.Deploy.Stacks {
			fmt.Fprintf(g.stdout, "stack %s: %s\n", s.Name, s.Status)
		}
	}
	printDiagnostics(g.stderr, out.Diagnostics)
	if err != nil {
		fmt.Fprintf(g.stderr, "Error: %v\n", err)
		return &printedError{err}
	}
	return nil
}

func pluginList(ps []string) string {
	if len(ps) == 0 {
		return "no plugin implements this stage"
	}
	return fmt.Sprintf("%s (%d plugin(s))", strings.Join(ps, ", "), len(ps))
}

// printDiagnostics prints every diagnostic and a summary line.
func printDiagnostics(w io.Writer, ds diag.List) {
	if len(ds) == 0 {
		return
	}
	for _, d := range ds {
		fmt.Fprintln(w, d.String())
	}
	f, wn := ds.Count()
	fmt.Fprintf(w, "%d fatal, %d warning(s)\n", f, wn)
}

// fail reports an error that has no outcome (a usage or configuration
// error before any stage ran) in the chosen format.
func fail(g *globals, command string, err error) error {
	return report(g, command, nil, err)
}

func writeJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
