// Package deploy is the built-in plugin that puts a rendered cluster on AWS.
// In deploy it uploads assets and sensitive values to S3 and creates or
// updates the stacks as a dependency graph; in validate it checks the stacks,
// their outputs, their auto scaling groups and every machine's boot status;
// the diff operation previews a deploy with change sets and the destroy
// operation deletes the stacks. The work is done by builtin/deploy/engine;
// this file only adapts it to the plugin SDK. It is the only built-in that
// links the AWS SDK, so kube-aws itself does not pay for its package init.
//
// It declares that it reaches AWS (PluginInfo.ReachesAWS), so kube-aws gives
// it the operator's AWS settings in every call (stage.Input.AWS: the
// --profile, --region, --endpoint-url, --timeout, --yes and --force-unlock
// flags), and plugins.deploy.values tune it (parallelism, pollInterval,
// timeout, bootGrace) in every stage and operation alike.
package deploy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kube-aws/kube-aws/builtin/deploy/engine"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/core/version"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

// Plugin is the deploy plugin as kube-aws serves it (cmd/kube-aws-builtins).
func Plugin() sdk.Plugin { return sdk.Typed[values](plugin{}) }

// valuesSchema is the JSON Schema of plugins.deploy.values in cluster.yaml.
const valuesSchema = `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "parallelism": {"type": "integer", "minimum": 1, "maximum": 64, "description": "stacks deployed at once (default 4)"},
    "timeout": {"type": "string", "pattern": "^[0-9]+(\\.[0-9]+)?(ns|us|ms|s|m|h)([0-9]+(\\.[0-9]+)?(ns|us|ms|s|m|h))*$", "description": "bound of a whole deploy, a Go duration (default 60m)"},
    "pollInterval": {"type": "string", "pattern": "^[0-9]+(\\.[0-9]+)?(ms|s|m)$", "description": "longest pause between two polls of a stack (default 10s)"},
    "bootGrace": {"type": "string", "pattern": "^[0-9]+(\\.[0-9]+)?(s|m|h)([0-9]+(\\.[0-9]+)?(s|m|h))*$", "description": "how long after launch a machine may take to reach its role's goal before validate reports it fatal (default 10m)"}
  }
}`

type values struct {
	Parallelism  int    `json:"parallelism,omitempty"`
	Timeout      string `json:"timeout,omitempty"`
	PollInterval string `json:"pollInterval,omitempty"`
	BootGrace    string `json:"bootGrace,omitempty"`
}

type plugin struct{}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{
		Name:         "deploy",
		Version:      version.Version,
		Description:  "uploads assets to S3 and deploys the CloudFormation stacks as a dependency graph; checks them in validate; diff and destroy",
		ValuesSchema: json.RawMessage(valuesSchema),
		ReachesAWS:   true,
	}
}

// newEngine builds the engine from the request: the operator's AWS
// settings and the plugin's values, the same for every stage and operation.
func newEngine(ctx context.Context, in *sdk.Input[values]) (*engine.Engine, engine.Target, error) {
	c, v := in.Cluster, in.Values
	aws := stage.AWSSettings{}
	if in.AWS != nil {
		aws = *in.AWS
	}
	opts := engine.Options{
		Region:          aws.Region,
		Profile:         aws.Profile,
		EndpointURL:     aws.EndpointURL,
		Timeout:         aws.Timeout,
		Parallelism:     v.Parallelism,
		ConfirmRecreate: aws.Yes,
		DrainTimeout:    c.Drain.TimeoutDuration(),
		DrainForce:      c.Drain.Force,
		// The lock names the kube-aws process that started this plugin.
		Who: engine.Who(os.Getppid()),
		Reporter: engine.ReporterFunc(func(ev engine.Event) {
			in.Log("info", ev.String())
		}),
	}
	if opts.Region == "" {
		opts.Region = c.Region
	}
	for _, d := range []struct {
		name, val string
		dst       *time.Duration
		keep      bool
	}{
		// --timeout wins over the value in cluster.yaml.
		{"plugins.deploy.values.timeout", v.Timeout, &opts.Timeout, aws.Timeout > 0},
		{"plugins.deploy.values.pollInterval", v.PollInterval, &opts.PollInterval, false},
		{"plugins.deploy.values.bootGrace", v.BootGrace, &opts.BootGrace, false},
	} {
		if d.val == "" || d.keep {
			continue
		}
		dur, err := time.ParseDuration(d.val)
		if err != nil {
			return nil, engine.Target{}, fmt.Errorf("%s %q is not a duration such as 45m: %w", d.name, d.val, err)
		}
		*d.dst = dur
	}
	e, err := engine.New(ctx, opts)
	if err != nil {
		return nil, engine.Target{}, err
	}
	t := engine.Target{Cluster: c, Rendered: in.Rendered, Secrets: in.Secrets, NodeAgentDir: nodeAgentDir(),
		MirrorDir: c.Artifacts.MirrorDir(in.WorkDir), AllowIssuerChange: in.AWS != nil && in.AWS.AllowIssuerChange}
	if in.Constructs != nil {
		t.Artifacts = in.Constructs.Artifacts
	}
	if r := in.Rendered; r != nil && !filepath.IsAbs(r.Dir) && in.WorkDir != "" {
		cp := *r
		cp.Dir = filepath.Join(in.WorkDir, r.Dir)
		t.Rendered = &cp
	}
	return e, t, nil
}

