package config

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"text/template"

	"github.com/kube-aws/kube-aws/core/diag"
)

// InitOptions are the `kube-aws init` flags.
type InitOptions struct {
	ClusterName       string
	Region            string
	AvailabilityZones []string
	S3URI             string
	// KMSKeyARN is optional; it is required as soon as a value is sensitive.
	KMSKeyARN string
	// KeyName is an EC2 key pair for SSH; empty means none.
	KeyName           string
	KubernetesVersion string
	// VPCCIDR of the new VPC; empty means DefaultVPCCIDR.
	VPCCIDR string
	// AvailabilityZones empty means the region's first zone, <region>a.
	// NodePoolName, NodePoolInstanceType, NodePoolMinSize and
	// NodePoolMaxSize describe the first node pool; zero values mean
	// "workers", DefaultInstanceType, 1 and 3.
	NodePoolName         string
	NodePoolInstanceType string
	NodePoolMinSize      int
	NodePoolMaxSize      int
	// DNSName and HostedZoneID of the API endpoint; both optional.
	DNSName      string
	HostedZoneID string
}

// InitTemplate writes a commented cluster.yaml from the `kube-aws init`
// flags. The result is parsed and validated before it is returned, so an
// error (carrying the diagnostics, a diag.List) means a flag was wrong and
// says which. The caller refuses to overwrite an existing file.
func InitTemplate(opts InitOptions) ([]byte, error) {
	if opts.NodePoolName == "" {
		opts.NodePoolName = "workers"
	}
	if opts.NodePoolInstanceType == "" {
		opts.NodePoolInstanceType = DefaultInstanceType
	}
	if opts.NodePoolMinSize == 0 && opts.NodePoolMaxSize == 0 {
		opts.NodePoolMinSize, opts.NodePoolMaxSize = DefaultNodePoolMinSize, DefaultNodePoolMaxSize
	}
	if opts.NodePoolMaxSize < opts.NodePoolMinSize {
		opts.NodePoolMaxSize = opts.NodePoolMinSize
	}
	if opts.KubernetesVersion == "" {
		opts.KubernetesVersion = DefaultKubernetesVersion
	}
	if opts.VPCCIDR == "" {
		opts.VPCCIDR = DefaultVPCCIDR
	}
	if len(opts.AvailabilityZones) == 0 && opts.Region != "" {
		// The region's first zone: always there. Two or more are better,
		// but which letters an account has differs (us-west-1 has b and c
		// in some accounts), so more zones are the user's choice.
		opts.AvailabilityZones = []string{opts.Region + "a"}
	}
	var buf bytes.Buffer
	if err := initTmpl().Execute(&buf, opts); err != nil {
		return nil, fmt.Errorf("writing cluster.yaml: %w", err)
	}
	c, diags := Parse("cluster.yaml", buf.Bytes())
	if !diags.HasFatal() {
		ApplyDefaults(c)
		diags = append(diags, Validate(c, "cluster.yaml")...)
	}
	if fatals := diags.Fatals(); len(fatals) > 0 {
		// Point at the flag, not at a line of a file that was never written.
		for i := range fatals {
			fatals[i].File, fatals[i].Line, fatals[i].Column = "", 0, 0
			if flag := initFlag(fatals[i].Path); flag != "" {
				fatals[i].Hint = strings.TrimSpace("set by " + flag + ": " + fatals[i].Hint)
			}
		}
		return nil, initError{fatals}
	}
	return buf.Bytes(), nil
}

// initFlag names the `kube-aws init` flag that sets a config path.
func initFlag(path string) string {
	for prefix, flag := range map[string]string{
		"clusterName": "--cluster-name", "region": "--region", "availabilityZones": "--availability-zones",
		"s3URI": "--s3-uri", "kmsKeyArn": "--kms-key-arn", "keyName": "--key-name",
		"kubernetesVersion": "--kubernetes-version", "network.vpcCIDR": "--vpc-cidr",
		"nodePools[0].name": "--node-pool-name", "nodePools[0].instanceType": "--node-pool-instance-type",
		"nodePools[0].minSize": "--node-pool-min-size", "nodePools[0].maxSize": "--node-pool-max-size",
		"nodePools[0].desiredCapacity": "--node-pool-min-size", "apiEndpoint.dnsName": "--dns-name",
		"apiEndpoint.hostedZoneId": "--hosted-zone-id",
	} {
		if path == prefix || strings.HasPrefix(path, prefix+"[") || strings.HasPrefix(path, prefix+".") {
			return flag
		}
	}
	return ""
}

// initError explains which flag produced an invalid cluster.yaml.
type initError struct{ diags diag.List }

func (e initError) Error() string {
	var b strings.Builder
	b.WriteString("the flags give an invalid cluster.yaml:")
	for _, d := range e.diags {
		b.WriteString("\n  ")
		b.WriteString(d.Path)
		b.WriteString(": ")
		b.WriteString(d.Message)
		if d.Hint != "" {
			b.WriteString(" (")
			b.WriteString(d.Hint)
			b.WriteString(")")
		}
	}
	return b.String()
}

// Diagnostics returns the problems found in the generated file.
func (e initError) Diagnostics() diag.List { return e.diags }

func firstAZ(azs []string, region string) string {
	if len(azs) > 0 {
		return azs[0]
	}
	return region + "a"
}

// q quotes a string for YAML: a JSON string is valid YAML and never
// misread as a number, boolean or null.
func q(s string) string { return strconv.Quote(s) }

