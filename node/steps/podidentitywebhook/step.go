// Package podidentitywebhook is the `pod-identity-webhook` step: on every
// controller (a systemd unit), until stopped, the admission webhook that
// gives a pod whose service account names an IAM role
// (names.PodRoleARNAnnotation, or names.PodRoleNameAnnotation for one of
// the cluster's pod roles) a projected service-account token for
// names.PodRoleAudience and the environment with which the AWS SDK's
// default chain assumes the role with it (AWS_ROLE_ARN,
// AWS_WEB_IDENTITY_TOKEN_FILE, the region, the machine's endpoints).
//
// Each controller serves HTTPS on 127.0.0.1 only, with a certificate it
// issues itself, in memory, from the cluster CA, and keeps the
// MutatingWebhookConfiguration names.PodIdentityWebhookConfiguration that
// sends the API server on the same controller there.
package podidentitywebhook

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/awsenv"
	"github.com/kube-aws/kube-aws/node/kube"
	"github.com/kube-aws/kube-aws/node/retry"
	"github.com/kube-aws/kube-aws/node/step"
	"github.com/kube-aws/kube-aws/node/steps/certificates"
)

// Step is the step.
type Step struct {
	// Connect reaches the API server with a kubeconfig.
	Connect func(kubeconfig string) (kubernetes.Interface, error)
	// Account is the AWS account of this machine: the pod roles'.
	Account func(ctx context.Context, cfg aws.Config) (string, error)
	// Environ is the process's environment, whose AWS SDK endpoint
	// settings pods get (awsenv.Forwarded).
	Environ func() []string
	// Listen is the address served: 127.0.0.1 and
	// names.PodIdentityWebhookPort, where the configuration sends the API
	// server (tests listen elsewhere).
	Listen string
	// Resync is how often the configuration is made current again (after
	// someone deleted or edited it).
	Resync time.Duration
}

// New is the step as kube-aws-node runs it.
func New() *Step {
	return &Step{Connect: kube.Clientset, Account: InstanceAccount, Environ: os.Environ,
		Listen: net.JoinHostPort("127.0.0.1", strconv.Itoa(names.PodIdentityWebhookPort)), Resync: 5 * time.Minute}
}

func (*Step) Name() string { return nodeplan.StepPodIdentityWebhook }

func (s *Step) Flags(fs *flag.FlagSet) {
	fs.DurationVar(&s.Resync, "resync", s.Resync, "how often to make the MutatingWebhookConfiguration current again")
}

// InstanceAccount reads the account from the instance identity document
// of the instance metadata service, retrying a minute at most.
func InstanceAccount(ctx context.Context, cfg aws.Config) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var account string
	err := retry.Do(ctx, retry.Boot, func(ctx context.Context) error {
		doc, err := imds.NewFromConfig(cfg).GetInstanceIdentityDocument(ctx, &imds.GetInstanceIdentityDocumentInput{})
		if err != nil {
			return fmt.Errorf("reading the instance identity document: %w", err)
		}
		if doc.AccountID == "" {
			return retry.Permanent(fmt.Errorf("the instance identity document names no account"))
		}
		account = doc.AccountID
		return nil
	}, nil)
	return account, err
}

// run is what Apply runs.
type run struct {
	kube    kubernetes.Interface
	mutator *Mutator
	serving *Serving
	// caPEM is the cluster CA, the configuration's caBundle.
	caPEM []byte
}

