package player

import (
	"net/netip"
	"testing"
)

func TestHostname(t *testing.T) {
	cases := []struct{ ip, region, want string }{
		{"10.0.1.4", "us-east-1", "ip-10-0-1-4.ec2.internal"},
		{"172.31.200.9", "eu-west-1", "ip-172-31-200-9.eu-west-1.compute.internal"},
	}
	for _, tc := range cases {
		if got := Hostname(netip.MustParseAddr(tc.ip), tc.region); got != tc.want {
			t.Errorf("Hostname(%s, %s) = %s, want %s", tc.ip, tc.region, got, tc.want)
		}
	}
}