// Parsed on first use, not at start-up of every plugin process.
var initTmpl = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("cluster.yaml").Funcs(template.FuncMap{"q": q, "firstAZ": firstAZ}).Parse(
		`# cluster.yaml: the configuration of one kube-aws cluster.
# Written by ` + "`kube-aws init`" + `. Every key is documented in docs/configuration.md;
# ` + "`kube-aws schema`" + ` prints the JSON Schema for editor completion, and
# ` + "`kube-aws validate`" + ` checks this file without touching AWS.

# clusterName prefixes every CloudFormation stack (<clusterName>-network, ...)
# and is a DNS label: lower-case letters, digits and '-'.
clusterName: {{q .ClusterName}}

# region and availabilityZones: where the cluster runs. Two or more zones let
# the control plane and node pools survive the loss of one.
region: {{q .Region}}
availabilityZones:
{{- range .AvailabilityZones}}
  - {{q .}}
{{- end}}

# s3URI: where rendered templates and assets are uploaded (s3://bucket/prefix).
# The bucket must exist; objects are content-addressed, so re-runs upload only
# what changed.
s3URI: {{q .S3URI}}
{{if .KMSKeyARN}}
# kmsKeyArn encrypts sensitive values (see valueFrom below) for upload; the
# nodes decrypt them at boot. Must be in the cluster's region.
kmsKeyArn: {{q .KMSKeyARN}}
{{else}}
# kmsKeyArn encrypts sensitive values (see valueFrom below) for upload; the
# nodes decrypt them at boot. Required once any value is sensitive.
# kmsKeyArn: "arn:aws:kms:{{.Region}}:123456789012:key/00000000-0000-0000-0000-000000000000"
{{end}}
{{- if .KeyName}}
# keyName: the EC2 key pair installed for SSH.
keyName: {{q .KeyName}}
{{else}}
# keyName: the EC2 key pair installed for SSH; leave out for none.
# keyName: "my-key"
{{end}}
# kubernetesVersion: MAJOR.MINOR.PATCH, without a leading v.
kubernetesVersion: {{q .KubernetesVersion}}

# amiId: the image every machine boots; leave out for the region's default.
# amiId: "ami-0123456789abcdef0"

# network: a new VPC with this CIDR. With no subnets listed, kube-aws carves
# one public and one private subnet per zone (public-<zone>, private-<zone>).
# For an existing VPC set vpcId and list its subnets with id instead of cidr.
network:
  vpcCIDR: {{q .VPCCIDR}}
  # natGateways: one NAT gateway per zone, so private subnets reach the internet.
  natGateways: true
  # subnets:
  #   - name: public-a
  #     availabilityZone: {{q (firstAZ .AvailabilityZones .Region)}}
  #     cidr: "10.0.0.0/20"
  #   - name: private-a
  #     availabilityZone: {{q (firstAZ .AvailabilityZones .Region)}}
  #     cidr: "10.0.128.0/20"
  #     private: true

# controller: the machines running the Kubernetes control plane, in the
# private subnets unless subnets names others.
controller:
  count: 2
  instanceType: "t3.medium"
  rootVolumeSize: 30

# etcd: the members of the etcd cluster; use an odd count (3 or 5).
etcd:
  count: 3
  instanceType: "t3.medium"
  rootVolumeSize: 30

# apiEndpoint: how kubectl reaches the API server. With dnsName and
# hostedZoneId, kube-aws creates a Route 53 record for the load balancer.
apiEndpoint:
{{- if .DNSName}}
  dnsName: {{q .DNSName}}
{{- else}}
  # dnsName: "k8s.example.com"
{{- end}}
{{- if .HostedZoneID}}
  hostedZoneId: {{q .HostedZoneID}}
{{- else}}
  # hostedZoneId: "Z0123456789ABCDEFGHIJ"
{{- end}}
  # private: true puts the load balancer in the private subnets.
  private: false

# nodePools: groups of worker nodes, one auto scaling group (and one
# CloudFormation stack) each. Names are lower-case letters, digits and '-'.
nodePools:
  - name: {{q .NodePoolName}}
    instanceType: {{q .NodePoolInstanceType}}
    minSize: {{.NodePoolMinSize}}
    desiredCapacity: {{.NodePoolMinSize}}
    maxSize: {{.NodePoolMaxSize}}
    # subnets: names from network.subnets; leave out for every private subnet.
    # spot: {maxPrice: "0.05"} runs the pool on spot instances.
    # labels: {"node.kubernetes.io/pool": "workers"}
    # taints: [{key: "dedicated", value: "batch", effect: "NoSchedule"}]
    # plugins: per-pool plugin values, merged over the cluster-level ones.

# tags are added to every stack and the resources that support tags.
# tags:
#   team: "platform"

# plugins: built-in plugins (cloudformation, iam, userdata, apiserver, helm,
# deploy) are on unless enabled: false; contrib and user plugins (in
# plugins/<name>/ beside this file) are off until enabled: true. values are
# checked against the plugin's schema; configFiles (YAML, relative to this
# file) are merged under values. Any value may come from the environment or a
# file and is then sensitive: never written in plain text anywhere. source
# takes a plugin from an OCI registry, pinned in plugins.lock; verify.key
# requires its cosign signature.
#   plugins:
#     dex:
#       enabled: true
#       configFiles: ["dex-values.yaml"]
#       values:
#         issuer: "https://dex.example.com"
#         clientSecret: {valueFrom: {env: DEX_CLIENT_SECRET}}
#     hello:
#       source: oci://ghcr.io/acme/kube-aws-hello:0.1.0
#       verify: {key: keys/acme-cosign.pub}
plugins: {}

# pluginOrder replaces the order file shipped with kube-aws; plugins not
# listed run last, alphabetically. Order decides merge and install order,
# never a conflict.
# pluginOrder: ["cloudformation", "iam", "userdata", "apiserver", "helm", "deploy"]

# capabilities names the preferred provider when several enabled plugins
# provide the same capability.
# capabilities:
#   cni: "calico"
`))
})
