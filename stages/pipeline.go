package stages

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
)

// RunStage runs one stage from the persisted state of the stages before it,
// refusing missing or stale state, and persists its result. Render also
// writes the output folder.
func (s *Session) RunStage(ctx context.Context, name stage.Name) (*Outcome, error) {
	return s.Run(ctx, name)
}

// Render runs initialise and render and writes the output folder.
func (s *Session) Render(ctx context.Context) (*Outcome, error) {
	return s.Run(ctx, stage.Initialise, stage.Render)
}

// Run runs consecutive stages, starting from the persisted state of the
// stage before the first. Each stage finishes in every plugin before the
// next starts; a fatal stops the run after its stage, with every diagnostic
// of the run in the Outcome. The Outcome is never nil.
func (s *Session) Run(ctx context.Context, names ...stage.Name) (*Outcome, error) {
	return s.run(ctx, names, "")
}

// Operate runs initialise and render (persisting their state and writing
// the output folder, as kube-aws render does), then the operation op
// (stage.Diff or stage.Destroy) in every plugin that implements it, on the
// render output: diff concurrently, destroy one plugin after another in
// reverse plugin order. The operation persists nothing; its result is in
// the Outcome.
func (s *Session) Operate(ctx context.Context, op stage.Name) (*Outcome, error) {
	return s.run(ctx, []stage.Name{stage.Initialise, stage.Render}, op)
}

// AdminCredential asks the plugins that implement the admin-credential
// operation for the cluster's admin credential. The operation runs alone,
// with no stage before it: its input is cluster.yaml and the plugins'
// values, and the plugin answers from what it keeps. One enabled plugin
// may provide the credential; it persists nothing, and the credential
// stays in memory (no Outcome, state file or report holds it). warnings are
// the session's and the operation's.
func (s *Session) AdminCredential(ctx context.Context) (cred *stage.Credential, warnings diag.List, err error) {
	res, err := s.runStage(ctx, stage.AdminCredential, s.freshCarry())
	if err != nil {
		return nil, nil, err
	}
	diags := append(append(diag.List{}, s.Diagnostics...), res.Diagnostics...)
	diags.Sort()
	switch {
	case len(res.Plugins) == 0:
		return nil, nil, &Error{Code: ExitFatal, Diagnostics: diags,
			Msg: fmt.Sprintf("no enabled plugin provides the cluster's admin credential (the %s operation): the pki built-in does (plugins.pki.enabled must not be false)", stage.AdminCredential)}
	case diags.HasFatal():
		return nil, nil, &Error{Code: ExitFatal, Diagnostics: diags, Msg: "getting the admin credential failed"}
	case res.AdminCredential == nil:
		return nil, nil, &Error{Code: ExitFatal, Diagnostics: diags,
			Msg: fmt.Sprintf("%s answered the %s operation without a credential", pluginNames(res.Plugins), stage.AdminCredential)}
	}
	return res.AdminCredential, diags, nil
}

// pluginNames is "plugin a" or "plugins a, b".
func pluginNames(ps []string) string {
	if len(ps) == 1 {
		return "plugin " + ps[0]
	}
	return "plugins " + strings.Join(ps, ", ")
}

