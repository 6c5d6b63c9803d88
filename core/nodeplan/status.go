package nodeplan

// Status is the object every machine keeps at status/<role>/<instance-id>.json
// (StatusKey) in the cluster's bucket, rewritten at every step, so that
// `kube-aws validate` can name the machines that failed and say why, or
// never got there.
type Status struct {
	Role       string `json:"role"`
	InstanceID string `json:"instanceID"`
	// Address is the private IPv4 address.
	Address string `json:"address"`
	Phase   Phase  `json:"phase"`
	// Step is what the machine does or did last ("runcmd[3]: kube-aws-node
	// secrets"); with PhaseFailed, the step that failed.
	Step string `json:"step"`
	// Error says why the step failed (PhaseFailed only).
	Error string `json:"error,omitempty"`
	// Seconds is the time since the machine started (its PID 1), when the
	// status was written.
	Seconds float64 `json:"seconds"`
	// Time is when the status was written, RFC 3339 in UTC.
	Time string `json:"time"`
	// UserData is the full S3 key of the userdata the machine booted
	// from (EnvUserDataKey, <prefix>/roles/<role>/userdata/<sha256>): what
	// it runs, which kube-aws compares with what it rendered since. Every
	// status the machine writes carries it.
	UserData string `json:"userData,omitempty"`
	// Goal says what the machine found when it reached its role's goal
	// (PhaseReady): the gates of a roll read it.
	Goal *GoalReport `json:"goal,omitempty"`
}

// GoalReport is what a machine found at its goal.
type GoalReport struct {
	// Node is the machine's Kubernetes node, Ready.
	Node string `json:"node,omitempty"`
	// APIReady says that the machine's own API server answered /readyz ok
	// (controllers); whether it answers through the load balancer is the
	// load balancer's health of the instance, which a roll reads there.
	APIReady bool `json:"apiReady,omitempty"`
	// Etcd is the member's view of its cluster (etcd members).
	Etcd *EtcdReport `json:"etcd,omitempty"`
}

// EtcdReport is an etcd member's view of its cluster at its goal.
type EtcdReport struct {
	// Name and ID are the member's (hexadecimal ID): a replaced member
	// keeps both, for the member is its volume.
	Name string `json:"name"`
	ID   string `json:"id"`
	// Leader is the leader's ID; empty when the cluster has none.
	Leader string `json:"leader,omitempty"`
	// Members and Healthy count the cluster's members and those that
	// answered a health check.
	Members int `json:"members"`
	Healthy int `json:"healthy"`
}

// Whole says that every member is healthy and there is a leader.
func (r *EtcdReport) Whole() bool {
	return r != nil && r.Members > 0 && r.Healthy == r.Members && r.Leader != ""
}

// Phase is where a machine is.
type Phase string

const (
	// PhaseBooting: boot is applying the userdata.
	PhaseBooting Phase = "booting"
	// PhaseFailed: a step failed; Step and Error say which and why. The
	// machine does nothing more until it is replaced or booted again.
	PhaseFailed Phase = "failed"
	// PhaseBooted: every runcmd command succeeded.
	PhaseBooted Phase = "booted"
	// PhaseReady: the role's goal (GoalPlan) was reached.
	PhaseReady Phase = "ready"
)
