// Package seed writes what an EC2 instance gets from its cloud before its
// first boot, for a local machine: the cloud-init NoCloud seed (user-data,
// meta-data, a static v2 network-config), the resolver an instance's DHCP
// would give it, and a machine-id of its own.
package seed

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strings"

	"sigs.k8s.io/yaml"
)

// Interface is the name of the machine's network interface
// (systemd-nspawn's --network-bridge calls it host0).
const Interface = "host0"

// Instance is what the seed is made from.
type Instance struct {
	ID       string
	Hostname string       // local-hostname, e.g. ip-10-0-1-4
	Address  netip.Prefix // private address with the subnet's length
	Gateway  netip.Addr
	DNS      netip.Addr
	Search   []string // resolver search domains, e.g. ec2.internal
	UserData []byte
}

// Files returns the files to write into the machine's root, by path
// relative to it.
func Files(in Instance) (map[string][]byte, error) {
	if !in.Address.IsValid() || !in.Gateway.IsValid() || !in.DNS.IsValid() {
		return nil, fmt.Errorf("instance %s: address, gateway and DNS server are all needed (got %v, %v, %v)", in.ID, in.Address, in.Gateway, in.DNS)
	}
	meta, err := yaml.Marshal(map[string]string{"instance-id": in.ID, "local-hostname": in.Hostname})
	if err != nil {
		return nil, err
	}
	// Always a static network-config: without one cloud-init falls back
	// to DHCP, which nobody answers, and networking hangs for minutes.
	ns := map[string]any{"addresses": []string{in.DNS.String()}}
	if len(in.Search) > 0 {
		// cloud-init 22.4 fails on an empty search list: omit it.
		ns["search"] = in.Search
	}
	netcfg, err := yaml.Marshal(map[string]any{
		"version": 2,
		"ethernets": map[string]any{
			Interface: map[string]any{
				"match":       map[string]string{"name": Interface},
				"addresses":   []string{in.Address.String()},
				"routes":      []map[string]string{{"to": "0.0.0.0/0", "via": in.Gateway.String()}},
				"nameservers": ns,
			},
		},
	})
	if err != nil {
		return nil, err
	}
	resolv := "nameserver " + in.DNS.String() + "\n"
	if len(in.Search) > 0 {
		resolv += "search " + strings.Join(in.Search, " ") + "\n"
	}
	id := sha256.Sum256([]byte(in.ID))
	return map[string][]byte{
		"var/lib/cloud/seed/nocloud/user-data":      in.UserData,
		"var/lib/cloud/seed/nocloud/meta-data":      meta,
		"var/lib/cloud/seed/nocloud/network-config": netcfg,
		// The run's network is IPv4 only and no router advertises IPv6:
		// waiting for one keeps systemd-networkd "configuring", and
		// network-online.target (with cloud-init after it) waits about
		// 13 s for nothing. (cloud-init 22.4 does not render v2
		// accept-ra for networkd.) A drop-in for the file cloud-init
		// renders for the interface.
		"etc/systemd/network/10-cloud-init-" + Interface + ".network.d/ipv4-only.conf": []byte("[Network]\nIPv6AcceptRA=no\nLinkLocalAddressing=no\n"),
		"etc/resolv.conf": []byte(resolv),
		"etc/machine-id":  []byte(hex.EncodeToString(id[:16]) + "\n"),
	}, nil
}
