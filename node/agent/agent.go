// Package agent is what every kube-aws-node step shares: its settings (the
// bootstrap's environment, or nodeplan.SettingsEnvPath once boot kept
// them), AWS configuration, the cluster's bucket, the machine's facts, the
// reporter, the root folder its files are under, and the exit codes.
package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/awsenv"
	"github.com/kube-aws/kube-aws/node/blob"
	"github.com/kube-aws/kube-aws/node/envfile"
	"github.com/kube-aws/kube-aws/node/facts"
	"github.com/kube-aws/kube-aws/node/report"
	"github.com/kube-aws/kube-aws/node/retry"
)

// Exit codes of kube-aws-node.
const (
	ExitOK = 0
	// ExitFailed: the step could not do its work (AWS, network, the API
	// server, a command); the console says why. Running it again may help.
	ExitFailed = 1
	// ExitUsage: unknown subcommand or flag.
	ExitUsage = 2
	// ExitBadInput: a plan file, the userdata or the settings are wrong;
	// running it again will not help until they are fixed (render again).
	ExitBadInput = 3
)

// badInput marks an error caused by what the machine was given.
type badInput struct{ err error }

func (b badInput) Error() string { return b.err.Error() }
func (b badInput) Unwrap() error { return b.err }

// BadInput marks err as caused by a plan, the userdata or the settings.
// It is also permanent: retrying cannot fix it.
func BadInput(err error) error {
	if err == nil {
		return nil
	}
	return retry.Permanent(badInput{err})
}

// ExitCode is the exit code for a step's error.
func ExitCode(err error) int {
	var b badInput
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &b):
		return ExitBadInput
	}
	return ExitFailed
}

// Options are the flags every step takes.
type Options struct {
	// Root is prepended to every path kube-aws-node reads or writes
	// ("/" on a machine).
	Root string
	// Console is where lines go besides stderr ("" for none).
	Console string
	// Stderr is stderr.
	Stderr io.Writer
	// FreshFacts reads the instance facts from IMDS even when kept ones
	// exist (boot does: the machine may be new).
	FreshFacts bool
	// DryRun changes nothing on the machine: facts are not kept and the
	// status is not written (a step's --dry-run).
	DryRun bool
}

// Env is one step's world.
type Env struct {
	Step string
	Root string
	// Stderr is the process's stderr alone; the reporter writes to it
	// and to the console.
	Stderr   io.Writer
	Settings nodeplan.Settings
	AWS      aws.Config
	Store    *blob.Store
	Facts    nodeplan.Facts
	Report   *report.Reporter
	// dryRun keeps facts in memory only.
	dryRun bool
}

// New sets up a step's Env.
func New(ctx context.Context, step string, o Options) (*Env, error) {
	root := o.Root
	if root == "" {
		root = "/"
	}
	if o.Stderr == nil {
		o.Stderr = os.Stderr
	}
	e := &Env{Step: step, Root: root, Stderr: o.Stderr, dryRun: o.DryRun}
	out := report.Writers(o.Stderr, report.Console(o.Console))
	// Until the facts are known, lines name the role only.
	e.Report = &report.Reporter{Out: out}

	e.Settings.Fill(os.LookupEnv)
	if b, err := os.ReadFile(e.Path(nodeplan.SettingsEnvPath)); err == nil {
		f, err := envfile.Parse(b)
		if err != nil {
			return nil, BadInput(fmt.Errorf("%s: %v", e.Path(nodeplan.SettingsEnvPath), err))
		}
		// The environment wins; the file fills what it lacks.
		var kept nodeplan.Settings
		kept.Fill(f.Lookup)
		kept.Fill(os.LookupEnv)
		e.Settings = kept
	}
	e.Report.Role = e.Settings.Role
	if err := e.Settings.Validate(); err != nil {
		return nil, BadInput(err)
	}
	cfg, err := awsenv.Load(ctx, e.Settings.Region)
	if err != nil {
		return nil, err
	}
	e.AWS = cfg
	e.Store = &blob.Store{
		S3: awsenv.S3(cfg), Bucket: e.Settings.Bucket, CacheDir: e.Path(filepath.Join(nodeplan.StateDir, "cache")),
		HTTP: &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			DialContext:         (&net.Dialer{Timeout: 10 * time.Second}).DialContext,
			TLSHandshakeTimeout: 10 * time.Second,
		}},
	}
	if err := e.loadFacts(ctx, o.FreshFacts); err != nil {
		return nil, err
	}
	start, err := report.MachineStart("/proc", time.Now())
	if err != nil {
		start = time.Time{} // lines then carry 0.0s; nothing else depends on it
	}
	e.Report = &report.Reporter{
		Role: e.Settings.Role, InstanceID: e.Facts[nodeplan.FactInstanceID], Address: e.Facts[nodeplan.FactPrivateIPv4],
		UserData: e.Settings.UserDataKey, Start: start, Out: out,
	}
	if !o.DryRun {
		e.Report.Status = e.Store
		e.Report.StatusKey = e.Settings.Key(nodeplan.StatusKey(e.Settings.Role, e.Facts[nodeplan.FactInstanceID]))
		e.Report.Local = e.Path(filepath.Join(nodeplan.StateDir, "status.json"))
	}
	return e, nil
}

