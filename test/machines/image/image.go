// Package image says what the local machines' root filesystem holds: the
// Debian packages of the machine image contract (systemd, cloud-init,
// containerd, runc, iptables, curl, e2fsprogs...) and the few files a
// systemd-nspawn machine needs to behave like an EC2 instance. rootfs builds
// and caches it.
package image

import (
	"fmt"
	"os"

	"github.com/kube-aws/kube-aws/test/machines/rootfs"
)

// Packages is the package list of the machine image (mmdebstrap --include).
var Packages = []string{
	"systemd", "systemd-sysv", "dbus", "udev", "cloud-init",
	"containerd", "runc", "containernetworking-plugins",
	"iproute2", "iptables", "conntrack", "socat", "ca-certificates", "openssl",
	"procps", "kmod", "util-linux", "mount", "netbase", "curl", "ethtool",
	"ebtables", "nftables", "e2fsprogs",
}

// SetupUnit is the name of the baked unit that makes a nspawn machine able
// to run containers.
const SetupUnit = "nspawn-machine-setup.service"

// setupScript runs before anything else in the machine:
//   - nspawn mounts the cgroup hierarchies read-only; kubelet and runc need
//     to create cgroups, so remount them read-write (the machine has its own
//     cgroup subtree on the host, see nspawn);
//   - the kubelet writes kernel/panic, kernel/panic_on_oops and
//     vm/overcommit_memory: bind-mount per-machine files over them so it
//     never changes the host's settings;
//   - containers need /dev/kmsg and forwarding.
const setupScript = `#!/bin/sh
# Makes a systemd-nspawn machine able to run containers (see kube-aws
# test/machines/image). Runs once, before sysinit.target.
set -u
mount -o remount,rw /sys/fs/cgroup 2>/dev/null || true
# Each hierarchy is a mount of the host's: remounting it would change the
# host's superblock (refused: busy); a bind remount changes this mount only.
for d in /sys/fs/cgroup/*; do
	[ -d "$d" ] && mount -o remount,bind,rw "$d" 2>/dev/null
done
mkdir -p /run/nspawn-machine/sys
for k in kernel/panic kernel/panic_on_oops vm/overcommit_memory; do
	f=/run/nspawn-machine/sys/$(echo "$k" | tr / _)
	cat "/proc/sys/$k" > "$f" 2>/dev/null || echo 0 > "$f"
	mount --bind "$f" "/proc/sys/$k"
done
[ -e /dev/kmsg ] || ln -s /dev/console /dev/kmsg
echo 1 > /proc/sys/net/ipv4/ip_forward 2>/dev/null || true
exit 0
`

const setupUnit = `[Unit]
Description=Make this systemd-nspawn machine able to run containers
DefaultDependencies=no
Before=sysinit.target containerd.service cloud-init-local.service systemd-journald.service
ConditionVirtualization=container

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/local/lib/nspawn-machine/setup

[Install]
WantedBy=sysinit.target
`

// cloudCfg makes cloud-init read only the NoCloud seed the harness writes
// (no probing of cloud metadata services) and skip the locale module,
// which fails in a root without locales. The locale is the string "false":
// the module skips any false-looking value, but cloud-init's schema wants
// a string, and a boolean made every machine's console say "Invalid
// cloud-config provided".
const cloudCfg = `# Written by kube-aws's local machine image.
datasource_list: [ NoCloud, None ]
locale: "false"
`

// Spec returns the root filesystem spec of a machine whose AWS calls go to
// endpoint (AWS_ENDPOINT_URL, the standard SDK setting), set for every
// systemd unit and every login shell. sources is the apt sources file
// mmdebstrap installs from ("" for its default mirror).
func Spec(endpoint, sources string) rootfs.Spec {
	return rootfs.Spec{
		Suite:    "bookworm",
		Variant:  "minbase",
		Packages: Packages,
		Sources:  sources,
		Files: []rootfs.File{
			{Path: "usr/local/lib/nspawn-machine/setup", Mode: 0o755, Content: []byte(setupScript)},
			{Path: "etc/systemd/system/" + SetupUnit, Mode: 0o644, Content: []byte(setupUnit)},
			{Path: "etc/systemd/system/sysinit.target.wants/" + SetupUnit, Symlink: "/etc/systemd/system/" + SetupUnit},
			{Path: "etc/cloud/cloud.cfg.d/90-local-machine.cfg", Mode: 0o644, Content: []byte(cloudCfg)},
			{Path: "etc/systemd/system.conf.d/aws-endpoint.conf", Mode: 0o644,
				Content: []byte(fmt.Sprintf("[Manager]\nDefaultEnvironment=AWS_ENDPOINT_URL=%s\n", endpoint))},
			{Path: "etc/environment", Mode: 0o644, Content: []byte(fmt.Sprintf("AWS_ENDPOINT_URL=%s\n", endpoint))},
			// A persistent journal, so the harness can read it from the
			// machine's overlay after the machine is gone.
			{Path: "var/log/journal/.keep", Mode: 0o644},
		},
		Hooks: []string{
			// The network comes from cloud-init's network-config, which
			// it renders for systemd-networkd in this image.
			`chroot "$1" systemctl enable systemd-networkd.service`,
			// mmdebstrap leaves the host's resolver; the machine's comes
			// from its network (the harness writes it per machine, as an
			// instance's DHCP would).
			`rm -f "$1/etc/resolv.conf"`,
		},
	}
}

// HostSources returns the host's Debian apt sources file when there is one,
// so machines install from the archive the host uses.
func HostSources() string {
	for _, p := range []string{"/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"} {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}
