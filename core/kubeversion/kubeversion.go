// Package kubeversion parses the kubernetesVersion of cluster.yaml. It is
// shared by the apiserver plugin (whose flag table depends on the minor
// version), the userdata plugin's static pod (whose image tag is the full
// version), the helm plugin (Helm's capabilities) and any plugin that follows
// the Kubernetes version, so all read "1.30.4" and "v1.30.4" the same way.
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
