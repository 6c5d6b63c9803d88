// Package action is what each kube-aws command does, as a library, the way
// Helm's pkg/action serves cmd/helm: one type per verb (Render, Stage, Up,
// Diff, Destroy, Validate), each owning its plan and session (plugins
// launched, registered and, on every return, killed), and the policy of the
// verb: what needs confirming, when up retries, what diff's exit code is.
// Plugin commands (ListPlugins, DescribePlugin, LockPlugins, VerifyPlugins)
// and Init are here too.
//
// cmd/kube-aws only turns flags into these types, supplies Ask (a terminal
// prompt, or nil when there is nobody to ask) and a stages.Reporter, and
// prints what comes back; the pipeline itself is package stages.
package action

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
	"github.com/kube-aws/kube-aws/stages"
)

// Config is what every action needs.
type Config struct {
	// Options are the pipeline's (cluster.yaml, plugin folders, timeouts,
	// reporter...); an action sets OutDir and AWS itself.
	Options stages.Options
	// Ask puts a yes/no question to the operator. Nil means there is
	// nobody to ask (no terminal, CI): an action that needs a confirmation
	// then fails with a usage error naming the flag that gives it.
	Ask func(Question) (bool, error)
}

// Question is a confirmation an action needs.
type Question struct {
	Text string
	// Flag confirms it up front (--yes).
	Flag string
	// Diagnostics say why it is asked, when a failed run asks it.
	Diagnostics diag.List
}

// confirm asks q, or says which flag answers it when nobody can be asked.
func (c *Config) confirm(q Question) error {
	if c.Ask == nil {
		return stages.ConfigError("%s: there is no terminal to ask on; pass %s to confirm", q.Text, q.Flag)
	}
	yes, err := c.Ask(q)
	if err != nil {
		return err
	}
	if !yes {
		return stages.ConfigError("not confirmed: nothing was done")
	}
	return nil
}

// session plans and launches; close must be called on every path.
func session(ctx context.Context, opts stages.Options) (s *stages.Session, close func(), err error) {
	plan, err := stages.NewPlanContext(ctx, opts)
	if err != nil {
		return nil, func() {}, err
	}
	sess, err := plan.Launch(ctx)
	if sess == nil {
		return nil, func() {}, err
	}
	return sess, sess.Close, err
}

// run plans, launches, runs what f does with the session and closes it.
func run(ctx context.Context, opts stages.Options, f func(*stages.Session) (*stages.Outcome, error)) (*stages.Outcome, error) {
	s, closeAll, err := session(ctx, opts)
	defer closeAll()
	if err != nil {
		return nil, err
	}
	return f(s)
}

// DefaultAWSTimeout is the deploy plugin's own bound of an AWS operation.
const DefaultAWSTimeout = 60 * time.Minute

// withAWS gives the AWS settings to the plugins that reach AWS and keeps
// the stage timeout above the AWS timeout: the deploy plugin must not be
// killed before its own bound.
func (c *Config) withAWS(aws stage.AWSSettings, outDir string) stages.Options {
	opts := c.Options
	opts.OutDir = outDir
	opts.AWS = &aws
	t := aws.Timeout
	if t <= 0 {
		t = DefaultAWSTimeout
	}
	if opts.StageTimeout < t+time.Minute {
		opts.StageTimeout = t + time.Minute
	}
	return opts
}

// Render runs initialise and render and writes the output folder.
type Render struct {
	Config
	OutDir string
}

// Run renders.
func (a *Render) Run(ctx context.Context) (*stages.Outcome, error) {
	opts := a.Options
	opts.OutDir = a.OutDir
	return run(ctx, opts, func(s *stages.Session) (*stages.Outcome, error) {
		return s.Run(ctx, stage.Initialise, stage.Render)
	})
}

// Stage runs one stage from the state the previous one persisted.
type Stage struct {
	Config
	Name   stage.Name
	OutDir string
	// AWS are the AWS flags, for deploy and validate.
	AWS stage.AWSSettings
}

// Run runs the stage.
func (a *Stage) Run(ctx context.Context) (*stages.Outcome, error) {
	if err := a.confirmUnlock(a.AWS); err != nil {
		return nil, err
	}
	return run(ctx, a.withAWS(a.AWS, a.OutDir), func(s *stages.Session) (*stages.Outcome, error) {
		return s.Run(ctx, a.Name)
	})
}

// confirmUnlock asks before removing a lock another kube-aws may hold.
func (c *Config) confirmUnlock(aws stage.AWSSettings) error {
	if !aws.ForceUnlock || aws.Yes {
		return nil
	}
	return c.confirm(Question{Text: "remove the deploy lock of this cluster, which another kube-aws may still hold?", Flag: "--yes with --force-unlock"})
}

// Up runs the four stages in one session: initialise, render, deploy,
// validate.
type Up struct {
	Config
	OutDir string
	AWS    stage.AWSSettings
	// OutputsFile, when set, receives the deploy result as JSON.
	OutputsFile string
}

