package addons

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
)

// webhookHealth is where this controller's pod identity webhook says it is
// in service.
var webhookHealth = "https://" + "127.0.0.1:" + strconv.Itoa(names.PodIdentityWebhookPort) + "/healthz"

// waitWebhook waits, on a controller that runs the pod identity webhook
// (its plan is there), until the webhook says it is in service: its
// failure policy is Ignore, so a release's pod created before then would
// start without its IAM role and keep starting without it.
func (s *Step) waitWebhook(ctx context.Context, e *agent.Env) error {
	if _, err := os.Stat(e.Path(nodeplan.PodIdentityWebhookPath)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	ca, err := os.ReadFile(e.Path(names.PKICACert))
	if err != nil {
		return fmt.Errorf("the cluster CA the pod identity webhook's certificate chains to: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return fmt.Errorf("%s holds no certificate", e.Path(names.PKICACert))
	}
	url := webhookHealth
	if s.WebhookHealth != "" {
		url = s.WebhookHealth
	}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	started := time.Now()
	wctx, cancel := context.WithTimeout(ctx, s.APITimeout)
	defer cancel()
	var last string
	for {
		req, _ := http.NewRequestWithContext(wctx, http.MethodGet, url, nil)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				e.Logf("the pod identity webhook is in service (waited %s)", time.Since(started).Round(time.Millisecond))
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		select {
		case <-wctx.Done():
			return fmt.Errorf("the pod identity webhook on this controller (%s) was not in service after %s (last: %s): "+
				"pods of the releases would start without their IAM roles; see its unit's journal (journalctl -u kube-aws-pod-identity-webhook)",
				url, time.Since(started).Round(time.Second), last)
		case <-time.After(time.Second):
		}
	}
}
