package cloudinit

import (
	"context"
	"fmt"
	"io"
	"os/exec"
)

// Run runs every runcmd entry in order, each with env and its output going
// to out, calling started before each one. It stops at the first entry that
// fails (cannot start, or exits non-zero) and returns a *Failed naming it.
func (u *Userdata) Run(ctx context.Context, env []string, out io.Writer, started func(i int, c Command)) error {
	for i, c := range u.RunCmd {
		if started != nil {
			started(i, c)
		}
		if err := c.Exec(ctx, env, out).Run(); err != nil {
			if ctx.Err() != nil {
				err = fmt.Errorf("%w (%v)", err, context.Cause(ctx))
			}
			return &Failed{Index: i, Command: c, Err: err}
		}
	}
	return nil
}

// Exec makes the process of a command: an argv as it is (its first item
// looked up on PATH), a string with /bin/sh -c, in /, with env and the
// output going to out.
func (c Command) Exec(ctx context.Context, env []string, out io.Writer) *exec.Cmd {
	var cmd *exec.Cmd
	if c.Argv != nil {
		cmd = exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
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
