package stages

import (
	"context"
	"errors"
	"fmt"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
)

// Exit codes of kube-aws (docs/exit-codes.md).
const (
	ExitOK = 0
	// ExitFatal: fatal diagnostics or a failed operation.
	ExitFatal = 1
	// ExitUsage: a usage or configuration error.
	ExitUsage = 2
	// ExitChanges: `kube-aws diff --exit-code` found something to change.
	ExitChanges = 3
	// ExitInterrupted: SIGINT or SIGTERM.
	ExitInterrupted = 130
)

// Error is a failed run. Code is the exit code; Diagnostics, when present,
// are every problem found (the run reports all of them at once).
type Error struct {
	Code        int
	Msg         string
	Diagnostics diag.List
	// Stale is set when the state of an earlier stage is missing or no
	// longer matches its inputs; Msg then names the `kube-aws stage`
	// command to run again, and a command that runs stages of its own
	// (validate) can name its own fix instead.
	Stale *Stale
}

// Stale says which stage's state a run could not use, and why.
type Stale struct {
	// Stage is the earliest stage to run again.
	Stage stage.Name
	// Missing is true when there is no state at all for Stage.
	Missing bool
	// Why is what changed, or what is wrong with the state.
	Why string
}

func (e *Error) Error() string {
	if e.Msg != "" {
		return e.Msg
	}
	f, w := e.Diagnostics.Count()
	return fmt.Sprintf("%d fatal diagnostic(s), %d warning(s)", f, w)
}

// ConfigError is a usage or configuration error (exit 2).
func ConfigError(format string, args ...any) *Error {
	return &Error{Code: ExitUsage, Msg: fmt.Sprintf(format, args...)}
}

// staleState is the error of a stage's state that is missing (why says
// where it was looked for) or stale (why says what changed): exit 2, naming
// the `kube-aws stage` command that makes it again.
func staleState(st stage.Name, missing bool, why string) *Error {
	e := &Error{Code: ExitUsage, Stale: &Stale{Stage: st, Missing: missing, Why: why}}
	if missing {
		e.Msg = fmt.Sprintf("no state for stage %s (%s): run `kube-aws stage %s` first", st, why, st)
	} else {
		e.Msg = fmt.Sprintf("state of stage %s is stale: %s: run `kube-aws stage %s` again", st, why, st)
	}
	return e
}

// ErrInterrupted is returned when the run was cancelled by a signal.
var ErrInterrupted = &Error{Code: ExitInterrupted, Msg: "interrupted: every plugin was stopped"}

// ExitCode maps an error returned by this package to kube-aws's exit code.
// Errors of unknown kind are failed operations (1).
func ExitCode(err error) int {
	if err == nil {
		return ExitOK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if errors.Is(err, context.Canceled) {
		return ExitInterrupted
	}
	return ExitFatal
}

// interrupted turns a cancelled parent context into ErrInterrupted.
func interrupted(ctx context.Context) error {
	if ctx.Err() != nil {
		return ErrInterrupted
	}
	return nil
}