func (s *Session) run(ctx context.Context, names []stage.Name, op stage.Name) (*Outcome, error) {
	out := &Outcome{Cluster: s.Plan.Cluster().ClusterName, Stages: []StageReport{}, Diagnostics: append(diag.List{}, s.Diagnostics...)}
	if len(names) == 0 {
		return out, nil
	}
	for i := 1; i < len(names); i++ {
		if names[i].Index() != names[i-1].Index()+1 {
			return out, fmt.Errorf("stages %v are not consecutive", names)
		}
	}
	var c *carry
	if names[0] == stage.Initialise {
		c = s.freshCarry()
	} else {
		var err error
		if c, err = s.loadCarry(names[0]); err != nil {
			return out, err
		}
	}
	fail := func(err *Error) (*Outcome, error) {
		out.Diagnostics.Sort()
		err.Diagnostics = out.Diagnostics
		return out, err
	}
	// The initialise stage's state is written while the render stage's
	// plugins run: they only compute, and at 100 node pools encoding the
	// state (a MB of constructs) takes kube-aws as long as a fifth of the
	// render. Nothing the render writes is written before it is done.
	var initState *stateWrite
	joinInitState := func() *Error {
		if initState == nil {
			return nil
		}
		w := initState
		initState = nil
		<-w.done
		out.Stages = append(out.Stages, w.rep)
		if w.err != nil {
			return &Error{Code: ExitFatal, Msg: w.err.Error()}
		}
		c.prevHash = w.hash
		return nil
	}
	for i, n := range names {
		start := time.Now()
		res, err := s.runStage(ctx, n, c)
		if jerr := joinInitState(); jerr != nil {
			return fail(jerr)
		}
		if err != nil {
			return out, err
		}
		out.Diagnostics = append(out.Diagnostics, res.Diagnostics...)
		rep := StageReport{Stage: n, Plugins: res.Plugins}
		if rep.Plugins == nil {
			rep.Plugins = []string{}
		}
		if res.Diagnostics.HasFatal() {
			if n == stage.Deploy {
				out.Deploy = res.Deploy // what got deployed before the failure
			}
			rep.Duration = time.Since(start)
			out.Stages = append(out.Stages, rep)
			// A failed stage leaves no state behind: the next stage must not
			// start from an older result of it.
			_ = os.Remove(s.statePath(n))
			return fail(&Error{Code: ExitFatal, Msg: fmt.Sprintf("stage %s failed", n)})
		}
		switch n {
		case stage.Initialise:
			c.values, c.constructs, c.capabilities = res.Values, res.Constructs, res.Capabilities
		case stage.Render:
			rd, err := s.writeOutput(res)
			if err != nil {
				out.Diagnostics = append(out.Diagnostics, diag.Diagnostic{Severity: diag.Fatal, Stage: string(stage.Render),
					Message: "writing the render output failed: " + err.Error(),
					Hint:    "the previous output was left as it was"})
				_ = os.Remove(s.statePath(n))
				out.Stages = append(out.Stages, rep)
				return fail(&Error{Code: ExitFatal, Msg: "writing the render output failed"})
			}
			c.rendered = rd
			out.Rendered = rd
			stored := *rd
			stored.Dir = relToDir(s.Plan.ClusterDir, rd.Dir)
			res.Rendered = &stored
		case stage.Deploy:
			c.deploy = res.Deploy
			out.Deploy = res.Deploy
		}
		if n == stage.Initialise && i+1 < len(names) && names[i+1] == stage.Render {
			initState = s.startWriteState(n, c.prevHash, res, rep, start)
			if err := interrupted(ctx); err != nil {
				if jerr := joinInitState(); jerr != nil {
					return fail(jerr)
				}
				return out, err
			}
			continue
		}
		h, err := s.writeState(n, c.prevHash, res)
		if err != nil {
			out.Stages = append(out.Stages, rep)
			return fail(&Error{Code: ExitFatal, Msg: err.Error()})
		}
		c.prevHash = h
		rep.State = s.statePath(n)
		rep.Duration = time.Since(start)
		out.Stages = append(out.Stages, rep)
		if err := interrupted(ctx); err != nil {
			return out, err
		}
	}
	if op != "" {
		if err := s.operate(ctx, op, c, out); err != nil {
			if err == ErrInterrupted {
				return out, err
			}
			return fail(err)
		}
	}
	out.Diagnostics.Sort()
	return out, nil
}

// operate runs an operation after the stages, adding what it found and did
// to out; an error is the run's failure.
func (s *Session) operate(ctx context.Context, op stage.Name, c *carry, out *Outcome) *Error {
	start := time.Now()
	res, err := s.runStage(ctx, op, c)
	if err != nil {
		if e, ok := err.(*Error); ok {
			return e
		}
		return &Error{Code: ExitFatal, Msg: err.Error()}
	}
	out.Diagnostics = append(out.Diagnostics, res.Diagnostics...)
	rep := StageReport{Stage: op, Plugins: res.Plugins, Duration: time.Since(start)}
	if rep.Plugins == nil {
		rep.Plugins = []string{}
	}
	out.Stages = append(out.Stages, rep)
	out.Diff, out.Destroy = res.Diff, res.Destroy
	if len(res.Plugins) == 0 {
		return &Error{Code: ExitFatal, Msg: fmt.Sprintf("no enabled plugin implements %s: the deploy plugin does (plugins.deploy.enabled must not be false)", op)}
	}
	if res.Diagnostics.HasFatal() {
		return &Error{Code: ExitFatal, Msg: fmt.Sprintf("%s failed", op)}
	}
	return nil
}

// writeOutput writes the render output with every file's plugin version.
func (s *Session) writeOutput(res *StageResult) (*stage.Rendered, error) {
	versions := map[string]string{}
	for _, p := range s.Plugins {
		versions[p.Candidate().Name] = p.Info().Version
	}
	var secrets map[string]string
	if s.Plan.Config != nil {
		secrets = s.Plan.Config.Secrets
	}
	rd, err := WriteOutput(s.Plan.Options.OutDir, res.files, versions, secrets)
	if err != nil {
		return nil, err
	}
	if res.Rendered != nil {
		rd.Stacks = res.Rendered.Stacks
	}
	return rd, nil
}
