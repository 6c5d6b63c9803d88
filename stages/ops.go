package stages

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/internal/fileutil"
)

// AWSSettings are the AWS flags of kube-aws up, diff, validate and destroy.
type AWSSettings struct {
	Profile     string        `json:"profile,omitempty"`
	Region      string        `json:"region,omitempty"`
	EndpointURL string        `json:"endpointURL,omitempty"`
	Timeout     time.Duration `json:"timeout,omitempty"`
	// Yes confirms what would otherwise need a prompt: recreating a stack
	// in ROLLBACK_COMPLETE, removing a stale lock, destroying.
	Yes bool `json:"yes,omitempty"`
	// ForceUnlock removes the deploy lock before deploying.
	ForceUnlock bool `json:"forceUnlock,omitempty"`
}

// PluginEnv is the settings as the deploy plugin reads them from its
// environment (builtin/deploy/main.go): its protocol carries no AWS
// settings. Empty settings are left out so the user's own AWS_PROFILE and
// the like still apply.
func (a AWSSettings) PluginEnv() []string {
	var env []string
	add := func(k, v string) {
		if v != "" {
			env = append(env, k+"="+v)
		}
	}
	add("AWS_PROFILE", a.Profile)
	add("KUBE_AWS_REGION", a.Region)
	add("KUBE_AWS_ENDPOINT_URL", a.EndpointURL)
	if a.Timeout > 0 {
		add("KUBE_AWS_DEPLOY_TIMEOUT", a.Timeout.String())
	}
	if a.Yes {
		add("KUBE_AWS_YES", "1")
	}
	if a.ForceUnlock {
		add("KUBE_AWS_FORCE_UNLOCK", "1")
	}
	return env
}

// Operations that kube-aws runs through the kube-aws-ops helper rather than
// through a stage: the plugin protocol has four stages only.
const (
	OpDiff    = "diff"
	OpDestroy = "destroy"
)

// OpRequest is what kube-aws sends the kube-aws-ops helper on its stdin.
type OpRequest struct {
	Op string `json:"op"`
	// Cluster is cluster.yaml as plugins see it (secrets redacted: neither
	// diff nor destroy needs them).
	Cluster  json.RawMessage `json:"cluster"`
	Rendered *stage.Rendered `json:"rendered"`
	AWS      AWSSettings     `json:"aws"`
}