// Run brings the cluster up. A deploy that stops for want of confirmation
// (a stack left by a failed create, which only --yes may delete) asks, when
// someone can be asked, and runs again confirmed.
func (a *Up) Run(ctx context.Context) (*stages.Outcome, error) {
	if err := a.confirmUnlock(a.AWS); err != nil {
		return nil, err
	}
	up := func(aws stage.AWSSettings) (*stages.Outcome, error) {
		return run(ctx, a.withAWS(aws, a.OutDir), func(s *stages.Session) (*stages.Outcome, error) {
			return s.Run(ctx, stage.Initialise, stage.Render, stage.Deploy, stage.Validate)
		})
	}
	out, err := up(a.AWS)
	if err != nil && !a.AWS.Yes && a.Ask != nil && NeedsYes(out) {
		if cerr := a.confirm(Question{Text: "delete the failed stack and create it again?", Flag: "--yes", Diagnostics: out.Diagnostics}); cerr != nil {
			return out, cerr
		}
		aws := a.AWS
		aws.Yes = true
		out, err = up(aws)
	}
	if a.OutputsFile != "" && out != nil && out.Deploy != nil {
		if werr := WriteDeployResult(a.OutputsFile, out.Deploy); werr != nil && err == nil {
			err = werr
		}
	}
	return out, err
}

// Validate runs the validate stage from the persisted deploy state.
type Validate struct {
	Config
	AWS stage.AWSSettings
}

// Run validates the deployed cluster. Validate checks what the last `kube-aws
// up` deployed, so when that deploy no longer matches cluster.yaml, the
// plugins or the render output (or nothing was deployed from this folder),
// it refuses and names the command that deploys, not the per-stage commands
// of CI that the state files are named after.
func (a *Validate) Run(ctx context.Context) (*stages.Outcome, error) {
	out, err := run(ctx, a.withAWS(a.AWS, a.Options.OutDir), func(s *stages.Session) (*stages.Outcome, error) {
		return s.Run(ctx, stage.Validate)
	})
	var e *stages.Error
	if errors.As(err, &e) && e.Stale != nil {
		return out, &stages.Error{Code: e.Code, Stale: e.Stale, Msg: staleForValidate(e.Stale)}
	}
	return out, err
}

// staleForValidate is what validate says when the deploy it would check is
// not there or not what cluster.yaml describes now.
func staleForValidate(st *stages.Stale) string {
	if st.Missing {
		return fmt.Sprintf("nothing to validate: no cluster was deployed from this folder yet (no state for stage %s: %s): run `kube-aws up` first", st.Stage, st.Why)
	}
	return fmt.Sprintf("the deployed cluster is not what this folder describes now (state of stage %s is stale: %s): run `kube-aws up` to deploy the change, then `kube-aws validate` (`kube-aws diff` shows what up would change; a CI pipeline runs `kube-aws stage %s` and the stages after it)", st.Stage, st.Why, st.Stage)
}

// Diff renders and asks the plugins what a deploy would change.
type Diff struct {
	Config
	OutDir string
	AWS    stage.AWSSettings
	// ExitCode makes a diff that finds changes end with ErrChanges.
	ExitCode bool
}

// ErrChanges is the error of a diff with ExitCode that found changes: exit
// 3, a result, not a failure.
var ErrChanges = &stages.Error{Code: stages.ExitChanges, Msg: "diff found changes"}

// Run previews.
func (a *Diff) Run(ctx context.Context) (*stages.Outcome, error) {
	out, err := run(ctx, a.withAWS(a.AWS, a.OutDir), func(s *stages.Session) (*stages.Outcome, error) {
		return s.Operate(ctx, stage.Diff)
	})
	if err == nil && a.ExitCode && out.Diff != nil && out.Diff.Changed {
		err = ErrChanges
	}
	return out, err
}

// Destroy deletes every stack of the cluster, once confirmed.
type Destroy struct {
	Config
	OutDir string
	AWS    stage.AWSSettings
}

// Run destroys the cluster. Without --yes it asks first, naming the cluster.
func (a *Destroy) Run(ctx context.Context) (*stages.Outcome, error) {
	opts := a.withAWS(a.AWS, a.OutDir)
	plan, err := stages.NewPlanContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	if !a.AWS.Yes {
		if err := a.confirm(Question{Text: fmt.Sprintf("delete every stack of cluster %s?", plan.Cluster().ClusterName), Flag: "--yes"}); err != nil {
			return nil, err
		}
	}
	s, err := plan.Launch(ctx)
	if s != nil {
		defer s.Close()
	}
	if err != nil {
		return nil, err
	}
	return s.Operate(ctx, stage.Destroy)
}

// WriteDeployResult writes the deploy result as JSON for CI (`kube-aws up
// --outputs-file`): every stack with its status, outputs and whether it
// changed, and the cluster outputs such as the API endpoint. The file is
// replaced atomically.
func WriteDeployResult(path string, d *stage.DeployResult) error {
	if d == nil {
		d = &stage.DeployResult{}
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	if err := fileutil.WriteAtomic(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the deploy result to %s: %w", path, err)
	}
	return nil
}

// NeedsYes reports whether a run stopped for want of --yes: a plugin (the
// deploy plugin meeting a stack in ROLLBACK_COMPLETE, which it deletes and
// creates again only when confirmed) returned a fatal with
// diag.CodeNeedsConfirmation. Programs act on the code, never on wording.
func NeedsYes(out *stages.Outcome) bool {
	if out == nil {
		return false
	}
	for _, d := range out.Diagnostics.Fatals() {
		if d.Code == diag.CodeNeedsConfirmation {
			return true
		}
	}
	return false
}
