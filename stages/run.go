package stages

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
)

// StageResult is the merged result of one stage across every plugin: what is
// persisted in .kube-aws/state/<stage>.json and what the next stage starts from.
type StageResult struct {
	// Plugins are the plugins that ran in the stage, in plugin order.
	Plugins []string `json:"plugins"`
	// Values are every plugin's values after initialise.
	Values map[string]stage.PluginValues `json:"values,omitempty"`
	// Capabilities records the provider chosen for each capability.
	Capabilities map[string]string `json:"capabilities,omitempty"`
	// Constructs are the merged constructs of initialise.
	Constructs *construct.Set `json:"constructs,omitempty"`
	// Rendered is the render output on disk (its files live there, not here).
	Rendered *stage.Rendered `json:"rendered,omitempty"`
	// Deploy is the combined deploy result.
	Deploy *stage.DeployResult `json:"deploy,omitempty"`
	// Diagnostics are every diagnostic of the stage (warnings, when it succeeded).
	Diagnostics diag.List `json:"diagnostics,omitempty"`
	// Diff and Destroy are the combined results of those operations (never
	// persisted: an operation leaves no state).
	Diff    *stage.DiffResult    `json:"-"`
	Destroy *stage.DestroyResult `json:"-"`
	// AdminCredential is the admin-credential operation's answer; it holds
	// a private key and is never persisted or printed.
	AdminCredential *stage.Credential `json:"-"`

	// files are the rendered files, in memory until written to the output folder.
	files []stage.File
}

// StageReport says what one stage did, for the command's output.
type StageReport struct {
	Stage   stage.Name `json:"stage"`
	Plugins []string   `json:"plugins"`
	// State is the state file written for the stage.
	State    string        `json:"state,omitempty"`
	Duration time.Duration `json:"-"`
}

// Outcome is what a command run produced: the stages that ran, every
// diagnostic, and the render output or deploy result when there is one. It
// is the document `--output json` prints, so its shape is stable.
type Outcome struct {
	// Cluster is cluster.yaml's clusterName.
	Cluster     string              `json:"cluster,omitempty"`
	Stages      []StageReport       `json:"stages"`
	Diagnostics diag.List           `json:"diagnostics"`
	Rendered    *stage.Rendered     `json:"rendered,omitempty"`
	Deploy      *stage.DeployResult `json:"deploy,omitempty"`
	// Diff and Destroy are what kube-aws diff and destroy found and did.
	Diff    *stage.DiffResult    `json:"diff,omitempty"`
	Destroy *stage.DestroyResult `json:"destroy,omitempty"`
}

// carry is what one stage hands the next: the accumulated results.
type carry struct {
	values       map[string]stage.PluginValues
	capabilities map[string]string
	constructs   *construct.Set
	rendered     *stage.Rendered
	deploy       *stage.DeployResult
	// prevHash is the sha256 of the previous stage's state file.
	prevHash string
}

// input builds the one Input every plugin of the stage receives.
func (s *Session) input(name stage.Name, c *carry) *stage.Input {
	in := &stage.Input{Stage: name, WorkDir: s.Plan.ClusterDir}
	if cfg := s.Plan.Config; cfg != nil {
		in.Config = cfg.JSON
		if name == stage.Deploy {
			// Only deploy needs the plain text (to encrypt it for upload), and
			// only in memory: Input.Secrets is never serialised.
			in.Secrets = cfg.Secrets
		}
	}
	in.Values = c.values
	in.Capabilities = c.capabilities
	if name != stage.Initialise {
		in.Constructs = c.constructs
	}
	if name != stage.Initialise && name != stage.Render {
		// Deploy, validate and the operations act on the render output.
		in.Rendered = c.rendered
	}
	if name == stage.Deploy || name == stage.Validate {
		// Deploy: the result of the deploy plugins before this one.
		in.Deploy = c.deploy
	}
	return in
}

// outcome of one plugin's call.
type call struct {
	res *stage.Result
	err error
	// streamed are the diagnostics the plugin sent as events.
	streamed diag.List
	// skipped is a deploy plugin not called because one before it failed.
	skipped bool
}

func containsDiag(l diag.List, d diag.Diagnostic) bool {
	for _, x := range l {
		if x == d {
			return true
		}
	}
	return false
}

