// Command deploy is the built-in plugin that puts a rendered cluster on AWS.
// In deploy it uploads assets and sensitive values to S3 and creates or
// updates the stacks as a dependency graph; in validate it checks the stacks,
// their outputs and their auto scaling groups. The work is done by
// builtin/deploy/engine, which the kube-aws commands share; this file only
// adapts it to the plugin SDK. It is the only plugin that links the AWS SDK.
//
// AWS settings come from the environment kube-aws passes through:
//
//	KUBE_AWS_REGION        the --region flag; else cluster.yaml region; else AWS_REGION or the profile's
//	AWS_PROFILE            the --profile flag (the SDK's default credential chain reads it)
//	KUBE_AWS_ENDPOINT_URL  the --endpoint-url flag: an AWS emulator such as moto
//	KUBE_AWS_YES=1         --yes: a stack in ROLLBACK_COMPLETE may be deleted and created again
//	KUBE_AWS_FORCE_UNLOCK=1 --force-unlock: remove a dead deploy's lock first
//	KUBE_AWS_DEPLOY_TIMEOUT a Go duration bounding the whole deploy (default 60m)
package main

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

func main() { sdk.Serve(sdk.Typed[values](plugin{})) }

// valuesSchema is the JSON Schema of plugins.deploy.values in cluster.yaml.
const valuesSchema = `{
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "parallelism": {"type": "integer", "minimum": 1, "maximum": 64, "description": "stacks deployed at once (default 4)"},
    "timeout": {"type": "string", "pattern": "^[0-9]+(\\.[0-9]+)?(ns|us|ms|s|m|h)([0-9]+(\\.[0-9]+)?(ns|us|ms|s|m|h))*$", "description": "bound of a whole deploy, a Go duration (default 60m)"},
    "pollInterval": {"type": "string", "pattern": "^[0-9]+(\\.[0-9]+)?(ms|s|m)$", "description": "longest pause between two polls of a stack (default 10s)"}
  }
}`

type values struct {
	Parallelism  int    `json:"parallelism,omitempty"`
	Timeout      string `json:"timeout,omitempty"`
	PollInterval string `json:"pollInterval,omitempty"`
}

type plugin struct{}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{
		Name:         "deploy",
		Version:      version.Version,
		Description:  "uploads assets to S3 and deploys the CloudFormation stacks as a dependency graph; checks them in validate",
		ValuesSchema: json.RawMessage(valuesSchema),
	}
}

// newEngine builds the engine from the request and the environment.
func newEngine(ctx context.Context, in *sdk.Input[values]) (*engine.Engine, engine.Target, error) {
	c, v, req := in.Cluster, in.Values, in.Request
	opts := engine.Options{
		Region:          os.Getenv("KUBE_AWS_REGION"),
		Profile:         os.Getenv("AWS_PROFILE"),
		EndpointURL:     os.Getenv("KUBE_AWS_ENDPOINT_URL"),
		Parallelism:     v.Parallelism,
		ConfirmRecreate: os.Getenv("KUBE_AWS_YES") == "1",
		Reporter: engine.ReporterFunc(func(ev engine.Event) {
			req.Log("info", ev.String())
		}),
	}
	if opts.Region == "" {
		opts.Region = c.Region
	}
	for _, d := range []struct {
		name, val string
		dst       *time.Duration
	}{
		{"plugins.deploy.values.timeout", v.Timeout, &opts.Timeout},
		{"KUBE_AWS_DEPLOY_TIMEOUT", os.Getenv("KUBE_AWS_DEPLOY_TIMEOUT"), &opts.Timeout},
		{"plugins.deploy.values.pollInterval", v.PollInterval, &opts.PollInterval},
	} {
		if d.val == "" {
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
	t := engine.Target{Cluster: c, Rendered: req.Rendered, Secrets: req.Secrets}
	if r := req.Rendered; r != nil && !filepath.IsAbs(r.Dir) && req.WorkDir != "" {
		cp := *r
		cp.Dir = filepath.Join(req.WorkDir, r.Dir)
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
		return failed(err, "check cluster.yaml and the AWS settings (--profile, --region, --endpoint-url)"), nil
	}
	if os.Getenv("KUBE_AWS_FORCE_UNLOCK") == "1" && t.Cluster != nil {
		if err := e.Unlock(ctx, t.Cluster); err != nil {
			return failed(err, ""), nil
		}
	}
	res, err := e.Deploy(ctx, t)
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

func (plugin) Validate(ctx context.Context, in *sdk.Input[values]) (*stage.Result, error) {
	e, t, err := newEngine(ctx, in)
	if err != nil {
		return failed(err, "check cluster.yaml and the AWS settings (--profile, --region, --endpoint-url)"), nil
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
