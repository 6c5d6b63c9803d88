// Package command runs the machine's own tools (ctr, blkid, mkfs, mount),
// which come with the image, and turns a failure into an error a person
// reads: the command line, the exit status and what it printed on stderr.
package command

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// Runner runs a command and returns its stdout.
type Runner func(ctx context.Context, name string, args ...string) (string, error)

// Exec is the Runner that runs commands for real.
func Exec(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		return stdout.String(), &Error{Line: Line(name, args...), Err: err, Stderr: strings.TrimSpace(stderr.String())}
	}
	return stdout.String(), nil
}

// Error is a command that failed.
type Error struct {
	Line   string
	Err    error
	Stderr string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("`%s`: %v", e.Line, e.Err)
	if e.Stderr != "" {
		s += ": " + e.Stderr
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// ExitCode is the command's exit status, or -1 when it did not exit (not
// found, killed) or err is not a command's.
func ExitCode(err error) int {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	return -1
}

// Line is a command as a person would type it.
func Line(name string, args ...string) string {
	return strings.Join(append([]string{name}, args...), " ")
}
