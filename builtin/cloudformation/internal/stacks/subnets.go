package stacks

import (
	"fmt"
	"math/bits"
	"net/netip"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/diag"
)

// DefaultVPCCIDR is used for a new VPC when cluster.yaml gives none.
const DefaultVPCCIDR = "10.0.0.0/16"

// computeSubnets returns the subnets of the cluster: network.subnets as
// given, or for a new VPC without them one public and one private subnet per
// availability zone, carved from the VPC CIDR in Go (moto has no Fn::Cidr,
// and a CIDR computed at render time shows up in the rendered template).
//
// The subnets are the smallest equal split of the VPC that holds 2 per zone:
// public ones first, in zone order, then the private ones, so adding a zone
// later only changes the split when the count crosses a power of two.
func computeSubnets(c *config.Cluster) ([]config.Subnet, diag.List) {
	if len(c.Network.Subnets) > 0 {
		return c.Network.Subnets, nil
	}
	if c.Network.VPCID != "" {
		return nil, diag.List{diag.Fatalf("an existing VPC (network.vpcId) needs its subnets listed with their IDs").
			At("network.subnets")}
	}
	cidr := c.Network.VPCCIDR
	if cidr == "" {
		cidr = DefaultVPCCIDR
	}
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil || !prefix.Addr().Is4() {
		return nil, diag.List{diag.Fatalf("network.vpcCIDR %q is not an IPv4 CIDR", cidr).At("network.vpcCIDR")}
	}
	prefix = prefix.Masked()
	n := len(c.AvailabilityZones)
	if n == 0 {
		return nil, diag.List{diag.Fatalf("no availability zones to put subnets in").At("availabilityZones")}
	}
	newBits := bits.Len(uint(2*n - 1))
	size := prefix.Bits() + newBits
	if size > 28 {
		return nil, diag.List{diag.Fatalf("network.vpcCIDR %s is too small for %d subnets (AWS subnets are at most /28)", cidr, 2*n).
			At("network.vpcCIDR")}
	}
	subnets := make([]config.Subnet, 0, 2*n)
	for i := 0; i < 2*n; i++ {
		az := c.AvailabilityZones[i%n]
		private := i >= n
		name := "public-" + az
		if private {
			name = "private-" + az
		}
		subnets = append(subnets, config.Subnet{
			Name:             name,
			AvailabilityZone: az,
			CIDR:             nthSubnet(prefix, size, i).String(),
			Private:          private,
		})
	}
	return subnets, nil
}

// nthSubnet returns the i-th subnet of length size inside prefix.
func nthSubnet(prefix netip.Prefix, size, i int) netip.Prefix {
	a := prefix.Addr().As4()
	base := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	base += uint32(i) << (32 - size)
	addr := netip.AddrFrom4([4]byte{byte(base >> 24), byte(base >> 16), byte(base >> 8), byte(base)})
	return netip.PrefixFrom(addr, size)
}

// pickSubnets resolves a machine set's subnet names: empty means every
// private subnet, or every public one when there are none.
func pickSubnets(all []config.Subnet, names []string, path string) ([]config.Subnet, diag.List) {
	if len(names) == 0 {
		var priv, pub []config.Subnet
		for _, s := range all {
			if s.Private {
				priv = append(priv, s)
			} else {
				pub = append(pub, s)
			}
		}
		if len(priv) > 0 {
			return priv, nil
		}
		return pub, nil
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
