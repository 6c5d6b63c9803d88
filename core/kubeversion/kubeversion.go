// Package kubeversion parses the kubernetesVersion of cluster.yaml. It is
// shared by the apiserver plugin (whose flag table depends on the minor
// version), the userdata plugin's static pod (whose image tag is the full
// version), the helm plugin (Helm's capabilities) and any plugin that follows
// the Kubernetes version, so all read "1.30.4" and "v1.30.4" the same way.
// It also holds the one rule for changing a cluster's version (CheckUpgrade,
// the upstream version skew policy), which the kubernetes plugin applies at
// initialise against the version the cluster last deployed and the deploy
// plugin against the running cluster.
package kubeversion

import (
	"fmt"
	"strconv"
	"strings"
)

// Version is a Kubernetes version such as v1.30.4 or v1.31.0-rc.1.
type Version struct {
	Major, Minor, Patch int
	// HasPatch is false for a version given as major.minor only.
	HasPatch bool
	// Suffix is a pre-release or build suffix including its leading '-' or '+'.
	Suffix string
}

// Parse accepts "1.30", "1.30.4", "v1.30.4" and "v1.31.0-rc.1".
func Parse(s string) (Version, error) {
	raw := strings.TrimPrefix(strings.TrimSpace(s), "v")
	if raw == "" {
		return Version{}, fmt.Errorf("empty Kubernetes version")
	}
	var v Version
	if i := strings.IndexAny(raw, "-+"); i >= 0 {
		v.Suffix = raw[i:]
		raw = raw[:i]
	}
	parts := strings.Split(raw, ".")
	if len(parts) < 2 || len(parts) > 3 {
		return Version{}, fmt.Errorf("Kubernetes version %q: want MAJOR.MINOR.PATCH, e.g. v1.30.4", s)
	}
	nums := make([]int, len(parts))
	for i, p := range parts {
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 {
			return Version{}, fmt.Errorf("Kubernetes version %q: %q is not a number", s, p)
		}
		nums[i] = n
	}
	v.Major, v.Minor = nums[0], nums[1]
	if len(nums) == 3 {
		v.Patch, v.HasPatch = nums[2], true
	}
	if v.Major != 1 {
		return Version{}, fmt.Errorf("Kubernetes version %q: only 1.x exists", s)
	}
	if v.Suffix != "" && !v.HasPatch {
		return Version{}, fmt.Errorf("Kubernetes version %q: a pre-release needs a patch version", s)
	}
	return v, nil
}

// String renders the version with a leading v, as image tags spell it.
func (v Version) String() string {
	if !v.HasPatch {
		return fmt.Sprintf("v%d.%d", v.Major, v.Minor)
	}
	return fmt.Sprintf("v%d.%d.%d%s", v.Major, v.Minor, v.Patch, v.Suffix)
}

// MinorString renders major.minor, e.g. 1.30.
func (v Version) MinorString() string { return fmt.Sprintf("%d.%d", v.Major, v.Minor) }

// SkewError is a Kubernetes version change the upstream version skew policy
// does not allow: from (what the cluster runs or last deployed), to (what
// was asked for), the rule the change breaks and what to do instead.
type SkewError struct {
	From, To Version
	// Rule says which rule the change breaks and why the rule exists.
	Rule string
	// Hint says what to do instead.
	Hint string
}

func (e *SkewError) Error() string {
	return fmt.Sprintf("Kubernetes %s -> %s: %s", e.From, e.To, e.Rule)
}

// CheckUpgrade checks a change of a cluster's Kubernetes version, from the
// version it runs (or last deployed) to the one asked for, against the
// upstream version skew policy
// (https://kubernetes.io/releases/version-skew-policy/), and returns a
// *SkewError naming both versions and the rule when it is refused:
//   - One minor version at a time: while a cluster is upgraded its API
//     servers run two versions side by side, and the policy allows them one
//     minor version apart; kubelets too may not be newer than the API
//     server, which replacing the control plane first (the roll order)
//     keeps. 1.33 -> 1.35 is refused, 1.33 -> 1.34 -> 1.35 is the way.
//   - Never a downgrade of the minor version: a newer API server may have
//     stored objects with fields, API versions or storage versions the
//     older one cannot read, and upstream supports no minor downgrade.
//   - Any patch release within a minor, up or down: patch releases carry
//     fixes only, never an API or storage change, so going back to an
//     earlier patch (away from a regression) is safe; kubeadm's upgrade
//     policy (cmd/kubeadm/app/phases/upgrade/policy.go) likewise refuses
//     only minor skews, and a patch downgrade is how an operator leaves a
//     faulty patch release.
//
// Pre-release suffixes are judged by their minor version like releases.
// Versions given without a patch compare by minor version.
func CheckUpgrade(from, to Version) error {
	switch {
	case from.Major != to.Major:
		return &SkewError{From: from, To: to,
			Rule: "changes the major version, which no Kubernetes release supports",
			Hint: fmt.Sprintf("keep kubernetesVersion at %d.%d.x", from.Major, from.Minor)}
	case to.Minor > from.Minor+1:
		next := Version{Major: from.Major, Minor: from.Minor + 1}
		return &SkewError{From: from, To: to,
			Rule: fmt.Sprintf("skips %s: Kubernetes upgrades one minor version at a time (upstream version skew policy: the API servers of a cluster being upgraded may be at most one minor version apart)", next.MinorString()),
			Hint: fmt.Sprintf("upgrade to %s first: set kubernetesVersion to a %s.x release, run kube-aws up, then set %s", next.MinorString(), next.MinorString(), strings.TrimPrefix(to.String(), "v"))}
	case to.Minor < from.Minor:
		return &SkewError{From: from, To: to,
			Rule: fmt.Sprintf("downgrades the minor version from %s to %s: Kubernetes does not support a minor downgrade (upstream version skew policy: objects the newer API server stored may use API and storage versions the older one cannot read)", from.MinorString(), to.MinorString()),
			Hint: fmt.Sprintf("keep kubernetesVersion at a %s.x release (a patch downgrade within %s is allowed); to run %s again, make a new cluster at it and move the workloads", from.MinorString(), from.MinorString(), to.MinorString())}
	}
	return nil
}
