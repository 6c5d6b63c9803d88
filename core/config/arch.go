package config

import (
	"strings"

	"github.com/kube-aws/kube-aws/core/names"
)

// Architecture is the CPU architecture of an EC2 instance type, as Go and
// container images name it: arm64 for AWS Graviton families (a1, and every
// family whose generation digit is followed by g: t4g, m6gd, c7gn, r8g...),
// amd64 otherwise.
func Architecture(instanceType string) string {
	family, _, _ := strings.Cut(instanceType, ".")
	if family == "a1" {
		return "arm64"
	}
	i := 0
	for i < len(family) && family[i] >= 'a' && family[i] <= 'z' {
		i++
	}
	j := i
	for j < len(family) && family[j] >= '0' && family[j] <= '9' {
		j++
	}
	if i > 0 && j > i && j < len(family) && family[j] == 'g' {
		return "arm64"
	}
	return "amd64"
}

// Architectures lists, sorted, the architectures of the machines of a role
// (names.RoleController, RoleEtcd or RoleWorker; for workers, one pool, or
// every pool when pool is empty).
func (c *Cluster) Architectures(role, pool string) []string {
	var types []string
	switch role {
	case names.RoleController:
		types = []string{c.Controller.InstanceType}
	case names.RoleEtcd:
		types = []string{c.Etcd.InstanceType}
	case names.RoleWorker:
		for _, np := range c.NodePools {
			if pool == "" || np.Name == pool {
				types = append(types, np.InstanceType)
			}
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, t := range types {
		if a := Architecture(t); !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	if len(out) == 2 && out[0] > out[1] {
		out[0], out[1] = out[1], out[0]
	}
	return out
}
