package config

import (
	"fmt"
	"net/netip"
	"path/filepath"
)

// Defaults of the kubernetes section: the networks kube-aws has always used.
const (
	DefaultPodCIDR       = "10.2.0.0/16"
	DefaultServiceCIDR   = "10.3.0.0/24"
	DefaultClusterDomain = "cluster.local"
)

// APIServiceIP is the cluster IP of the kubernetes service in the default
// namespace: the first address of ServiceCIDR (the API server certificate
// must name it).
func (k Kubernetes) APIServiceIP() (netip.Addr, error) {
	return k.serviceIP(1)
}

// DNSServiceIP is the cluster DNS service's IP, the tenth address of
// ServiceCIDR (the kubelet's --cluster-dns, CoreDNS's service).
func (k Kubernetes) DNSServiceIP() (netip.Addr, error) {
	return k.serviceIP(10)
}

func (k Kubernetes) serviceIP(n int) (netip.Addr, error) {
	p, err := netip.ParsePrefix(k.ServiceCIDR)
	if err != nil || !p.Addr().Is4() {
		return netip.Addr{}, fmt.Errorf("kubernetes.serviceCIDR %q is not an IPv4 CIDR", k.ServiceCIDR)
	}
	a := p.Masked().Addr()
	for i := 0; i < n; i++ {
		a = a.Next()
	}
	if !p.Contains(a) {
		return netip.Addr{}, fmt.Errorf("kubernetes.serviceCIDR %s has no address number %d", p, n)
	}
	return a, nil
}

// MirrorDir is the artifact folder of air-gapped mode as a path usable from
// the process (artifacts.mirror is relative to cluster.yaml, which is in
// clusterDir); "" when the cluster downloads from upstream.
func (a Artifacts) MirrorDir(clusterDir string) string {
	if a.Mirror == "" {
		return ""
	}
	if filepath.IsAbs(a.Mirror) {
		return filepath.Clean(a.Mirror)
	}
	return filepath.Join(clusterDir, a.Mirror)
}

func kubernetesDefaults(k *Kubernetes) {
	if k.PodCIDR == "" {
		k.PodCIDR = DefaultPodCIDR
	}
	if k.ServiceCIDR == "" {
		k.ServiceCIDR = DefaultServiceCIDR
	}
	if k.ClusterDomain == "" {
		k.ClusterDomain = DefaultClusterDomain
	}
}

// kubernetes validates the kubernetes section: both networks are IPv4
// blocks that overlap neither each other nor the VPC (or any subnet of an
// existing VPC whose block kube-aws was given): a pod or service address
// that is also a machine's would be routed to the wrong place.
func (v *validator) kubernetes(subnets []Subnet) {
	k := v.c.Kubernetes
	type block struct {
		path string
		p    netip.Prefix
	}
	var own []block
	if p, ok := v.cidr("kubernetes.podCIDR", k.PodCIDR); ok {
		if p.Bits() > 23 {
			v.fatal("kubernetes.podCIDR", "use a /23 or larger block (10.2.0.0/16 is usual): every node takes a /24 of it",
				"kubernetes.podCIDR %s leaves room for fewer than two nodes", p)
		} else {
			own = append(own, block{"kubernetes.podCIDR", p})
		}
	}
	if p, ok := v.cidr("kubernetes.serviceCIDR", k.ServiceCIDR); ok {
		switch {
		case p.Bits() < 12:
			v.fatal("kubernetes.serviceCIDR", "use a /12 to /28 block (10.3.0.0/24 is usual): kube-apiserver refuses a larger one",
				"kubernetes.serviceCIDR %s is larger than /12", p)
		case p.Bits() > 28:
			v.fatal("kubernetes.serviceCIDR", "use a /12 to /28 block (10.3.0.0/24 is usual): the cluster DNS takes its tenth address",
				"kubernetes.serviceCIDR %s is smaller than /28", p)
		default:
			own = append(own, block{"kubernetes.serviceCIDR", p})
		}
	}
	if len(own) == 2 && prefixesOverlap(own[0].p, own[1].p) {
		v.fatal("kubernetes.serviceCIDR", "give pods and services separate blocks, e.g. podCIDR 10.2.0.0/16 and serviceCIDR 10.3.0.0/24",
			"kubernetes.serviceCIDR %s overlaps kubernetes.podCIDR %s", own[1].p, own[0].p)
	}
	var network []block
	if vpc, err := netip.ParsePrefix(v.c.Network.VPCCIDR); err == nil {
		network = append(network, block{"network.vpcCIDR", vpc})
	}
	for i, s := range subnets {
		if sp, err := netip.ParsePrefix(s.CIDR); err == nil {
			network = append(network, block{IndexPath("network.subnets", i) + ".cidr", sp})
		}
	}
	for _, o := range own {
		for _, n := range network {
			if prefixesOverlap(o.p, n.p) {
				v.fatal(o.path, fmt.Sprintf("choose a block outside %s %s: pod and service addresses must not be machines' addresses", n.path, n.p),
					"%s %s overlaps %s %s", o.path, o.p, n.path, n.p)
				break
			}
		}
	}
	if k.ClusterDomain != "" && (len(k.ClusterDomain) > 253 || !dnsSubdomainRe.MatchString(k.ClusterDomain)) {
		v.fatal("kubernetes.clusterDomain", "use a lower-case DNS name such as cluster.local", "kubernetes.clusterDomain %q is not a valid DNS name", k.ClusterDomain)
	}
}
