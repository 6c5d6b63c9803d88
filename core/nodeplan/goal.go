package nodeplan

import (
	"fmt"
	"net/url"
)

// GoalPlan (GoalPath) is what the role is for, which the `wait` step waits
// for and then reports (console and status object, phase "ready", with the
// seconds since the machine started). Exactly one of Node and Etcd. The
// `etcd-snapshot` step uses Etcd too.
type GoalPlan struct {
	Node *NodeGoal `json:"node,omitempty"`
	Etcd *EtcdGoal `json:"etcd,omitempty"`
	// Timeout bounds the wait; "10m" when empty.
	Timeout string `json:"timeout,omitempty"`
}

// NodeGoal: this machine's Node is Ready.
type NodeGoal struct {
	// Kubeconfig reaches the API server (the kubelet's will do).
	Kubeconfig string `json:"kubeconfig"`
	// NodeName is this machine's node; it may name facts. "{hostname}"
	// when empty, the name the kubelet registers with on AWS.
	NodeName string `json:"nodeName,omitempty"`
	// APIReadyz are https URLs of API servers' /readyz that must answer
	// ok, asked with Kubeconfig's CA and credentials, before the goal is
	// reached (controllers: their own API server, and the API through the
	// load balancer, "https://{apiLoadBalancerDNS}:443/readyz"); they may
	// name facts.
	APIReadyz []string `json:"apiReadyz,omitempty"`
	// DaemonSets are DaemonSets bound to the nodes that run them (they
	// update OnDelete): this node's pod of each must come from the release
	// this machine's userdata names. The DaemonSet may have made the pod
	// from the release before, as the node registered, and been upgraded
	// since (a controller's addons step upgrades it after its kubelet
	// registered): the step deletes such a pod, so the DaemonSet makes it
	// again from its template. Kubeconfig must be allowed to read
	// DaemonSets and delete pods.
	DaemonSets []NodeDaemonSet `json:"daemonSets,omitempty"`
}

// NodeDaemonSet is a DaemonSet whose pod on this node must be of a release.
type NodeDaemonSet struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Digest is the sha256 of the release, which the DaemonSet's pod
	// template carries in the annotation kube-aws.io/release-digest.
	Digest string `json:"digest"`
}

// EtcdGoal: the etcd member on this machine is healthy (answers a
// linearizable read through its client URL).
type EtcdGoal struct {
	// Endpoints are client URLs of this member; they may name facts
	// ("https://{privateIPv4}:2379").
	Endpoints []string `json:"endpoints"`
	// CACert, Cert and Key are the PEM files of a client certificate the
	// member trusts.
	CACert string `json:"caCert"`
	Cert   string `json:"cert"`
	Key    string `json:"key"`
}

// Validate implements Plan.
func (p *GoalPlan) Validate() error {
	var c checker
	if (p.Node == nil) == (p.Etcd == nil) {
		c.add("node|etcd", "give exactly one goal: node or etcd")
	}
	if n := p.Node; n != nil {
		c.absPath("node.kubeconfig", n.Kubeconfig)
		if n.NodeName != "" {
			c.dnsName("node.nodeName", n.NodeName)
		}
		for i, u := range n.APIReadyz {
			c.httpsURL(fmt.Sprintf("node.apiReadyz[%d]", i), u, "https://{apiLoadBalancerDNS}:443/readyz")
		}
		seen := map[string]int{}
		for i, d := range n.DaemonSets {
			field := fmt.Sprintf("node.daemonSets[%d]", i)
			if !dnsLabel.MatchString(d.Namespace) {
				c.add(field+".namespace", "%q is not a namespace (DNS-1123 label)", d.Namespace)
			}
			if !releaseName.MatchString(d.Name) || len(d.Name) > 253 {
				c.add(field+".name", "%q is not a DaemonSet name (lower-case DNS name)", d.Name)
			}
			c.sha256(field+".digest", d.Digest)
			id := d.Namespace + "/" + d.Name
			if j, dup := seen[id]; dup {
				c.add(field, "DaemonSet %s is listed by node.daemonSets[%d] too", id, j)
			}
			seen[id] = i
		}
	}
	if e := p.Etcd; e != nil {
		if len(e.Endpoints) == 0 {
			c.add("etcd.endpoints", "missing: want this member's client URLs")
		}
		for i, ep := range e.Endpoints {
			field := fmt.Sprintf("etcd.endpoints[%d]", i)
			c.facts(field, ep)
			if u, err := url.Parse(placeholder.ReplaceAllString(ep, "x")); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				c.add(field, "%q is not a URL such as https://{privateIPv4}:2379", ep)
			}
		}
		c.absPath("etcd.caCert", e.CACert)
		c.absPath("etcd.cert", e.Cert)
		c.absPath("etcd.key", e.Key)
	}
	c.duration("timeout", p.Timeout)
	return c.err()
}

// ApproverPlan (ApproverPath) configures `approve-csrs`, the long-running
// approver of kubelet serving certificate requests on the controllers.
// It approves a kubernetes.io/kubelet-serving request only when the node
// asks for names and addresses its own EC2 instance has; every other
// request is left to others.
type ApproverPlan struct {
	// Kubeconfig may read, approve and deny certificatesigningrequests.
	Kubeconfig string `json:"kubeconfig"`
}

// Validate implements Plan.
func (p *ApproverPlan) Validate() error {
	var c checker
	c.absPath("kubeconfig", p.Kubeconfig)
	return c.err()
}
