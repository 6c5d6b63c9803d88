package config

import (
	"fmt"
	"net/netip"
)

// MaxComputedAZs is how many availability zones the computed subnet layout
// reserves room for. The layout depends only on an AZ's position in
// availabilityZones, never on how many there are, so appending a zone later
// adds subnets without renumbering (and so replacing) the existing ones.
const MaxComputedAZs = 8

// ComputeSubnets returns the subnets of the cluster's network. When
// network.subnets is given it is returned as is. Otherwise (a new VPC with
// no subnets listed) it carves one public and one private subnet per
// availability zone out of the VPC CIDR: the VPC is split into 16 equal
// blocks (4 more prefix bits: a /16 gives /20s), the public subnet of the
// i-th zone is block i and its private subnet block 8+i. The result is
// computed in Go because CloudFormation emulators lack Fn::Cidr, and so that
// every plugin sees the same addresses. Names are public-<az> and
// private-<az>.
func ComputeSubnets(c *Cluster) ([]Subnet, error) {
	if len(c.Network.Subnets) > 0 {
		return append([]Subnet(nil), c.Network.Subnets...), nil
	}
	if c.Network.VPCID != "" {
		return nil, fmt.Errorf("network.vpcId %s is an existing VPC, so network.subnets must list its subnets by id", c.Network.VPCID)
	}
	cidr := c.Network.VPCCIDR
	if cidr == "" {
		cidr = DefaultVPCCIDR
	}
	vpc, err := netip.ParsePrefix(cidr)
	if err != nil || !vpc.Addr().Is4() {
		return nil, fmt.Errorf("network.vpcCIDR %q is not an IPv4 CIDR such as 10.0.0.0/16", cidr)
	}
	vpc = vpc.Masked()
	if len(c.AvailabilityZones) > MaxComputedAZs {
		return nil, fmt.Errorf("computed subnets cover at most %d availability zones, availabilityZones lists %d; list network.subnets yourself", MaxComputedAZs, len(c.AvailabilityZones))
	}
	bits := vpc.Bits() + 4
	if bits > 28 {
		return nil, fmt.Errorf("network.vpcCIDR %s is too small to split into 16 subnets of at least /28; use a /24 or larger (a /16 is usual), or list network.subnets", vpc)
	}
	out := make([]Subnet, 0, 2*len(c.AvailabilityZones))
	for i, az := range c.AvailabilityZones {
		out = append(out, Subnet{Name: subnetName(false, az), AvailabilityZone: az, CIDR: nthSubnet(vpc, bits, i).String()})
	}
	for i, az := range c.AvailabilityZones {
		out = append(out, Subnet{Name: subnetName(true, az), AvailabilityZone: az, CIDR: nthSubnet(vpc, bits, MaxComputedAZs+i).String(), Private: true})
	}
	return out, nil
}

// nthSubnet returns the n-th block of prefix length bits inside an IPv4 prefix.
func nthSubnet(parent netip.Prefix, bits, n int) netip.Prefix {
	a := parent.Addr().As4()
	base := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3])
	base += uint32(n) << (32 - bits)
	addr := netip.AddrFrom4([4]byte{byte(base >> 24), byte(base >> 16), byte(base >> 8), byte(base)})
	return netip.PrefixFrom(addr, bits)
}

// prefixesOverlap reports whether two prefixes share any address.
func prefixesOverlap(a, b netip.Prefix) bool {
	return a.Overlaps(b)
}

// prefixContains reports whether outer contains all of inner.
func prefixContains(outer, inner netip.Prefix) bool {
	return inner.Bits() >= outer.Bits() && outer.Contains(inner.Addr())
}

// MachineSubnets are the subnets a machine set runs in: those refs names
// (etcd.subnets, a node pool's subnets), or when refs is empty every
// private subnet (every public one when there is none).
func (c *Cluster) MachineSubnets(refs []string) ([]Subnet, error) {
	all, err := ComputeSubnets(c)
	if err != nil {
		return nil, err
	}
	if len(refs) == 0 {
		return DefaultMachineSubnets(all), nil
	}
	byName := map[string]Subnet{}
	for _, s := range all {
		byName[s.Name] = s
	}
	out := make([]Subnet, 0, len(refs))
	for _, n := range refs {
		s, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("unknown subnet %q", n)
		}
		out = append(out, s)
	}
	return out, nil
}

// DefaultMachineSubnets are the subnets of a machine set that names none:
// every private subnet, or every public one when there is none.
func DefaultMachineSubnets(all []Subnet) []Subnet {
	var priv, pub []Subnet
	for _, s := range all {
		if s.Private {
			priv = append(priv, s)
		} else {
			pub = append(pub, s)
		}
	}
	if len(priv) > 0 {
		return priv
	}
	return pub
}
