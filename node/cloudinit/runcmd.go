package cloudinit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"time"
)

// RunOptions say how runcmd runs.
type RunOptions struct {
	// Env is every command's environment.
	Env []string
	// Out gets every command's output.
	Out io.Writer
	// Timeout bounds each command; 0 is no bound.
	Timeout time.Duration
	// Started, if set, is called before each command.
	Started func(i int, c Command)
}

// Run runs every runcmd entry in order. It stops at the first entry that
// fails (cannot start, exits non-zero, or times out) and returns a *Failed
// naming it.
func (u *Userdata) Run(ctx context.Context, o RunOptions) error {
	for i, c := range u.RunCmd {
		if o.Started != nil {
			o.Started(i, c)
		}
		cctx, cancel := ctx, context.CancelFunc(func() {})
		if o.Timeout > 0 {
			cctx, cancel = context.WithTimeout(ctx, o.Timeout)
		}
		err := c.Exec(cctx, o.Env, o.Out).Run()
		if err != nil && cctx.Err() != nil {
			if errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
				err = fmt.Errorf("%w: killed after %s", err, o.Timeout)
			} else {
				err = fmt.Errorf("%w (%v)", err, context.Cause(cctx))
			}
		}
		cancel()
		if err != nil {
			return &Failed{Index: i, Command: c, Err: err}
		}
	}
	return nil
}

// Exec makes the process of a command, run by /bin/sh as cloud-init's
// runcmd script runs it: a string as a command line, an argv as its words
// (so its first word is looked up on env's PATH, as in cloud-init), in /,
// with env and the output going to out.
func (c Command) Exec(ctx context.Context, env []string, out io.Writer) *exec.Cmd {
	var cmd *exec.Cmd
	if c.Argv != nil {
		cmd = exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", `exec "$@"`, "runcmd"}, c.Argv...)...)
	} else {
		cmd = exec.CommandContext(ctx, "/bin/sh", "-c", c.Shell)
	}
	cmd.Dir = "/"
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = out, out
	return cmd
}

// Failed is the error of the first runcmd entry that failed.
type Failed struct {
	Index   int
	Command Command
	Err     error
}

func (f *Failed) Error() string {
	return fmt.Sprintf("runcmd[%d] (line %d) `%s`: %v", f.Index, f.Command.Line, f.Command, f.Err)
}

func (f *Failed) Unwrap() error { return f.Err }
