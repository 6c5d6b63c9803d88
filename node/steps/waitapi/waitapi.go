// Package waitapi is the `wait-api` step: it waits until the API server
// answers /readyz to a kubeconfig's credential. A worker's kubelet runs it
// before it starts (ExecStartPre): a kubelet started before the control plane
// answers, or before the bootstrap token it joins with exists, retries its
// certificate request and its watches with growing back-offs, and joined
// tens of seconds after the API could have taken it.
package waitapi

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/kube"
	"github.com/kube-aws/kube-aws/node/step"
)

// Step is the step.
type Step struct {
	// Kubeconfig is the credential to ask with (a path on the machine).
	Kubeconfig string
	// UnlessExists skips the wait when this file exists: the kubelet's own
	// kubeconfig, once TLS bootstrapping wrote it, so a kubelet restarted
	// later never waits on a bootstrap token that may be gone.
	UnlessExists string
	// Timeout bounds the wait.
	Timeout time.Duration
	// Connect makes a client of a kubeconfig (kube.Clientset).
	Connect func(kubeconfig string) (kubernetes.Interface, error)
}

// New is the step as kube-aws-node runs it.
func New() *Step { return &Step{Connect: kube.Clientset} }

func (*Step) Name() string { return nodeplan.StepWaitAPI }

func (s *Step) Flags(fs *flag.FlagSet) {
	fs.StringVar(&s.Kubeconfig, "kubeconfig", "", "the kubeconfig to ask with (required)")
	fs.StringVar(&s.UnlessExists, "unless-exists", "", "do not wait when this file exists (the kubelet's own kubeconfig)")
	fs.DurationVar(&s.Timeout, "timeout", 15*time.Minute, "how long to wait")
}

// Check reads the kubeconfig and says what the step waits for; nothing
// when UnlessExists is there.
func (s *Step) Check(_ context.Context, e *agent.Env) (step.Changes, error) {
	if s.Kubeconfig == "" {
		return nil, agent.BadInput(errors.New("--kubeconfig is required"))
	}
	if s.UnlessExists != "" {
		if _, err := os.Stat(e.Path(s.UnlessExists)); err == nil {
			e.Logf("%s exists: nothing to wait for", s.UnlessExists)
			return nil, nil
		}
	}
	cs, err := s.Connect(e.Path(s.Kubeconfig))
	if err != nil {
		return nil, agent.BadInput(fmt.Errorf("%s: %w", s.Kubeconfig, err))
	}
	return step.Changes{{Action: "wait", Target: "the API server", Detail: fmt.Sprintf("until it answers /readyz to %s's credential, up to %s", s.Kubeconfig, s.Timeout), Data: cs}}, nil
}

// Apply waits.
func (s *Step) Apply(ctx context.Context, e *agent.Env, changes step.Changes) error {
	cs := changes[0].Data.(kubernetes.Interface)
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	started := time.Now()
	if err := kube.WaitReady(ctx, cs, e.Logf); err != nil {
		return fmt.Errorf("with %s: %w", s.Kubeconfig, err)
	}
	e.Logf("the API server answers %s (waited %s)", s.Kubeconfig, time.Since(started).Round(time.Millisecond))
	return nil
}
