package nodeplan

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
)

// A drain empties a node before its machine goes: cordon, then every pod
// evicted through the Eviction API (PodDisruptionBudgets honoured,
// DaemonSet pods left, mirror pods ignored). The controllers' drainer
// (`kube-aws-node drainer`) is the one implementation; it drains a node when
// its instance waits on the Auto Scaling termination hook (whoever ended
// it), or when kube-aws asks first, during a roll, by tagging the instance
// with DrainTag. It reports each drain in a DrainStatus object that kube-aws
// reads.

// DrainTag is the EC2 tag kube-aws puts on an instance to ask for its
// node's drain; its value is a DrainRequest. Removing the tag cancels the
// drain: the drainer uncordons the node it cordoned for the request.
const DrainTag = "kube-aws:drain"

// DrainRequest is what kube-aws asks of a drain, the value of DrainTag.
type DrainRequest struct {
	// ID tells one request from another (the roll that made it), so that a
	// status answers the request it belongs to.
	ID string
	// Timeout bounds the eviction of the node's pods.
	Timeout time.Duration
	// Force deletes the pods still there when Timeout expires, PDBs or
	// not, instead of stopping the drain.
	Force bool
}

// String is the tag value: id=<id>;timeout=<duration>;force=<bool>. A tag
// value holds at most 256 characters; this holds about 60.
func (r DrainRequest) String() string {
	return fmt.Sprintf("id=%s;timeout=%s;force=%t", r.ID, r.Timeout, r.Force)
}

// ParseDrainRequest reads a DrainTag value.
func ParseDrainRequest(s string) (DrainRequest, error) {
	var r DrainRequest
	for _, kv := range strings.Split(s, ";") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return r, fmt.Errorf("drain request %q: %q is not key=value", s, kv)
		}
		switch k {
		case "id":
			r.ID = v
		case "timeout":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return r, fmt.Errorf("drain request %q: timeout %q is not a positive duration", s, v)
			}
			r.Timeout = d
		case "force":
			b, err := strconv.ParseBool(v)
			if err != nil {
				return r, fmt.Errorf("drain request %q: force %q is not true or false", s, v)
			}
			r.Force = b
		default:
			return r, fmt.Errorf("drain request %q: unknown key %q", s, k)
		}
	}
	if r.ID == "" || r.Timeout == 0 {
		return r, fmt.Errorf("drain request %q: want id=...;timeout=...", s)
	}
	return r, nil
}

// DrainPhase is where a drain is.
type DrainPhase string

const (
	// DrainDraining: cordoned, pods being evicted.
	DrainDraining DrainPhase = "draining"
	// DrainDrained: no pod left but DaemonSet and mirror pods.
	DrainDrained DrainPhase = "drained"
	// DrainBlocked: the timeout expired with pods whose eviction a
	// PodDisruptionBudget refuses; Blocker names one. The node stays
	// cordoned until the request is withdrawn.
	DrainBlocked DrainPhase = "blocked"
	// DrainCanceled: the request was withdrawn; the node was uncordoned.
	DrainCanceled DrainPhase = "canceled"
	// DrainFailed: the drain could not be done (the API refused the
	// cordon, say); Message says why.
	DrainFailed DrainPhase = "failed"
)

// DrainStatus is the drainer's report of one instance's drain, at
// DrainStatusKey.
type DrainStatus struct {
	InstanceID string `json:"instanceID"`
	// Node is the instance's Kubernetes node; empty when it has none (it
	// never registered), which drains at once.
	Node string `json:"node,omitempty"`
	// Request is the DrainRequest's ID it answers; empty for a drain the
	// termination hook started.
	Request string     `json:"request,omitempty"`
	Phase   DrainPhase `json:"phase"`
	// Pods are the pods still to be evicted (namespace/name), at most a
	// few.
	Pods []string `json:"pods,omitempty"`
	// Blocker is a pod whose eviction is refused, with the
	// PodDisruptionBudget that refuses it.
	Blocker *DrainBlocker `json:"blocker,omitempty"`
	Message string        `json:"message,omitempty"`
	// Started and Time are RFC 3339 in UTC: when the drain began, and when
	// this status was written.
	Started string `json:"started"`
	Time    string `json:"time"`
}

// DrainBlocker is a pod the Eviction API refuses to evict and why.
type DrainBlocker struct {
	Pod string `json:"pod"`
	// PDB is the PodDisruptionBudget (namespace/name) that refuses it.
	PDB     string `json:"pdb,omitempty"`
	Message string `json:"message,omitempty"`
}

// DrainStatusKey is the S3 key, relative to the cluster's prefix, of an
// instance's DrainStatus.
func DrainStatusKey(instanceID string) string {
	return path.Join(DrainStatusPrefix, instanceID+".json")
}

// DrainStatusPrefix is the S3 key prefix, relative to the cluster's
// prefix, under which the controllers' drainer writes DrainStatus objects.
const DrainStatusPrefix = "drains"

// DrainerPlan (DrainerPath) configures `drainer`, the long-running drainer
// on the controllers: one of them at a time (elected by a Lease) drains the
// node of every instance of the cluster's groups that waits on the
// termination hook Hook, and of every instance kube-aws tagged with
// DrainTag.
type DrainerPlan struct {
	// Kubeconfig may list nodes and pods, cordon nodes, evict and delete
	// pods, read PodDisruptionBudgets and hold a Lease in kube-system.
	Kubeconfig string `json:"kubeconfig"`
	// Hook is the termination lifecycle hook of the cluster's groups the
	// drainer answers (names.DrainLifecycleHook).
	Hook string `json:"hook"`
	// Timeout bounds a drain the termination hook started when the hook's
	// metadata names none (kube-aws renders it there, from cluster.yaml's
	// drain; a request names its own); "5m" when empty.
	Timeout string `json:"timeout,omitempty"`
	// Force, likewise when the hook's metadata says nothing, deletes the
	// pods a PodDisruptionBudget still protects when Timeout expires on
	// such a drain, instead of letting the instance go with them running.
	Force bool `json:"force,omitempty"`
}

// lifecycleHookName reports whether s is what Auto Scaling accepts as a
// hook's name: 1 to 255 letters, digits, '-', '_' and '/'. A loop, not the
// regular expression ^[A-Za-z0-9_/-]{1,255}$: compiling that one unrolls its
// 255 repetitions, a quarter of a megabyte allocated when every process
// linking this package starts.
func lifecycleHookName(s string) bool {
	if len(s) < 1 || len(s) > 255 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '/' || c == '-') {
			return false
		}
	}
	return true
}

// Validate implements Plan.
func (p *DrainerPlan) Validate() error {
	var c checker
	c.absPath("kubeconfig", p.Kubeconfig)
	switch {
	case p.Hook == "":
		c.add("hook", "missing: want the groups' termination lifecycle hook, such as kube-aws-drain")
	case !lifecycleHookName(p.Hook):
		c.add("hook", "%q is not a lifecycle hook name (letters, digits, -, _ and /, at most 255)", p.Hook)
	}
	c.duration("timeout", p.Timeout)
	return c.err()
}
