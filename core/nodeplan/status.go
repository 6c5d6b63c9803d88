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
