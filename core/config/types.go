package config

import (
	"encoding/json"
	"time"
)

// Cluster is cluster.yaml. JSON tags are the YAML keys: Parse walks the YAML
// node tree (sigs.k8s.io/yaml/goyaml.v3) alongside these types, checks every
// key and type, and decodes the resulting JSON with encoding/json. New fields
// need a description in docs.go (a test enforces it).
type Cluster struct {
	ClusterName       string   `json:"clusterName"`
	Region            string   `json:"region"`
	AvailabilityZones []string `json:"availabilityZones"`
	// KeyName is the EC2 key pair for SSH; empty means none.
	KeyName string `json:"keyName,omitempty"`
	// AMI is the image every machine boots; empty means the default for the region.
	AMI               string `json:"amiId,omitempty"`
	KubernetesVersion string `json:"kubernetesVersion"`
	// Kubernetes holds the cluster's in-cluster networks and DNS domain.
	Kubernetes Kubernetes `json:"kubernetes"`
	// Artifacts says where machines get the binaries and images they install.
	Artifacts   Artifacts   `json:"artifacts,omitempty"`
	Network     Network     `json:"network"`
	Controller  MachineSet  `json:"controller"`
	Etcd        MachineSet  `json:"etcd"`
	APIEndpoint APIEndpoint `json:"apiEndpoint"`
	NodePools   []NodePool  `json:"nodePools"`
	// Drain says how a node is drained before its machine goes.
	Drain Drain `json:"drain,omitempty"`
	// S3URI is where assets and templates are uploaded: s3://bucket/prefix.
	S3URI string `json:"s3URI"`
	// KMSKeyARN encrypts sensitive values for upload; decrypted on the node.
	KMSKeyARN string `json:"kmsKeyArn,omitempty"`
	// Tags are added to every stack.
	Tags map[string]string `json:"tags,omitempty"`
	// Plugins configures plugins by name.
	Plugins map[string]PluginConfig `json:"plugins,omitempty"`
	// PluginOrder overrides the order file shipped with kube-aws.
	PluginOrder []string `json:"pluginOrder,omitempty"`
	// Capabilities names the preferred provider of a capability: cni: calico.
	Capabilities map[string]string `json:"capabilities,omitempty"`

	// src remembers where every value came from when the cluster was
	// parsed from a file; nil for a Cluster built in Go.
	src *source
}

// Kubernetes is what every component of the cluster must agree on: the pod
// and service networks and the DNS domain of services.
type Kubernetes struct {
	// PodCIDR is the block pods get their addresses from (the CNI's network).
	PodCIDR string `json:"podCIDR"`
	// ServiceCIDR is the block of service cluster IPs
	// (--service-cluster-ip-range); its first address is the API's service,
	// its tenth the cluster DNS.
	ServiceCIDR string `json:"serviceCIDR"`
	// ClusterDomain is the DNS domain of services (cluster.local).
	ClusterDomain string `json:"clusterDomain"`
}

// Artifacts says where machines get the binaries and images they install.
type Artifacts struct {
	// Mirror is a folder (relative to cluster.yaml) laid out as
	// <name>/<version>/linux-<arch>/<file>: air-gapped mode, every artifact
	// is uploaded from it to the cluster's bucket and machines fetch it
	// there. Empty: machines download from upstream.
	Mirror string `json:"mirror,omitempty"`
}

// Network is a new VPC (VPCCIDR, optional Subnets with CIDRs) or an existing
// one (VPCID and Subnets with IDs).
type Network struct {
	VPCID   string `json:"vpcId,omitempty"`
	VPCCIDR string `json:"vpcCIDR,omitempty"`
	// Subnets; when empty for a new VPC, one public and one private subnet
	// per availability zone are computed from VPCCIDR.
	Subnets []Subnet `json:"subnets,omitempty"`
	// NATGateways adds one NAT gateway per availability zone for private subnets.
	NATGateways bool `json:"natGateways,omitempty"`
	// InternetGatewayID of an existing VPC.
	InternetGatewayID string `json:"internetGatewayId,omitempty"`
}

// Subnet is one subnet of the cluster's VPC.
type Subnet struct {
	Name             string `json:"name"`
	AvailabilityZone string `json:"availabilityZone"`
	// CIDR for a new subnet; ID for an existing one.
	CIDR    string `json:"cidr,omitempty"`
	ID      string `json:"id,omitempty"`
	Private bool   `json:"private,omitempty"`
}

// MachineSet is the controllers or the etcd members.
type MachineSet struct {
	Count          int    `json:"count"`
	InstanceType   string `json:"instanceType"`
	RootVolumeSize int    `json:"rootVolumeSize,omitempty"`
	// Subnets names subnets from network.subnets; empty means every private
	// subnet (every public one when there are no private subnets).
	Subnets []string `json:"subnets,omitempty"`
}

// APIEndpoint is how clients reach the API server.
type APIEndpoint struct {
	// DNSName clients use; empty means the load balancer's own name.
	DNSName string `json:"dnsName,omitempty"`
	// HostedZoneID, when set, gets a Route 53 record for DNSName.
	HostedZoneID string `json:"hostedZoneId,omitempty"`
	// Private puts the load balancer in private subnets.
	Private bool `json:"private,omitempty"`
}

