// Package kube reaches the cluster's API server from a machine: a client
// from a kubeconfig file, and waiting until the server is ready.
package kube

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-aws/kube-aws/node/retry"
)

// Config reads a kubeconfig file. The paths it names (certificates, keys)
// are the machine's.
func Config(kubeconfig string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.UserAgent = "kube-aws-node"
	return cfg, nil
}

// WaitReady waits until the API server answers /readyz with ok, saying
// every half minute that it still waits and why. It asks at least every
// second (readyPolicy): a machine waits here at boot for the API server,
// which starts within seconds, and every second between its answer and the
// next ask is a second the boot waits for nothing.
func WaitReady(ctx context.Context, c kubernetes.Interface, logf func(string, ...any)) error {
	started, said := time.Now(), time.Now()
	return retry.Do(ctx, readyPolicy, func(ctx context.Context) error {
		body, err := c.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("the API server is not ready: %w", err)
		}
		if string(body) != "ok" {
			return fmt.Errorf("the API server is not ready: %s", body)
		}
		return nil
	}, func(_ int, err error, _ time.Duration) {
		if time.Since(said) >= 30*time.Second {
			said = time.Now()
			logf("still waiting for the API server after %s: %v", time.Since(started).Round(time.Second), err)
		}
	})
}

// readyPolicy paces WaitReady's asks: one small request each, at most a
// second apart (5 s apart, the boot waited 2.5 s on average after the API
// server was ready).
var readyPolicy = retry.Policy{Initial: 500 * time.Millisecond, Max: time.Second, Factor: 1.5}

// Clientset is a clientset for the API server a kubeconfig names.
func Clientset(kubeconfig string) (kubernetes.Interface, error) {
	cfg, err := Config(kubeconfig)
	if err != nil {
		return nil, err
	}
	return kubernetes.NewForConfig(cfg)
}
