package seed

import (
	"net/netip"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestFiles(t *testing.T) {
	in := Instance{ID: "i-1", Hostname: "ip-10-0-1-4.ec2.internal", Address: netip.MustParsePrefix("10.0.1.4/24"),
		Gateway: netip.MustParseAddr("10.0.1.1"), DNS: netip.MustParseAddr("10.0.0.2"), UserData: []byte("#!/bin/sh\n")}
	cases := []struct {
		name   string
		search []string
		file   string
		want   []string // substrings
		absent []string
	}{
		{"meta-data", nil, "var/lib/cloud/seed/nocloud/meta-data", []string{"instance-id: i-1", "local-hostname: ip-10-0-1-4.ec2.internal"}, nil},
		{"static network, no search list (cloud-init 22.4 fails on an empty one)", nil, "var/lib/cloud/seed/nocloud/network-config",
			[]string{"version: 2", "host0:", "- 10.0.1.4/24", "via: 10.0.1.1", "to: 0.0.0.0/0", "- 10.0.0.2"}, []string{"search", "dhcp"}},
		{"search list", []string{"ec2.internal"}, "var/lib/cloud/seed/nocloud/network-config", []string{"search:", "- ec2.internal"}, nil},
		{"resolver", []string{"ec2.internal"}, "etc/resolv.conf", []string{"nameserver 10.0.0.2\n", "search ec2.internal\n"}, nil},
		{"user data as given", nil, "var/lib/cloud/seed/nocloud/user-data", []string{"#!/bin/sh\n"}, nil},
		{"no IPv6 router wait", nil, "etc/systemd/network/10-cloud-init-host0.network.d/ipv4-only.conf", []string{"IPv6AcceptRA=no"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := in
			in.Search = tc.search
			fs, err := Files(in)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := fs[tc.file]
			if !ok {
				t.Fatalf("no %s in %v", tc.file, keys(fs))
			}
			for _, w := range tc.want {
				if !strings.Contains(string(got), w) {
					t.Errorf("%s lacks %q:\n%s", tc.file, w, got)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(string(got), a) {
					t.Errorf("%s has %q:\n%s", tc.file, a, got)
				}
			}
			if strings.HasSuffix(tc.file, "-data") || strings.HasSuffix(tc.file, "config") {
				var v any
				if err := yaml.Unmarshal(got, &v); err != nil && tc.file != "var/lib/cloud/seed/nocloud/user-data" {
					t.Errorf("%s is not YAML: %v", tc.file, err)
				}
			}
		})
	}
}

func TestMachineIDIsStablePerInstance(t *testing.T) {
	base := Instance{Address: netip.MustParsePrefix("10.0.1.4/24"), Gateway: netip.MustParseAddr("10.0.1.1"), DNS: netip.MustParseAddr("10.0.0.2")}
	a, b, c := base, base, base
	a.ID, b.ID, c.ID = "i-1", "i-1", "i-2"
	fa, _ := Files(a)
	fb, _ := Files(b)
	fc, _ := Files(c)
	if string(fa["etc/machine-id"]) != string(fb["etc/machine-id"]) || string(fa["etc/machine-id"]) == string(fc["etc/machine-id"]) {
		t.Fatalf("machine ids %q %q %q", fa["etc/machine-id"], fb["etc/machine-id"], fc["etc/machine-id"])
	}
	if len(strings.TrimSpace(string(fa["etc/machine-id"]))) != 32 {
		t.Fatalf("machine id %q is not 32 hex digits", fa["etc/machine-id"])
	}
}

func TestMissingNetworkIsAnError(t *testing.T) {
	if _, err := Files(Instance{ID: "i-1"}); err == nil || !strings.Contains(err.Error(), "i-1") {
		t.Fatalf("Files without addresses = %v, want an error naming the instance", err)
	}
}

func keys(m map[string][]byte) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