// runStage calls every plugin that implements the stage and merges their
// results in plugin order. Deploy calls them one after another, each with
// the deploy result so far; the other stages call them concurrently on the
// same Input. It returns after the stage has finished in every plugin.
func (s *Session) runStage(ctx context.Context, name stage.Name, c *carry) (*StageResult, error) {
	var parts []Plugin
	for _, p := range s.Plugins {
		if p.Info().Implements(name) {
			parts = append(parts, p)
		}
	}
	calls := make([]call, len(parts))
	switch name {
	case stage.Deploy:
		s.runSequential(ctx, name, c, parts, calls)
	case stage.Destroy:
		// What deploy built in plugin order is taken down in reverse.
		rev := make([]Plugin, len(parts))
		for i, p := range parts {
			rev[len(parts)-1-i] = p
		}
		parts = rev
		s.runSequential(ctx, name, c, parts, calls)
	default:
		in := s.input(name, c)
		var wg sync.WaitGroup
		for i, p := range parts {
			wg.Add(1)
			go func(i int, p Plugin) {
				defer wg.Done()
				calls[i] = s.call(ctx, name, p, in)
			}(i, p)
		}
		wg.Wait()
	}
	if err := interrupted(ctx); err != nil {
		return nil, err
	}
	// Secrets a plugin generated in this stage are secrets from now on.
	s.foldGeneratedSecrets()

	res := &StageResult{}
	var diags diag.List
	for i, p := range parts {
		pname := p.Candidate().Name
		if !calls[i].skipped {
			res.Plugins = append(res.Plugins, pname)
		}
		if calls[i].err != nil {
			diags = append(diags, pluginFailed(pname, name, calls[i].err))
			continue
		}
		if calls[i].res != nil {
			diags = append(diags, calls[i].res.Diagnostics.Reported(pname, string(name))...)
		}
		// Diagnostics a plugin streamed as events count too, once.
		for _, d := range calls[i].streamed.Reported(pname, string(name)) {
			if calls[i].res == nil || !containsDiag(calls[i].res.Diagnostics.Reported(pname, string(name)), d) {
				diags = append(diags, d)
			}
		}
	}
	switch name {
	case stage.Initialise:
		diags = append(diags, s.mergeInitialise(parts, calls, c, res)...)
	case stage.Render:
		diags = append(diags, mergeRender(parts, calls, res)...)
	case stage.Deploy:
		diags = append(diags, mergeDeploy(parts, calls, c, res)...)
	case stage.Diff, stage.Destroy:
		mergeOperation(parts, calls, res)
	case stage.AdminCredential:
		diags = append(diags, mergeCredential(parts, calls, res)...)
	}
	if s.Plan.Options.WarningsAsErrors {
		diags = diags.PromoteWarnings()
	}
	// A plugin points at cluster.yaml by config path; the user wants the
	// line (docs/plugins.md, Diagnostics).
	if cfg := s.Plan.Config; cfg != nil && cfg.Cluster != nil {
		diags = cfg.Cluster.Locate(diags)
	}
	if cfg := s.Plan.Config; cfg != nil && s.Plan.Deps.Redact != nil && len(cfg.Secrets) > 0 {
		for i := range diags {
			diags[i].Message = s.Plan.Deps.Redact(diags[i].Message, cfg.Secrets)
			diags[i].Hint = s.Plan.Deps.Redact(diags[i].Hint, cfg.Secrets)
		}
	}
	res.Diagnostics = diags
	return res, nil
}

// runSequential is deploy: each plugin, in plugin order, sees what the
// plugins before it deployed (install order matters: stacks before charts).
// A plugin that fails or reports a fatal stops the deploy: deploying on top
// of a failed deploy would make things worse. Destroy runs the same way,
// in the reverse order the caller gives.
func (s *Session) runSequential(ctx context.Context, name stage.Name, c *carry, parts []Plugin, calls []call) {
	soFar := &stage.DeployResult{}
	for i, p := range parts {
		if ctx.Err() != nil {
			return
		}
		cc := *c
		cc.deploy = cloneDeploy(soFar)
		calls[i] = s.call(ctx, name, p, s.input(name, &cc))
		if calls[i].err != nil || calls[i].streamed.HasFatal() || (calls[i].res != nil && calls[i].res.Diagnostics.HasFatal()) {
			for j := i + 1; j < len(parts); j++ {
				calls[j] = call{skipped: true, res: &stage.Result{Diagnostics: diag.List{diag.Warningf("not run: plugin %s failed earlier in %s", p.Candidate().Name, name)}}}
			}
			return
		}
		if r := calls[i].res; name == stage.Deploy && r != nil && r.Deploy != nil {
			_ = combineDeploy(soFar, p.Candidate().Name, r.Deploy, map[string]string{})
		}
	}
}

// call runs one plugin, turning a panic in the adapter into an error so one
// broken plugin never takes down the run (and the deferred kills still run).
func (s *Session) call(ctx context.Context, name stage.Name, p Plugin, in *stage.Input) (out call) {
	pname := p.Candidate().Name
	defer func() {
		if r := recover(); r != nil {
			out = call{err: fmt.Errorf("panic: %v", r)}
		}
	}()
	// Only a plugin that says it reaches AWS gets the operator's AWS
	// settings; every other plugin sees exactly the same input without them.
	if aws := s.Plan.Options.AWS; aws != nil && p.Info().ReachesAWS {
		withAWS := *in
		withAWS.AWS = aws
		in = &withAWS
	}
	var mu sync.Mutex
	var streamed diag.List
	res, err := p.Run(ctx, in, func(ev stage.Event) {
		if ev.Kind == stage.EventDiagnostic && ev.Diagnostic != nil {
			mu.Lock()
			streamed = append(streamed, *ev.Diagnostic)
			mu.Unlock()
		}
		s.reporter.Event(pname, name, ev)
	})
	mu.Lock()
	defer mu.Unlock()
	return call{res: res, err: err, streamed: streamed}
}

// pluginFailed is the fatal for a plugin that crashed, timed out or broke
// the protocol: it names the plugin, the stage and the first line of the error.
func pluginFailed(plugin string, name stage.Name, err error) diag.Diagnostic {
	// The host's errors know best what happened (crash, timeout, panic line).
	var de interface{ Diagnostic() diag.Diagnostic }
	if errors.As(err, &de) {
		d := de.Diagnostic()
		d.Severity = diag.Fatal
		return diag.List{d}.WithDefaults(plugin, string(name))[0]
	}
	msg := err.Error()
	first, rest, _ := strings.Cut(msg, "\n")
	d := diag.Fatalf("plugin %s failed in stage %s: %s", plugin, name, first)
	d.Plugin, d.Stage = plugin, string(name)
	hint := "run with --verbose to see the plugin's log; a plugin that keeps failing can be disabled with plugins." + plugin + ".enabled: false"
	if strings.TrimSpace(rest) != "" {
		hint = strings.TrimSpace(rest) + "\n    " + hint
	}
	return d.WithHint(hint)
}