// OpMessage is one line the helper writes on its stdout: a progress line,
// then exactly one result or error.
type OpMessage struct {
	Log    string          `json:"log,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// DiffResult is what `kube-aws diff` found: per stack, what a deploy would
// do to each resource. It mirrors the deploy engine's JSON.
type DiffResult struct {
	Stacks  []StackDiff `json:"stacks"`
	Orphans []string    `json:"orphans,omitempty"`
	Changed bool        `json:"changed"`
}

// StackDiff is what would happen to one stack: create, recreate, update or none.
type StackDiff struct {
	Stack     string           `json:"stack"`
	StackName string           `json:"stackName"`
	Status    string           `json:"status,omitempty"`
	Action    string           `json:"action"`
	Changes   []ResourceChange `json:"changes,omitempty"`
}

// ResourceChange is one resource a change set would touch.
type ResourceChange struct {
	Action       string `json:"action"`
	LogicalID    string `json:"logicalId"`
	PhysicalID   string `json:"physicalId,omitempty"`
	ResourceType string `json:"resourceType"`
	Replacement  string `json:"replacement,omitempty"`
}

// String renders the preview: one line per stack, one indented line per
// resource (+ add, ~ modify, - remove) with its type and whether it is replaced.
func (d *DiffResult) String() string {
	var b strings.Builder
	for _, s := range d.Stacks {
		what := map[string]string{"none": "no change", "create": "would create", "recreate": "would delete and create again (failed create)", "update": "would update"}[s.Action]
		if what == "" {
			what = s.Action
		}
		fmt.Fprintf(&b, "%s (%s): %s\n", s.Stack, s.StackName, what)
		if s.Action == "update" && len(s.Changes) == 0 {
			b.WriteString("    ~ parameters only\n")
		}
		for _, c := range s.Changes {
			sign := map[string]string{"Add": "+", "Modify": "~", "Remove": "-"}[c.Action]
			if sign == "" {
				sign = "*"
			}
			fmt.Fprintf(&b, "    %s %-7s %-40s %s", sign, c.Action, c.LogicalID, c.ResourceType)
			if c.Replacement != "" && c.Replacement != "False" {
				fmt.Fprintf(&b, "  replacement: %s", c.Replacement)
			}
			b.WriteString("\n")
		}
	}
	for _, o := range d.Orphans {
		fmt.Fprintf(&b, "%s: no longer rendered; kube-aws up leaves it, kube-aws destroy deletes it\n", o)
	}
	if !d.Changed {
		b.WriteString("no change\n")
	}
	return b.String()
}

// DestroyResult is what `kube-aws destroy` removed.
type DestroyResult struct {
	Deleted []string `json:"deleted,omitempty"`
	Absent  []string `json:"absent,omitempty"`
	Orphans []string `json:"orphans,omitempty"`
}

// OpsPath finds the kube-aws-ops helper: $KUBE_AWS_OPS, else
// kube-aws-plugins/libexec/kube-aws-ops beside the kube-aws executable
// (where `make build` puts it).
func OpsPath() (string, error) {
	if p := os.Getenv("KUBE_AWS_OPS"); p != "" {
		return p, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the kube-aws-ops helper: %w; set KUBE_AWS_OPS to its path", err)
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	p := filepath.Join(filepath.Dir(exe), "kube-aws-plugins", "libexec", "kube-aws-ops")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("the kube-aws-ops helper is not at %s: run `make build`, or set KUBE_AWS_OPS to its path", p)
	}
	return p, nil
}

// RenderAndRunOp runs initialise and render (so the operation sees exactly
// what `kube-aws up` would deploy), then op through the kube-aws-ops
// helper, decoding its result into result. Progress goes to the session's
// reporter as lines of a pseudo-plugin named after the operation.
func (s *Session) RenderAndRunOp(ctx context.Context, op string, aws AWSSettings, result any) (*Outcome, error) {
	out, err := s.Run(ctx, stage.Initialise, stage.Render)
	if err != nil {
		return out, err
	}
	if out.Rendered == nil || s.Plan.Config == nil {
		return out, &Error{Code: ExitFatal, Msg: "render produced no output to " + op}
	}
	req := OpRequest{Op: op, Cluster: s.Plan.Config.JSON, Rendered: out.Rendered, AWS: aws}
	if err := runOp(ctx, req, func(line string) {
		s.reporter.Event(op, stage.Deploy, stage.Event{Kind: stage.EventLog, Level: "info", Message: line})
	}, result); err != nil {
		if ierr := interrupted(ctx); ierr != nil {
			return out, ierr
		}
		d := diag.Diagnostic{Severity: diag.Fatal, Message: fmt.Sprintf("%s failed: %v", op, err),
			Hint: "check the AWS settings (--profile, --region, --endpoint-url) and the message above, then run again"}
		out.Diagnostics = append(out.Diagnostics, d)
		return out, &Error{Code: ExitFatal, Msg: op + " failed", Diagnostics: diag.List{d}}
	}
	return out, nil
}

// runOp starts the helper, sends req, relays its progress lines and decodes
// its result. The helper links the AWS SDK so that kube-aws does not pay
// for it at every start (docs/design.md).
func runOp(ctx context.Context, req OpRequest, progress func(string), result any) error {
	path, err := OpsPath()
	if err != nil {
		return err
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, path)
	// Interrupted: ask the helper to stop (it releases the deploy lock on
	// its way out) before it is killed.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	cmd.Stdin = bytes.NewReader(body)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", path, err)
	}
	var got *OpMessage
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	for sc.Scan() {
		var m OpMessage
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			continue // not ours (a stray print); the result line decides
		}
		if m.Log != "" {
			progress(m.Log)
			continue
		}
		mm := m
		got = &mm
	}
	werr := cmd.Wait()
	switch {
	case got != nil && got.Error != "":
		return errors.New(got.Error)
	case got != nil && got.Result != nil:
		return json.Unmarshal(got.Result, result)
	case werr != nil:
		return fmt.Errorf("%s: %v: %s", path, werr, strings.TrimSpace(stderr.String()))
	default:
		return fmt.Errorf("%s returned no result: %s", path, strings.TrimSpace(stderr.String()))
	}
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
// diag.CodeNeedsConfirmation. `kube-aws up` asks on a terminal and runs
// again with --yes.
func NeedsYes(out *Outcome) bool {
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
