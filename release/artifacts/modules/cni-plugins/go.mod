// Scratch module that builds the CNI plugins of the air-gapped artifact
// folder (flannel, bridge, host-local, loopback, portmap) from
// github.com/containernetworking/plugins v0.9.1, the last release that still
// holds the flannel meta plugin.
module github.com/kube-aws/kube-aws/release/artifacts/modules/cni-plugins

// `tool` lines need go 1.24; v0.9.1 itself says go 1.14 and was released
// with go1.15, so the GODEBUG defaults are the oldest Go keeps (go1.20).
go 1.24

godebug default=go1.20

tool (
	github.com/containernetworking/plugins/plugins/ipam/host-local
	github.com/containernetworking/plugins/plugins/main/bridge
	github.com/containernetworking/plugins/plugins/main/loopback
	github.com/containernetworking/plugins/plugins/meta/flannel
	github.com/containernetworking/plugins/plugins/meta/portmap
)

require (
	github.com/Microsoft/go-winio v0.4.11 // indirect
	github.com/Microsoft/hcsshim v0.8.6 // indirect
	github.com/alexflint/go-filemutex v0.0.0-20171022225611-72bdc8eae2ae // indirect
	github.com/buger/jsonparser v0.0.0-20180808090653-f4dd9f5a6b44 // indirect
	github.com/containernetworking/cni v0.8.1 // indirect
	github.com/containernetworking/plugins v0.9.1 // indirect
	github.com/coreos/go-iptables v0.5.0 // indirect
	github.com/j-keck/arping v0.0.0-20160618110441-2cf9dc699c56 // indirect
	github.com/mattn/go-shellwords v1.0.3 // indirect
	github.com/safchain/ethtool v0.0.0-20190326074333-42ed695e3de8 // indirect
	github.com/sirupsen/logrus v1.0.6 // indirect
	github.com/vishvananda/netlink v1.1.1-0.20201029203352-d40f9887b852 // indirect
	github.com/vishvananda/netns v0.0.0-20200728191858-db3c7e526aae // indirect
	golang.org/x/crypto v0.0.0-20200622213623-75b288015ac9 // indirect
	golang.org/x/sys v0.0.0-20201117170446-d9b008d0a637 // indirect
)
