// Package core holds the data every stage of kube-aws passes around: the
// cluster.yaml model (config), the constructs plugins contribute (construct),
// the rules that merge them (merge), diagnostics (diag) and the stage
// input/output types (stage). It imports nothing else of this project, so the
// plugin SDK can depend on it without pulling in the host.
package core