func failed(err error, hint string) *stage.Result {
	d := diag.Diagnostic{Severity: diag.Fatal, Plugin: "deploy", Message: err.Error(), Hint: hint}
	if errors.Is(err, engine.ErrNeedsConfirmation) {
		d.Code = diag.CodeNeedsConfirmation
	}
	return &stage.Result{Diagnostics: diag.List{d}}
}

func (plugin) Deploy(ctx context.Context, in *sdk.Input[values]) (*stage.Result, error) {
	e, t, err := newEngine(ctx, in)
	if err != nil {
		return failed(err, awsHint), nil
	}
	if err := forceUnlock(ctx, in, e, t); err != nil {
		return failed(err, ""), nil
	}
	res, err := e.Deploy(ctx, t)
	var skew *engine.VersionSkewError
	if errors.As(err, &skew) {
		d := diag.Fatalf("%v", err).At("kubernetesVersion").WithHint(skew.Skew.Hint)
		d.Plugin = "deploy"
		return &stage.Result{Diagnostics: diag.List{d}}, nil
	}
	var issuer *engine.IssuerChangeError
	if errors.As(err, &issuer) {
		d := diag.Fatalf("%v", err).At("s3URI").WithHint(issuer.Hint())
		d.Plugin = "deploy"
		return &stage.Result{Diagnostics: diag.List{d}}, nil
	}
	if err != nil {
		out := failed(err, hintFor(err))
		if res != nil {
			// What was deployed before the failure is kept in state.
			out.Deploy = &res.Deploy
		}
		return out, nil
	}
	in.Log("info", fmt.Sprintf("deployed %d stacks: %d created, %d updated, %d unchanged; %d objects uploaded",
		len(res.Deploy.Stacks), len(res.Created), len(res.Updated), len(res.Unchanged), res.Uploaded))
	return &stage.Result{Deploy: &res.Deploy}, nil
}

func hintFor(err error) string {
	var le *engine.LockedError
	if errors.As(err, &le) {
		return "wait for the other deploy to finish; if it died, rerun with --force-unlock"
	}
	return "fix the cause named above and rerun: the deploy resumes where it stopped"
}

// awsHint is the hint of a failure to set the engine up.
const awsHint = "check cluster.yaml and the AWS settings (--profile, --region, --endpoint-url)"

// forceUnlock removes the deploy lock first when the operator asked
// (--force-unlock, confirmed).
func forceUnlock(ctx context.Context, in *sdk.Input[values], e *engine.Engine, t engine.Target) error {
	if in.AWS == nil || !in.AWS.ForceUnlock || t.Cluster == nil {
		return nil
	}
	return e.Unlock(ctx, t.Cluster)
}

// Diff previews a deploy: a change set per existing stack, executed never.
func (plugin) Diff(ctx context.Context, in *sdk.Input[values]) (*stage.Result, error) {
	e, t, err := newEngine(ctx, in)
	if err != nil {
		return failed(err, awsHint), nil
	}
	d, err := e.Diff(ctx, t)
	if err != nil {
		return failed(err, "check the AWS settings (--profile, --region, --endpoint-url) and the message above, then run again"), nil
	}
	return &stage.Result{Diff: d}, nil
}

// Destroy deletes every stack of the cluster, holding the deploy lock.
func (plugin) Destroy(ctx context.Context, in *sdk.Input[values]) (*stage.Result, error) {
	e, t, err := newEngine(ctx, in)
	if err != nil {
		return failed(err, awsHint), nil
	}
	if err := forceUnlock(ctx, in, e, t); err != nil {
		return failed(err, ""), nil
	}
	d, err := e.Destroy(ctx, t)
	if err != nil {
		out := failed(err, hintFor(err))
		out.Destroy = d // what was deleted before the failure
		return out, nil
	}
	return &stage.Result{Destroy: d}, nil
}

func (plugin) Validate(ctx context.Context, in *sdk.Input[values]) (*stage.Result, error) {
	e, t, err := newEngine(ctx, in)
	if err != nil {
		return failed(err, awsHint), nil
	}
	ds, err := e.Validate(ctx, t)
	if err != nil {
		return failed(err, "check that AWS is reachable with these settings, then run validate again"), nil
	}
	for i := range ds {
		ds[i].Plugin = "deploy"
	}
	return &stage.Result{Diagnostics: ds}, nil
}

// nodeAgentDir is where make build puts kube-aws-node for each
// architecture, beside the built-ins' executable:
// bin/kube-aws-plugins/libexec/{kube-aws-builtins,kube-aws-node-linux-<arch>}.
func nodeAgentDir() string {
	exe, err := os.Executable()
	if err != nil {
		return "libexec"
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	return filepath.Dir(exe)
}
