//go:build e2ecluster

package cluster

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// probeIMDSWait is how long the probe's pod waits for its token: an AWS
// SDK gives up on IMDS after about a second.
const probeIMDSWait = "2s"

// podsCannotActAsNodes: on the first node of each pool and on a
// controller, the probe as a pod (on the pod network, not the node's) asks
// the instance metadata service for an IMDSv2 token and gets no reply at
// all, while the node itself, on the same machine, gets a token, its role
// and the role's credentials. The launch templates give the token a hop
// limit of 1, which the harness's metadata service sends as the reply's IP
// TTL, as EC2 does: the node's forwarding of the reply to its pod bridge
// uses it up.
func (e *example) podsCannotActAsNodes(ctx context.Context, t *testing.T, cs *kubernetes.Clientset, nodesByPool map[string][]node) {
	ctx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	pools := make([]string, 0, len(nodesByPool))
	for p := range nodesByPool {
		pools = append(pools, p)
	}
	sort.Strings(pools)
	var targets []node
	for _, p := range pools {
		targets = append(targets, nodesByPool[p][0])
	}
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: "node.kube-aws.io/role=controller"})
	if err != nil || len(list.Items) == 0 {
		t.Fatalf("the controllers' nodes: %d, %v", len(list.Items), err)
	}
	c := list.Items[0]
	targets = append(targets, node{name: c.Name, instance: c.Spec.ProviderID[strings.LastIndex(c.Spec.ProviderID, "/")+1:]})

	for i, n := range targets {
		m, err := e.machineOf(n.instance)
		if err != nil {
			t.Errorf("%s: %v", n.name, err)
			continue
		}
		if hl := m.Instance.HopLimit; hl != 1 {
			t.Errorf("%s (%s): its launch template version gives the token a hop limit of %d, want 1", n.name, m.Instance.Group, hl)
		}
		took, role, err := e.nodeCredentials(ctx, n.instance)
		if err != nil {
			t.Errorf("the node %s itself: %v", n.name, err)
			continue
		}
		rep, err := runProbe(ctx, cs, fmt.Sprintf("e2e-imds-%d", i), n.name, []corev1.EnvVar{{Name: "PROBE_IMDS", Value: probeIMDSWait}})
		if err != nil {
			t.Errorf("probe on %s: %v", n.name, err)
			continue
		}
		r := rep.IMDS
		switch {
		case r == nil:
			t.Errorf("probe on %s said nothing of the metadata service: %+v", n.name, rep)
			continue
		case r.Status != 0 || r.Role != "" || r.Credentials:
			t.Errorf("a pod on %s got an answer to its token request: HTTP %d, role %q, credentials %v; want no reply at all",
				n.name, r.Status, r.Role, r.Credentials)
			continue
		case !r.TimedOut:
			t.Errorf("a pod on %s: the token request failed with %q, want a timeout (a reply dropped on the way, as on EC2)", n.name, r.Error)
			continue
		}
		t.Logf("pod on %s (%s, hop limit %d): PUT /latest/api/token had no reply, timed out after %d ms; the node itself: token in %v, credentials of role %s",
			n.name, m.Instance.Group, m.Instance.HopLimit, r.Millis, took, role)
	}
}

// nodeCredentials asks the metadata service from the machine itself (its
// own network, as the node agent does) for a token, its role and the
// role's credentials, and returns how long the token took and the role.
func (e *example) nodeCredentials(ctx context.Context, id string) (time.Duration, string, error) {
	const imds = "http://169.254.169.254"
	out, err := e.inMachine(ctx, id, "curl", "-sSf", "-m", "5", "-w", `\n%{time_total}`, "-X", "PUT",
		"-H", "X-aws-ec2-metadata-token-ttl-seconds: 60", imds+"/latest/api/token")
	if err != nil {
		return 0, "", fmt.Errorf("token: %w", err)
	}
	tok, secs, _ := strings.Cut(out, "\n")
	f, err := strconv.ParseFloat(strings.TrimSpace(secs), 64)
	if err != nil || tok == "" {
		return 0, "", fmt.Errorf("token: curl said %q", out)
	}
	get := func(path string) (string, error) {
		out, err := e.inMachine(ctx, id, "curl", "-sSf", "-m", "5", "-H", "X-aws-ec2-metadata-token: "+tok, imds+path)
		return strings.TrimSpace(out), err
	}
	role, err := get("/latest/meta-data/iam/security-credentials/")
	if err != nil || role == "" {
		return 0, "", fmt.Errorf("role: %q %v", role, err)
	}
	creds, err := get("/latest/meta-data/iam/security-credentials/" + role)
	if err != nil || !strings.Contains(creds, `"AccessKeyId"`) {
		return 0, "", fmt.Errorf("credentials of role %s: %v", role, err)
	}
	return time.Duration(f * float64(time.Second)).Round(time.Microsecond), role, nil
}
