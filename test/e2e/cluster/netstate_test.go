//go:build e2ecluster

package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// netStateScript prints what a worker's network looks like: its routes,
// flannel's neighbours and forwarding entries, kube-proxy's rules for the
// web Service, and the connections to the node port but those closed
// cleanly. conntrack keeps an unanswered connection (UNREPLIED) for two
// minutes with the pod address it was sent to, so a capture taken just
// after a failed request says where that request went, even when the
// routes and rules have changed since. (conntrack's count of what it
// listed goes to standard error, which would land in the middle of a line
// of standard output: it is left out.)
var netStateScript = `echo "## ip route"; ip route
echo "## flannel.1 neighbours"; ip neigh show dev flannel.1
echo "## flannel.1 forwarding"; bridge fdb show dev flannel.1
echo "## kube-proxy's rules for default/web"; iptables-save -t nat | grep -F 'default/web'
echo "## connections to the node port, those in TIME_WAIT left out ($(conntrack -C) connections tracked)"
conntrack -L -p tcp --dport ` + fmt.Sprint(webNodePort) + ` 2>/dev/null | grep -v -F TIME_WAIT | tail -n 40
true`

// maxCaptures bounds the captures of one web client: the first failures
// through a few workers tell what the rest would.
const maxCaptures = 3

// captureNetState records, beside a worker's first failure, the worker's
// network as netStateScript prints it and the web Service's endpoints as
// the API had them, taken at once.
func (c *traffic) captureNetState(ctx context.Context, w string, f *targetFailures) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var b strings.Builder
	fmt.Fprintf(&b, "## web endpoints as the API has them\n%s", webEndpoints(ctx, c.cs))
	id := ""
	for _, m := range c.e.h.Player().Machines() {
		if m.Instance.PrivateIP.String() == w {
			id = m.Instance.ID
		}
	}
	if id == "" {
		fmt.Fprintf(&b, "no running machine has address %s\n", w)
	} else if out, err := c.e.inMachine(ctx, id, "sh", "-c", netStateScript); err != nil {
		fmt.Fprintf(&b, "%s\n(%v)\n", out, err)
	} else {
		b.WriteString(out)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.capturesDone++
	f.capture = fmt.Sprintf("captured on %s (%s) %v after the failure, in %v:\n%s", w, id, start.Sub(f.first).Round(time.Millisecond), time.Since(start).Round(time.Millisecond), b.String())
}

// awaitCaptures waits, up to timeout, for the captures started so far to
// finish. It polls counters rather than waiting on a sync.WaitGroup, which
// requests still being sent could add to while it waits.
func (c *traffic) awaitCaptures(timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		done := c.capturesDone == c.captures
		c.mu.Unlock()
		if done {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// webEndpoints lists the web Service's endpoints, one a line: address,
// node and conditions.
func webEndpoints(ctx context.Context, cs *kubernetes.Clientset) string {
	if cs == nil {
		return "(no API client)\n"
	}
	list, err := cs.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + webName})
	if err != nil {
		return fmt.Sprintf("(%v)\n", err)
	}
	var lines []string
	for _, s := range list.Items {
		for _, ep := range s.Endpoints {
			cond := func(p *bool) string {
				if p == nil {
					return "?"
				}
				return fmt.Sprint(*p)
			}
			node := ""
			if ep.NodeName != nil {
				node = *ep.NodeName
			}
			lines = append(lines, fmt.Sprintf("%s on %s ready=%s serving=%s terminating=%s", strings.Join(ep.Addresses, ","), node, cond(ep.Conditions.Ready), cond(ep.Conditions.Serving), cond(ep.Conditions.Terminating)))
		}
	}
	sort.Strings(lines)
	if len(lines) == 0 {
		return "(none)\n"
	}
	return strings.Join(lines, "\n") + "\n"
}
