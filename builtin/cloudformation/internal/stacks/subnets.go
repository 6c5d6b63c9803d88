package stacks

import (
	"fmt"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/diag"
)

// computeSubnets returns the subnets of the cluster: network.subnets as
// given, or for a new VPC one public and one private subnet per zone with
// CIDRs computed in Go by core/config (so every plugin sees the same
// addresses, and because moto has no Fn::Cidr).
func computeSubnets(c *config.Cluster) ([]config.Subnet, diag.List) {
	subnets, err := config.ComputeSubnets(c)
	if err != nil {
		return nil, diag.List{diag.Fatalf("%v", err).At("network.subnets")}
	}
	if len(subnets) == 0 {
		return nil, diag.List{diag.Fatalf("the cluster has no subnets: list availabilityZones or network.subnets").At("availabilityZones")}
	}
	return subnets, nil
}

// pickSubnets resolves a machine set's subnet names: empty means every
// private subnet, or every public one when there are none.
func pickSubnets(all []config.Subnet, names []string, path string) ([]config.Subnet, diag.List) {
	if len(names) == 0 {
		return config.DefaultMachineSubnets(all), nil
	}
	byName := map[string]config.Subnet{}
	for _, s := range all {
		byName[s.Name] = s
	}
	var out []config.Subnet
	var diags diag.List
	for i, n := range names {
		s, ok := byName[n]
		if !ok {
			diags = append(diags, diag.Fatalf("unknown subnet %q", n).At(fmt.Sprintf("%s[%d]", path, i)).
				WithHint("name one of network.subnets"))
			continue
		}
		out = append(out, s)
	}
	return out, diags
}
