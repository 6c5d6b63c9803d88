// Package engine deploys a rendered kube-aws cluster to AWS: it uploads
// assets and sensitive values to S3 under content-addressed keys, then
// creates or updates one CloudFormation stack per rendered stack as a
// dependency graph (independent stacks in parallel, bounded), passing outputs
// on as parameters. It also previews (Diff), checks (Validate) and removes
// (Destroy) a cluster, and keeps two deploys of one cluster apart with a lock
// object in S3.
//
// It is a library so that the deploy plugin and the kube-aws commands (up,
// diff, validate, destroy) share one implementation. Only binaries that
// import it link the AWS SDK.
package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
)

// Defaults for Options fields left zero.
const (
	DefaultTimeout      = 60 * time.Minute
	DefaultParallelism  = 4
	DefaultPollInterval = 10 * time.Second
	DefaultMaxAttempts  = 10
	DefaultMaxBackoff   = 20 * time.Second
	DefaultBootGrace    = 10 * time.Minute
	DefaultDrainTimeout = 5 * time.Minute
	DefaultRollPoll     = 2 * time.Second
)

// MaxInlineTemplate is the largest template CloudFormation accepts inline
// (TemplateBody); larger ones are passed by TemplateURL.
const MaxInlineTemplate = 51200

// Options configure an Engine.
type Options struct {
	// Region every call goes to: the --region flag, else cluster.yaml's
	// region; empty means the AWS configuration's (AWS_REGION, profile).
	Region string
	// Profile is a shared-config profile; empty means the default chain.
	Profile string
	// EndpointURL sends every AWS call to an emulator such as moto
	// (S3 then uses path-style addressing).
	EndpointURL string
	// Credentials, when set, replace the default credential chain (tests).
	Credentials aws.CredentialsProvider
	// HTTPClient, when set, is used for every AWS call.
	HTTPClient *http.Client

	// Timeout bounds a whole Deploy, Diff, Validate or Destroy.
	Timeout time.Duration
	// Parallelism bounds how many stacks are worked on at once.
	Parallelism int
	// PollInterval is the longest pause between two polls of a stack; polls
	// start fast and back off to it, so quick stacks finish quickly.
	PollInterval time.Duration
	// MaxAttempts and MaxBackoff tune the SDK's retries of throttled or
	// failed calls.
	MaxAttempts int
	MaxBackoff  time.Duration

	// ConfirmRecreate allows deleting and recreating a stack that is in
	// ROLLBACK_COMPLETE (a failed create): the user said --yes.
	ConfirmRecreate bool
	// Who identifies this deploy in the lock; empty means user@host pid N.
	Who string
	// CreateBucket creates the bucket of cluster.yaml's s3URI when it does
	// not exist (for an emulator, or a --create-bucket flag); otherwise a
	// missing bucket is an error that says how to create it.
	CreateBucket bool

	// BootGrace is how long after its instance launched a machine may take
	// to reach its role's goal (status phase ready) before Validate reports
	// it as fatal; a younger machine not there yet is a warning.
	BootGrace time.Duration
	// DrainTimeout bounds each node's drain in a roll; DrainForce deletes
	// the pods a PodDisruptionBudget still protects when it expires,
	// instead of stopping the roll.
	DrainTimeout time.Duration
	DrainForce   bool
	// RollPoll is how often a roll reads what it waits for (a machine's
	// status, a drain's, a group's instances).
	RollPoll time.Duration
	// Now is the clock Validate measures machines' ages with; nil means
	// time.Now (tests move it forward rather than wait).
	Now func() time.Time

	// Reporter receives progress; nil discards it.
	Reporter Reporter
}

// Engine deploys, previews, checks and destroys clusters. Its methods may be
// called from several goroutines; the deploy lock, not the Engine, keeps two
// deploys of one cluster apart.
type Engine struct {
	opts Options
	cfg  aws.Config
	cfn  *cloudformation.Client
	s3   *s3.Client
	kms  *kms.Client
	asg  *autoscaling.Client
	ec2  *ec2.Client
	// elb and elbv2 read the load balancers' health of a roll's machines.
	elb   *elb.Client
	elbv2 *elbv2.Client
}