// loadFacts reads the kept facts, or the instance's from IMDS (retrying
// while it is not there yet at boot) and keeps them.
func (e *Env) loadFacts(ctx context.Context, fresh bool) error {
	kept, found, err := facts.Load(e.Root)
	if err != nil {
		return err
	}
	// Facts the bootstrap passed (KUBE_AWS_FACT_<NAME>: stack parameters
	// such as the API load balancer's name) are kept with the others, so a
	// step systemd runs later, without that environment, has them too.
	passed := nodeplan.FromEnviron(os.Environ())
	if found && !fresh {
		e.Facts = kept
		if len(passed) == 0 {
			return nil
		}
		return e.AddFacts(passed)
	}
	client := imds.NewFromConfig(e.AWS)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	var f nodeplan.Facts
	err = retry.Do(ctx, retry.Boot, func(ctx context.Context) error {
		var err error
		f, err = facts.FromIMDS(ctx, client)
		return err
	}, e.Retrying("reading the instance metadata service"))
	if err != nil {
		return err
	}
	// Facts a step derived (a volume's tags) outlive a fresh read.
	for k, v := range kept {
		if _, instance := f[k]; !instance {
			f[k] = v
		}
	}
	for k, v := range passed {
		if _, instance := f[k]; !instance {
			f[k] = v
		}
	}
	e.Facts = f
	return e.saveFacts()
}

// AddFacts keeps facts a step derived, for the steps and units after it.
func (e *Env) AddFacts(more nodeplan.Facts) error {
	for k, v := range more {
		e.Facts[k] = v
	}
	return e.saveFacts()
}

func (e *Env) saveFacts() error {
	if e.dryRun {
		return nil
	}
	return facts.Save(e.Root, e.Facts)
}

// Path is p under the root.
func (e *Env) Path(p string) string { return filepath.Join(e.Root, p) }

// Plan loads the plan at path (under the root). found is false when the
// role has no such plan. An invalid plan is a BadInput error.
func (e *Env) Plan(path string, p nodeplan.Plan) (found bool, err error) {
	found, err = nodeplan.Load(e.Path(path), p)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return found, err
		}
		return found, BadInput(err)
	}
	return found, nil
}

// OptionalPlan loads a plan the role may not have: without one it says
// there is nothing to do and reports false.
func (e *Env) OptionalPlan(path string, p nodeplan.Plan) (found bool, err error) {
	found, err = e.Plan(path, p)
	if err == nil && !found {
		e.Logf("no %s on this machine: nothing to do", path)
	}
	return found, err
}

// Retrying is retry.Do's onRetry for what: a line saying why it tries
// again, and when.
func (e *Env) Retrying(what string) func(int, error, time.Duration) {
	return func(_ int, err error, d time.Duration) {
		e.Logf("%s: %v; trying again in %s", what, err, d.Round(time.Millisecond))
	}
}

// Logf writes a line for this step.
func (e *Env) Logf(format string, args ...any) { e.Report.Logf(e.Step, format, args...) }

// Expand expands the facts a plan field names; an unknown fact is BadInput.
func (e *Env) Expand(field, s string) (string, error) {
	v, err := e.Facts.Expand(s)
	if err != nil {
		return "", BadInput(fmt.Errorf("%s: %v", field, err))
	}
	return v, nil
}

// Main runs one step with a context that ends on SIGINT or SIGTERM, and
// returns the exit code, saying on the console how it ended.
func Main(step string, o Options, run func(context.Context, *Env) error) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	started := time.Now()
	e, err := New(ctx, step, o)
	if err != nil {
		out := report.Writers(o.Stderr, report.Console(o.Console))
		fmt.Fprintf(out, "kube-aws-node %s: FAILED: %v\n", step, err)
		return ExitCode(err)
	}
	if err := run(ctx, e); err != nil {
		e.Logf("FAILED after %s: %v", time.Since(started).Round(time.Millisecond), err)
		return ExitCode(err)
	}
	e.Logf("done in %s", time.Since(started).Round(time.Millisecond))
	return ExitOK
}
