// Package apiwait is the `wait-api` step: it waits until the API server
// answers /readyz to a kubeconfig's credential. A worker's kubelet runs it
// before it starts (ExecStartPre): a kubelet started before the control plane
// answers, or before the bootstrap token it joins with exists, retries its
// certificate request and its watches with growing back-offs, and joined
// tens of seconds after the API could have taken it.
package apiwait

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/kube"
)

// Options tune the step.
type Options struct {
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

// Run is the step.
func Run(ctx context.Context, e *agent.Env, o Options) error {
	if o.Kubeconfig == "" {
		return agent.BadInput(errors.New("--kubeconfig is required"))
	}
	if o.UnlessExists != "" {
		if _, err := os.Stat(e.Path(o.UnlessExists)); err == nil {
			e.Logf("%s exists: nothing to wait for", o.UnlessExists)
			return nil
		}
	}
	cs, err := o.Connect(e.Path(o.Kubeconfig))
	if err != nil {
		return agent.BadInput(fmt.Errorf("%s: %w", o.Kubeconfig, err))
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	started := time.Now()
	if err := kube.WaitReady(ctx, cs, e.Logf); err != nil {
		return fmt.Errorf("with %s: %w", o.Kubeconfig, err)
	}
	e.Logf("the API server answers %s (waited %s)", o.Kubeconfig, time.Since(started).Round(time.Millisecond))
	return nil
}