// NodePool is a group of worker nodes in one auto scaling group.
type NodePool struct {
	Name            string `json:"name"`
	InstanceType    string `json:"instanceType"`
	MinSize         int    `json:"minSize"`
	MaxSize         int    `json:"maxSize"`
	DesiredCapacity int    `json:"desiredCapacity"`
	// Subnets names subnets from network.subnets; empty means the defaults
	// of MachineSet.Subnets.
	Subnets []string          `json:"subnets,omitempty"`
	Spot    *Spot             `json:"spot,omitempty"`
	Labels  map[string]string `json:"labels,omitempty"`
	Taints  []Taint           `json:"taints,omitempty"`
	// Plugins overrides plugin settings for this pool: values are merged
	// over the cluster-level values (JSON merge patch).
	Plugins map[string]PluginConfig `json:"plugins,omitempty"`
	// RollingUpdate says how many machines a roll of this pool adds and
	// takes away at once; nil means the defaults (RollingUpdate.WithDefaults).
	RollingUpdate *RollingUpdate `json:"rollingUpdate,omitempty"`
}

// RollingUpdate bounds a roll of a node pool: kube-aws replaces the pool's
// out-of-date machines in waves of at most MaxSurge new machines above the
// desired capacity (where maxSize leaves room) and MaxUnavailable old ones
// drained and out of service.
type RollingUpdate struct {
	MaxSurge       *int `json:"maxSurge,omitempty"`
	MaxUnavailable *int `json:"maxUnavailable,omitempty"`
}

// Defaults of RollingUpdate: one new machine at a time, none of the old
// ones taken away before its stand-in is Ready. A pool whose maxSize leaves
// no room for a new machine, and that does not set maxUnavailable, is
// replaced one unavailable machine at a time.
const (
	DefaultMaxSurge       = 1
	DefaultMaxUnavailable = 0
)

// WithDefaults is r with every unset field at its default; r may be nil.
func (r *RollingUpdate) WithDefaults() RollingUpdate {
	out := RollingUpdate{}
	if r != nil {
		out = *r
	}
	if out.MaxSurge == nil {
		n := DefaultMaxSurge
		out.MaxSurge = &n
	}
	if out.MaxUnavailable == nil {
		n := DefaultMaxUnavailable
		out.MaxUnavailable = &n
	}
	return out
}

// Drain is how every node is drained before its machine goes, whoever
// ends it (a roll, a scale-in, a spot interruption): cordoned, then its pods
// evicted through the Eviction API within Timeout.
type Drain struct {
	// Timeout is a Go duration (5m); DefaultDrainTimeout when empty.
	Timeout string `json:"timeout,omitempty"`
	// Force deletes the pods a PodDisruptionBudget still protects when
	// Timeout expires, instead of stopping the roll at that node.
	Force bool `json:"force,omitempty"`
}

// TimeoutDuration is Timeout parsed; DefaultDrainTimeout when it does not
// parse (validation refuses that).
func (d Drain) TimeoutDuration() time.Duration {
	t, err := time.ParseDuration(d.Timeout)
	if err != nil || t <= 0 {
		t, _ = time.ParseDuration(DefaultDrainTimeout)
	}
	return t
}

// Spot makes a node pool use spot instances.
type Spot struct {
	// MaxPrice per instance hour in USD; empty means the on-demand price.
	MaxPrice string `json:"maxPrice,omitempty"`
}

// Taint is a Kubernetes taint on a node pool's nodes.
type Taint struct {
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
}

// PluginConfig enables and configures one plugin.
type PluginConfig struct {
	// Enabled; nil means the plugin's default (on for built-ins, off otherwise).
	Enabled *bool `json:"enabled,omitempty"`
	// Values are checked against the plugin's values schema. Any value may be
	// {"valueFrom": {"env": NAME}} or {"valueFrom": {"file": PATH}}.
	Values json.RawMessage `json:"values,omitempty"`
	// ConfigFiles are plugin config files, relative to cluster.yaml, whose
	// YAML content is merged under Values in order.
	ConfigFiles []string `json:"configFiles,omitempty"`
	// Source takes the plugin from an OCI registry,
	// oci://REGISTRY/REPOSITORY:TAG or oci://REGISTRY/REPOSITORY@sha256:DIGEST
	// (docs/plugins.md, section 12). It replaces a shipped plugin of the same
	// name, and turns the plugin on unless Enabled is false. Cluster level only.
	Source string `json:"source,omitempty"`
	// Verify requires the artifact Source names to carry a cosign signature.
	Verify *PluginVerify `json:"verify,omitempty"`
}

// PluginVerify says how a plugin from a registry must be signed.
type PluginVerify struct {
	// Key is the PEM public key (cosign.pub), relative to cluster.yaml,
	// that a `cosign sign --key` signature over the artifact's digest must
	// verify with.
	Key string `json:"key"`
}
