// Package command runs the machine's own tools (ctr, blkid, mkfs, mount),
// which come with the image, and turns a failure into an error a person
// reads: the command line, the exit status and what it printed on stderr.
package command

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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

// InputRunner runs a command with stdin read from a reader and returns
// its stdout.
type InputRunner func(ctx context.Context, stdin io.Reader, name string, args ...string) (string, error)

// ExecInput is the InputRunner that runs commands for real. stdin is
// copied in this goroutine, so a reader that blocks (a download) never
// outlives the call. A command that stops reading early and succeeds is
// its own business; a reader that fails is the call's failure, whatever
// the command made of its cut-off input, because it is the cause.
func ExecInput(ctx context.Context, stdin io.Reader, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", &Error{Line: Line(name, args...), Err: err}
	}
	r := &readErr{r: stdin}
	io.Copy(in, r) // a write error is the command having stopped reading
	in.Close()
	err = cmd.Wait()
	if r.err != nil {
		return stdout.String(), fmt.Errorf("reading the input of `%s`: %w", Line(name, args...), r.err)
	}
	if err != nil {
		return stdout.String(), &Error{Line: Line(name, args...), Err: err, Stderr: strings.TrimSpace(stderr.String())}
	}
	return stdout.String(), nil
}

// readErr remembers its reader's failure.
type readErr struct {
	r   io.Reader
	err error
}

func (r *readErr) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		r.err = err
	}
	return n, err
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