// Target is what to deploy: the cluster configuration, the render output
// and, for Deploy only, the plain text of sensitive values (by marker).
type Target struct {
	Cluster  *config.Cluster
	Rendered *stage.Rendered
	Secrets  map[string]string
	// Artifacts are the merged Artifact constructs: in air-gapped mode
	// each holds the sha256 of its files in the mirror folder, MirrorDir,
	// and Deploy uploads them to <prefix>/assets/<sha256>.
	Artifacts []construct.Artifact
	MirrorDir string
	// NodeAgentDir holds kube-aws-node-linux-<arch> (make build's
	// bin/kube-aws-plugins/libexec), uploaded to <prefix>/assets/<sha256>
	// for machine stacks' bootstrap.
	NodeAgentDir string
	// AllowIssuerChange lets Deploy change the service-account issuer of a
	// running cluster (see IssuerChangeError).
	AllowIssuerChange bool
}

// New loads the AWS configuration and makes the clients.
func New(ctx context.Context, opts Options) (*Engine, error) {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.Parallelism <= 0 {
		opts.Parallelism = DefaultParallelism
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = DefaultMaxBackoff
	}
	if opts.BootGrace <= 0 {
		opts.BootGrace = DefaultBootGrace
	}
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = DefaultDrainTimeout
	}
	if opts.RollPoll <= 0 {
		opts.RollPoll = DefaultRollPoll
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Reporter == nil {
		opts.Reporter = ReporterFunc(func(Event) {})
	}
	if opts.Who == "" {
		opts.Who = defaultWho()
	}
	var lo []func(*awsconfig.LoadOptions) error
	if opts.Region != "" {
		lo = append(lo, awsconfig.WithRegion(opts.Region))
	}
	if opts.Profile != "" {
		lo = append(lo, awsconfig.WithSharedConfigProfile(opts.Profile))
	}
	if opts.Credentials != nil {
		lo = append(lo, awsconfig.WithCredentialsProvider(opts.Credentials))
	}
	if opts.HTTPClient != nil {
		lo = append(lo, awsconfig.WithHTTPClient(opts.HTTPClient))
	}
	// The SDK's own log lines (a connection closed by the server, an
	// unchecked checksum) would land on the plugin's stderr with no
	// context; errors reach the user through the engine's return values.
	lo = append(lo, awsconfig.WithLogger(logging.Nop{}))
	lo = append(lo, awsconfig.WithRetryer(func() aws.Retryer {
		return retry.NewStandard(func(o *retry.StandardOptions) {
			o.MaxAttempts = opts.MaxAttempts
			o.MaxBackoff = opts.MaxBackoff
			// Many stacks polled in parallel get throttled together; the
			// client-side retry quota would turn that into hard failures.
			o.RateLimiter = ratelimit.None
		})
	}))
	cfg, err := awsconfig.LoadDefaultConfig(ctx, lo...)
	if err != nil {
		return nil, fmt.Errorf("loading AWS configuration (profile %q): %w; check ~/.aws/config or the AWS_* environment variables", opts.Profile, err)
	}
	if cfg.Region == "" {
		return nil, errors.New("no AWS region: set region in cluster.yaml, pass --region, or set AWS_REGION")
	}
	e := &Engine{opts: opts, cfg: cfg}
	ep := func() *string {
		if opts.EndpointURL == "" {
			return nil
		}
		return aws.String(opts.EndpointURL)
	}
	e.cfn = cloudformation.NewFromConfig(cfg, func(o *cloudformation.Options) { o.BaseEndpoint = ep() })
	e.s3 = s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = ep()
		o.UsePathStyle = opts.EndpointURL != ""
		// Small objects without checksums are normal here; the SDK would
		// log a line for each.
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	e.kms = kms.NewFromConfig(cfg, func(o *kms.Options) { o.BaseEndpoint = ep() })
	e.asg = autoscaling.NewFromConfig(cfg, func(o *autoscaling.Options) { o.BaseEndpoint = ep() })
	e.ec2 = ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = ep() })
	e.elb = elb.NewFromConfig(cfg, func(o *elb.Options) { o.BaseEndpoint = ep() })
	e.elbv2 = elbv2.NewFromConfig(cfg, func(o *elbv2.Options) { o.BaseEndpoint = ep() })
	return e, nil
}