// Check reads the plan, which the role must have, the cluster CA and the
// account, and says what the webhook will serve and whether the
// configuration is to be created or updated. It changes nothing.
func (s *Step) Check(ctx context.Context, e *agent.Env) (step.Changes, error) {
	var plan nodeplan.PodIdentityWebhookPlan
	found, err := e.Plan(nodeplan.PodIdentityWebhookPath, &plan)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, agent.BadInput(fmt.Errorf("no pod identity webhook plan (%s): it names the kubeconfig and the CA to serve with", nodeplan.PodIdentityWebhookPath))
	}
	if s.Resync <= 0 {
		return nil, agent.BadInput(fmt.Errorf("--resync %s: want a positive duration such as 5m", s.Resync))
	}
	ca, caKey, err := certificates.LoadCA(e.Path(plan.CACert), e.Path(plan.CAKey))
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(e.Path(plan.CACert))
	if err != nil {
		return nil, err
	}
	cs, err := s.Connect(e.Path(plan.Kubeconfig))
	if err != nil {
		return nil, err
	}
	account, err := s.Account(ctx, e.AWS)
	if err != nil {
		return nil, fmt.Errorf("the account of the cluster's pod roles: %w", err)
	}
	id := Identity{Cluster: e.Settings.Cluster, Region: e.Settings.Region, Account: account,
		Partition: names.Partition(e.Settings.Region), Endpoints: awsenv.Forwarded(s.Environ())}
	r := &run{
		kube:    cs,
		mutator: &Mutator{Identity: id, ServiceAccounts: (&Cache{Kube: cs, TTL: CacheTTL}).Get, Logf: e.Logf},
		serving: &Serving{CA: ca, CAKey: caKey},
		caPEM:   caPEM,
	}
	changes := step.Changes{{Action: "serve", Target: "https://" + s.Listen + "/mutate", Data: r,
		Detail: fmt.Sprintf("until stopped, with %s and a certificate for 127.0.0.1 from %s: give the pods of a service account annotated %s (a role's ARN) or %s "+
			"(a pod role of cluster %s: %s) a token for %s in %s and the AWS environment (region %s%s)",
			plan.Kubeconfig, plan.CACert, names.PodRoleARNAnnotation, names.PodRoleNameAnnotation, id.Cluster, id.RoleARN("<name>"),
			names.PodRoleAudience, names.PodRoleTokenDir, id.Region, endpoints(id.Endpoints))}}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	want := Configuration(caPEM)
	got, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(lctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		changes = append(changes, step.Change{Action: "create", Target: "MutatingWebhookConfiguration " + want.Name, Detail: "pod creations to " + URL + ", failurePolicy Ignore"})
	case err != nil:
		// The API server may not answer yet: Apply waits for it.
		e.Logf("whether MutatingWebhookConfiguration %s is current is unknown: %v", want.Name, err)
	case Current(got, want):
		e.Logf("MutatingWebhookConfiguration %s is current", want.Name)
	default:
		changes = append(changes, step.Change{Action: "update", Target: "MutatingWebhookConfiguration " + want.Name, Detail: "pod creations to " + URL + ", failurePolicy Ignore"})
	}
	return changes, nil
}

func endpoints(m map[string]string) string {
	if len(m) == 0 {
		return ""
	}
	out := ", and this machine's"
	for _, k := range sortedKeys(m) {
		out += " " + k
	}
	return out
}

// Apply serves until ctx ends (SIGTERM from systemd), which is no error.
// It listens first, then makes the configuration current, so that the API
// server's first call finds the webhook up, and again every Resync. The
// configuration stays when the webhook stops: the other controllers'
// serve it, and this one's API server ignores a webhook that is down.
func (s *Step) Apply(ctx context.Context, e *agent.Env, changes step.Changes) error {
	r := changes[0].Data.(*run)
	ln, err := net.Listen("tcp", s.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", s.Listen, err)
	}
	e.Logf("serving on https://%s/mutate", ln.Addr())
	// keep ends with ctx, or when the server stops on its own.
	keep, stop := context.WithCancel(ctx)
	defer stop()
	var served error
	var ready atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer stop()
		served = Serve(ctx, ln, r.serving.GetCertificate, Handler(r.mutator, ready.Load))
	}()
	want := Configuration(r.caPEM)
	for {
		// Retried until it succeeds or keep ends: only then does it fail.
		_ = retry.Do(keep, retry.Boot, func(ctx context.Context) error {
			did, err := Ensure(ctx, r.kube, want)
			if err == nil && did != "current" {
				e.Logf("MutatingWebhookConfiguration %s %s", want.Name, did)
			}
			if err == nil {
				ready.Store(true)
			}
			return err
		}, e.Retrying("making MutatingWebhookConfiguration "+want.Name+" current"))
		t := time.NewTimer(s.Resync)
		select {
		case <-keep.Done():
			t.Stop()
			<-done
			return served
		case <-t.C:
		}
	}
}
