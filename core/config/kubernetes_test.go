package config

import (
	"strings"
	"testing"
)

func TestServiceIPs(t *testing.T) {
	cases := []struct {
		cidr, api, dns, err string
	}{
		{cidr: "10.3.0.0/24", api: "10.3.0.1", dns: "10.3.0.10"},
		{cidr: "172.20.0.0/16", api: "172.20.0.1", dns: "172.20.0.10"},
		{cidr: "10.3.0.0/28", api: "10.3.0.1", dns: "10.3.0.10"},
		{cidr: "10.3.0.0/30", api: "10.3.0.1", err: "kubernetes.serviceCIDR 10.3.0.0/30 has no address number 10"},
		{cidr: "fd00::/108", err: `kubernetes.serviceCIDR "fd00::/108" is not an IPv4 CIDR`},
	}
	for _, tc := range cases {
		k := Kubernetes{ServiceCIDR: tc.cidr}
		api, err := k.APIServiceIP()
		if tc.api != "" && (err != nil || api.String() != tc.api) {
			t.Errorf("%s: API service IP %v, %v; want %s", tc.cidr, api, err, tc.api)
		}
		dns, err := k.DNSServiceIP()
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: DNS service IP error %v, want %q", tc.cidr, err, tc.err)
			}
			continue
		}
		if err != nil || dns.String() != tc.dns {
			t.Errorf("%s: DNS service IP %v, %v; want %s", tc.cidr, dns, err, tc.dns)
		}
	}
}

func TestKubernetesDefaultsAndMirrorDir(t *testing.T) {
	c := &Cluster{}
	ApplyDefaults(c)
	if k := c.Kubernetes; k.PodCIDR != "10.2.0.0/16" || k.ServiceCIDR != "10.3.0.0/24" || k.ClusterDomain != "cluster.local" {
		t.Fatalf("kubernetes defaults: %+v", k)
	}
	for _, tc := range []struct{ mirror, dir, want string }{
		{"", "/c", ""},
		{"artifacts", "/c", "/c/artifacts"},
		{"../shared/artifacts/", "/c", "/shared/artifacts"},
		{"/srv/mirror", "/c", "/srv/mirror"},
	} {
		if got := (Artifacts{Mirror: tc.mirror}).MirrorDir(tc.dir); got != tc.want {
			t.Errorf("MirrorDir(%q, %q) = %q, want %q", tc.mirror, tc.dir, got, tc.want)
		}
	}
}

func TestArchitecture(t *testing.T) {
	for it, want := range map[string]string{
		"t3.medium": "amd64", "m5.large": "amd64", "g4dn.xlarge": "amd64", "p4d.24xlarge": "amd64", "inf1.xlarge": "amd64",
		"u-6tb1.metal": "amd64", "t4g.small": "arm64", "m6gd.large": "arm64", "c7gn.large": "arm64", "r8g.large": "arm64",
		"a1.medium": "arm64", "x2gd.large": "arm64", "im4gn.large": "arm64", "g5g.xlarge": "arm64", "hpc7g.4xlarge": "arm64",
	} {
		if got := Architecture(it); got != want {
			t.Errorf("Architecture(%q) = %s, want %s", it, got, want)
		}
	}
	c := &Cluster{Controller: MachineSet{InstanceType: "t4g.medium"}, Etcd: MachineSet{InstanceType: "t3.small"},
		NodePools: []NodePool{{Name: "a", InstanceType: "m6g.large"}, {Name: "b", InstanceType: "m5.large"}}}
	for _, tc := range []struct{ role, pool, want string }{
		{"controller", "", "arm64"}, {"etcd", "", "amd64"}, {"worker", "", "amd64 arm64"}, {"worker", "b", "amd64"}, {"worker", "zz", ""},
	} {
		if got := strings.Join(c.Architectures(tc.role, tc.pool), " "); got != tc.want {
			t.Errorf("Architectures(%s, %s) = %q, want %q", tc.role, tc.pool, got, tc.want)
		}
	}
}