func defaultWho() string { return Who(os.Getpid()) }

// Who names a process in the deploy lock: user@host and the process id an
// operator looks for (kube-aws's, not a plugin's).
func Who(pid int) string {
	user := os.Getenv("USER")
	if user == "" {
		user = "unknown"
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s@%s kube-aws pid %d", user, host, pid)
}

// Region is the region every call goes to.
func (e *Engine) Region() string { return e.cfg.Region }

// location is the S3 bucket and key prefix of cluster.yaml's s3URI.
type location struct {
	Bucket, Prefix string
}

func (l location) key(parts ...string) string {
	k := strings.Join(parts, "/")
	if l.Prefix == "" {
		return k
	}
	return l.Prefix + "/" + k
}

func parseS3URI(uri string) (location, error) {
	rest, ok := strings.CutPrefix(uri, "s3://")
	if !ok || rest == "" {
		return location{}, fmt.Errorf("cluster.yaml s3URI %q: want s3://bucket[/prefix]", uri)
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return location{}, fmt.Errorf("cluster.yaml s3URI %q: the bucket name is empty; want s3://bucket[/prefix]", uri)
	}
	return location{Bucket: bucket, Prefix: strings.Trim(prefix, "/")}, nil
}

// prepared is a Target checked and read: the graph of stacks with their
// templates, and where things go in S3.
type prepared struct {
	t       Target
	cluster string
	loc     location
	region  string
	graph   *graph
	tmpl    map[string]*template // by stack name
	// nodeAgent is kube-aws-node by architecture (resolveNodeAgent).
	nodeAgent map[string]nodeAgentFile
}

func (e *Engine) prepare(t Target) (*prepared, error) {
	if t.Cluster == nil {
		return nil, errors.New("no cluster configuration given")
	}
	if t.Cluster.ClusterName == "" {
		return nil, errors.New("cluster.yaml clusterName is empty")
	}
	if t.Rendered == nil {
		return nil, errors.New("no render output given: run `kube-aws render` (or `kube-aws stage render`) first")
	}
	loc, err := parseS3URI(t.Cluster.S3URI)
	if err != nil {
		return nil, err
	}
	g, err := newGraph(t.Rendered.Stacks)
	if err != nil {
		return nil, err
	}
	p := &prepared{t: t, cluster: t.Cluster.ClusterName, loc: loc, region: e.cfg.Region, graph: g, tmpl: map[string]*template{}}
	for _, s := range t.Rendered.Stacks {
		body, err := os.ReadFile(filepath.Join(t.Rendered.Dir, filepath.FromSlash(s.Template)))
		if err != nil {
			return nil, fmt.Errorf("stack %s: reading its template: %w; run `kube-aws render` again", s.Name, err)
		}
		tp, err := parseTemplate(body)
		if err != nil {
			return nil, fmt.Errorf("stack %s: template %s: %w", s.Name, s.Template, err)
		}
		for param, path := range tp.ParameterFiles {
			if _, ok := tp.Parameters[param]; !ok {
				return nil, fmt.Errorf("stack %s: template %s names file %s for parameter %s, which it does not declare; this is a render bug", s.Name, s.Template, path, param)
			}
		}
		for param := range s.ParameterSources {
			if _, ok := tp.Parameters[param]; !ok {
				return nil, fmt.Errorf("stack %s: parameter %s has a source (%s) but template %s does not declare it; this is a render bug", s.Name, param, s.ParameterSources[param], s.Template)
			}
		}
		p.tmpl[s.Name] = tp
	}
	return p, nil
}

// stackName is the CloudFormation name of a rendered stack.
func (p *prepared) stackName(stack string) string {
	return names.StackName(p.cluster, stack)
}

// run bounds an operation by the total timeout.
func (e *Engine) run(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, e.opts.Timeout)
}

// apiCode returns the AWS error code of err, or "".
func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

func apiMessage(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorMessage()
	}
	return ""
}
