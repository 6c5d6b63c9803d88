package config

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
)

var (
	dnsLabelRe      = lazyRE(`^[a-z]([a-z0-9-]*[a-z0-9])?$`)
	regionRe        = lazyRE(`^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-[0-9]+$`)
	versionRe       = lazyRE(`^[0-9]+\.[0-9]+\.[0-9]+$`)
	instanceTypeRe  = lazyRE(`^[a-z][a-z0-9-]*\.[a-z0-9]+$`)
	amiRe           = lazyRE(`^ami-([0-9a-f]{8}|[0-9a-f]{17})$`)
	vpcIDRe         = lazyRE(`^vpc-([0-9a-f]{8}|[0-9a-f]{17})$`)
	subnetIDRe      = lazyRE(`^subnet-([0-9a-f]{8}|[0-9a-f]{17})$`)
	igwIDRe         = lazyRE(`^igw-([0-9a-f]{8}|[0-9a-f]{17})$`)
	hostedZoneRe    = lazyRE(`^Z[A-Z0-9]{1,31}$`)
	bucketRe        = lazyRE(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)
	kmsARNRe        = lazyRE(`^arn:(aws[a-z-]*):kms:([a-z0-9-]+):([0-9]{12}):(key/[0-9a-fA-F-]{1,64}|key/mrk-[0-9a-f]{32}|alias/[A-Za-z0-9/_-]{1,250})$`)
	priceRe         = lazyRE(`^[0-9]+(\.[0-9]+)?$`)
	pluginNameRe    = lazyRE(`^[a-z0-9]([a-z0-9_-]*[a-z0-9])?$`)
	labelNameRe     = lazyRE(`^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$`)
	labelValueRe    = lazyRE(`^([A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?)?$`)
	dnsSubdomainRe  = lazyRE(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$`)
	validTaintEffct = []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}
)

// MaxStackNameLength is CloudFormation's limit on a stack name. Stacks are
// named <clusterName>-<stack>, and the longest built-in stack is
// nodepool-<pool name>.
const MaxStackNameLength = 128

// validator collects diagnostics with their positions.
type validator struct {
	c     *Cluster
	file  string
	diags diag.List
}

func (v *validator) add(sev diag.Severity, path, hint, format string, args ...any) {
	if v.c.src.reported(path) {
		return
	}
	d := diag.Diagnostic{Severity: sev, Path: path, Message: fmt.Sprintf(format, args...), Hint: hint}
	if _, line, col, ok := v.c.Position(path); ok {
		d = d.InFile(v.file, line, col)
	} else if v.file != "" {
		d = d.InFile(v.file, 0, 0)
	}
	v.diags = append(v.diags, d)
}

func (v *validator) fatal(path, hint, format string, args ...any) {
	v.add(diag.Fatal, path, hint, format, args...)
}

func (v *validator) warn(path, hint, format string, args ...any) {
	v.add(diag.Warning, path, hint, format, args...)
}

func (v *validator) required(path, value, hint string) bool {
	if strings.TrimSpace(value) == "" {
		v.fatal(path, hint, "%s is required", path)
		return false
	}
	return true
}

// Validate checks a cluster after ApplyDefaults and reports every problem at
// once, each with its config path and, when the cluster was parsed from a
// file, file:line:column. file overrides the file name in diagnostics; ""
// means the file the cluster was parsed from.
func Validate(c *Cluster, file string) diag.List {
	if c == nil {
		return diag.List{diag.Fatalf("no cluster configuration").WithHint("run `kube-aws init` to write cluster.yaml")}
	}
	if file == "" {
		file = c.SourceFile()
	}
	if c.src != nil && c.src.broken {
		// The file could not be read as YAML; that diagnostic says it all.
		return nil
	}
	v := &validator{c: c, file: file}
	v.cluster()
	subnets := v.network()
	v.kubernetes(subnets)
	v.machines("controller", c.Controller, subnets, 1)
	v.machines("etcd", c.Etcd, subnets, 1)
	if c.Etcd.Count > 0 && c.Etcd.Count%2 == 0 {
		v.warn("etcd.count", "use an odd number (3 or 5): an even member count tolerates no more failures than one fewer member",
			"etcd.count is %d, an even number", c.Etcd.Count)
	}
	v.apiEndpoint(subnets)
	v.nodePools(subnets)
	v.plugins()
	return v.diags
}

func (v *validator) cluster() {
	c := v.c
	if v.required("clusterName", c.ClusterName, "name the cluster, e.g. clusterName: my-cluster (lower-case letters, digits and '-')") {
		if len(c.ClusterName) > 63 || !dnsLabelRe.MatchString(c.ClusterName) {
			v.fatal("clusterName", "use 1-63 lower-case letters, digits and '-', starting with a letter and not ending with '-': it prefixes every stack name and is a DNS label",
				"clusterName %q is not a valid cluster name", c.ClusterName)
		}
	}
	if v.required("region", c.Region, "set the AWS region, e.g. region: us-east-1") && !regionRe.MatchString(c.Region) {
		v.fatal("region", "use an AWS region code such as us-east-1 or eu-west-2", "region %q is not an AWS region code", c.Region)
	}
	if len(c.AvailabilityZones) == 0 {
		v.fatal("availabilityZones", "list at least one zone of the region, e.g. availabilityZones: [us-east-1a, us-east-1b]; two or more survive the loss of one",
			"availabilityZones is required")
	}
	seen := map[string]int{}
	for i, az := range c.AvailabilityZones {
		p := IndexPath("availabilityZones", i)
		if j, dup := seen[az]; dup {
			v.fatal(p, "list each zone once", "availability zone %q is listed twice (also at availabilityZones[%d])", az, j)
			continue
		}
		seen[az] = i
		if c.Region != "" && (!strings.HasPrefix(az, c.Region) || len(az) != len(c.Region)+1 || az[len(az)-1] < 'a' || az[len(az)-1] > 'z') {
			v.fatal(p, fmt.Sprintf("use a zone of region %s, such as %sa", c.Region, c.Region),
				"availability zone %q is not a zone of region %s", az, c.Region)
		}
	}
	if c.KubernetesVersion != "" && !versionRe.MatchString(c.KubernetesVersion) {
		v.fatal("kubernetesVersion", fmt.Sprintf("write the full version without a leading v, e.g. kubernetesVersion: %q", DefaultKubernetesVersion),
			"kubernetesVersion %q is not a MAJOR.MINOR.PATCH version", c.KubernetesVersion)
	}
	if c.Drain.Timeout != "" {
		if d, err := time.ParseDuration(c.Drain.Timeout); err != nil || d <= 0 {
			v.fatal("drain.timeout", "use a positive duration such as 5m or 90s: a node needs time to move its pods",
				"drain.timeout %q is not a positive duration", c.Drain.Timeout)
		}
	}
	if c.AMI != "" && !amiRe.MatchString(c.AMI) {
		v.fatal("amiId", "use an image id such as ami-0123456789abcdef0, or leave amiId out for the region's default", "amiId %q is not an AMI id", c.AMI)
	}
	if len(c.KeyName) > 255 {
		v.fatal("keyName", "use the name of an existing EC2 key pair", "keyName is longer than 255 characters")
	}
	if v.required("s3URI", c.S3URI, "set where assets are uploaded, e.g. s3URI: s3://my-bucket/clusters/my-cluster") {
		v.s3URI()
	}
	if c.KMSKeyARN != "" {
		m := kmsARNRe.FindStringSubmatch(c.KMSKeyARN)
		switch {
		case m == nil:
			v.fatal("kmsKeyArn", "use a key or alias ARN: arn:aws:kms:us-east-1:123456789012:key/<key-id> or arn:aws:kms:us-east-1:123456789012:alias/<name>",
				"kmsKeyArn %q is not a KMS key ARN", c.KMSKeyARN)
		case c.Region != "" && m[2] != c.Region:
			v.fatal("kmsKeyArn", fmt.Sprintf("use a key in %s: nodes decrypt secrets with a key of their own region", c.Region),
				"kmsKeyArn is in region %s but the cluster is in %s", m[2], c.Region)
		}
	}
	keys := sortedKeys(c.Tags)
	for _, k := range keys {
		p := JoinPath("tags", k)
		switch {
		case k == "" || len(k) > 127:
			v.fatal(p, "use a tag key of 1-127 characters", "tag key %q must be 1-127 characters", k)
		case strings.HasPrefix(strings.ToLower(k), "aws:"):
			v.fatal(p, "choose a key without the aws: prefix, which AWS reserves", "tag key %q uses the reserved aws: prefix", k)
		}
		if len(c.Tags[k]) > 255 {
			v.fatal(p, "shorten the value to 255 characters", "tag %q has a value longer than 255 characters", k)
		}
	}
}

func (v *validator) s3URI() {
	u := v.c.S3URI
	rest, ok := strings.CutPrefix(u, "s3://")
	bucket, _, _ := strings.Cut(rest, "/")
	if !ok || !bucketRe.MatchString(bucket) || strings.Contains(bucket, "..") || strings.Contains(rest, "//") {
		v.fatal("s3URI", "use s3://<bucket>[/<prefix>], e.g. s3://my-bucket/clusters/my-cluster; bucket names are 3-63 lower-case letters, digits, '.' and '-'",
			"s3URI %q is not an S3 URI of the form s3://bucket[/prefix]", u)
	}
}

// network validates the VPC and subnets and returns the subnets the rest of
// the validation references (computed ones for a new VPC with none listed).
func (v *validator) network() []Subnet {
	c := v.c
	n := c.Network
	var vpc netip.Prefix
	vpcOK := false
	if n.VPCID != "" {
		if !vpcIDRe.MatchString(n.VPCID) {
			v.fatal("network.vpcId", "use the id of an existing VPC, e.g. vpc-0123456789abcdef0, or leave vpcId out to create a VPC", "network.vpcId %q is not a VPC id", n.VPCID)
		}
		if len(n.Subnets) == 0 {
			v.fatal("network.subnets", "list the existing subnets to use, each with name, availabilityZone and id",
				"network.vpcId names an existing VPC, so network.subnets must list its subnets")
		}
	} else if n.InternetGatewayID != "" {
		v.fatal("network.internetGatewayId", "set network.vpcId too, or remove internetGatewayId: a new VPC gets its own internet gateway",
			"network.internetGatewayId is only for an existing VPC")
	}
	if n.InternetGatewayID != "" && !igwIDRe.MatchString(n.InternetGatewayID) {
		v.fatal("network.internetGatewayId", "use an id such as igw-0123456789abcdef0", "network.internetGatewayId %q is not an internet gateway id", n.InternetGatewayID)
	}
	if n.VPCCIDR != "" {
		vpc, vpcOK = v.cidr("network.vpcCIDR", n.VPCCIDR)
		if vpcOK && (vpc.Bits() < 16 || vpc.Bits() > 28) {
			v.fatal("network.vpcCIDR", "AWS allows VPC blocks from /16 to /28; 10.0.0.0/16 is usual", "network.vpcCIDR %s has prefix length /%d", vpc, vpc.Bits())
			vpcOK = false
		}
	} else if n.VPCID == "" {
		v.fatal("network.vpcCIDR", "set network.vpcCIDR (e.g. 10.0.0.0/16) for a new VPC, or network.vpcId for an existing one", "network.vpcCIDR is required for a new VPC")
	}

	if len(n.Subnets) == 0 {
		if n.VPCID != "" || !vpcOK {
			return nil
		}
		subnets, err := ComputeSubnets(c)
		if err != nil {
			v.fatal("network.vpcCIDR", "list network.subnets yourself, or use a larger VPC CIDR / fewer availability zones", "%v", err)
			return nil
		}
		v.natWarning(subnets)
		return subnets
	}

	azs := map[string]bool{}
	for _, az := range c.AvailabilityZones {
		azs[az] = true
	}
	names := map[string]int{}
	type parsed struct {
		i int
		p netip.Prefix
	}
	var prefixes []parsed
	for i, s := range n.Subnets {
		p := IndexPath("network.subnets", i)
		if s.Name == "" {
			v.fatal(p+".name", "name the subnet; node pools and machine sets refer to subnets by name", "%s.name is required", p)
		} else if j, dup := names[s.Name]; dup {
			v.fatal(p+".name", "give every subnet its own name", "subnet name %q is used twice (also at network.subnets[%d])", s.Name, j)
		} else {
			names[s.Name] = i
			if len(s.Name) > 63 || !dnsLabelRe.MatchString(s.Name) {
				v.fatal(p+".name", "use lower-case letters, digits and '-', starting with a letter", "subnet name %q is not valid", s.Name)
			}
		}
		if s.AvailabilityZone == "" {
			v.fatal(p+".availabilityZone", "set the subnet's availability zone, one of availabilityZones", "%s.availabilityZone is required", p)
		} else if !azs[s.AvailabilityZone] {
			v.fatal(p+".availabilityZone", fmt.Sprintf("use one of availabilityZones (%s), or add %s to it", strings.Join(c.AvailabilityZones, ", "), s.AvailabilityZone),
				"subnet %q is in availability zone %s, which is not in availabilityZones", s.Name, s.AvailabilityZone)
		}
		switch {
		case s.ID != "" && s.CIDR != "":
			v.fatal(p, "give id for an existing subnet or cidr for a new one, not both", "subnet %q has both id and cidr", s.Name)
		case n.VPCID != "" && s.ID == "":
			v.fatal(p+".id", "an existing VPC's subnets are referenced by id, e.g. id: subnet-0123456789abcdef0", "subnet %q needs an id because network.vpcId is set", s.Name)
		case n.VPCID == "" && s.ID != "":
			v.fatal(p+".id", "set network.vpcId to use existing subnets, or replace id with a cidr inside network.vpcCIDR", "subnet %q has an id but the VPC is new (network.vpcId is not set)", s.Name)
		case n.VPCID == "" && s.CIDR == "":
			v.fatal(p+".cidr", "give the subnet a block inside network.vpcCIDR, e.g. cidr: 10.0.0.0/20", "subnet %q needs a cidr", s.Name)
		}
		if s.ID != "" && !subnetIDRe.MatchString(s.ID) {
			v.fatal(p+".id", "use an id such as subnet-0123456789abcdef0", "subnet id %q is not a subnet id", s.ID)
		}
		if s.CIDR == "" {
			continue
		}
		sp, ok := v.cidr(p+".cidr", s.CIDR)
		if !ok {
			continue
		}
		if sp.Bits() > 28 {
			v.fatal(p+".cidr", "AWS subnets are /28 or larger", "subnet %q CIDR %s is smaller than /28", s.Name, sp)
		}
		if vpcOK && !prefixContains(vpc, sp) {
			v.fatal(p+".cidr", fmt.Sprintf("choose a block inside network.vpcCIDR %s", vpc), "subnet %q CIDR %s is outside the VPC CIDR %s", s.Name, sp, vpc)
		}
		for _, o := range prefixes {
			if prefixesOverlap(o.p, sp) {
				v.fatal(p+".cidr", "give every subnet its own, non-overlapping block",
					"subnet %q CIDR %s overlaps subnet %q (network.subnets[%d].cidr %s)", s.Name, sp, n.Subnets[o.i].Name, o.i, o.p)
			}
		}
		prefixes = append(prefixes, parsed{i, sp})
	}
	if n.VPCID == "" {
		v.natWarning(n.Subnets)
	}
	return n.Subnets
}

// natWarning warns when a new VPC has private subnets but no NAT gateways:
// machines there could not pull images or reach AWS APIs.
func (v *validator) natWarning(subnets []Subnet) {
	if v.c.Network.NATGateways {
		return
	}
	for _, s := range subnets {
		if s.Private {
			v.warn("network.natGateways", "set network.natGateways: true, or use only public subnets",
				"the new VPC has private subnets (%s) but no NAT gateways, so machines in them cannot reach S3 or the internet to boot", s.Name)
			return
		}
	}
}

// cidr parses an IPv4 CIDR, reporting why it is not one.
func (v *validator) cidr(path, s string) (netip.Prefix, bool) {
	p, err := netip.ParsePrefix(s)
	if err != nil || !p.Addr().Is4() {
		v.fatal(path, "write an IPv4 block as address/prefix-length, e.g. 10.0.0.0/16", "%s %q is not a valid IPv4 CIDR", path, s)
		return netip.Prefix{}, false
	}
	if p.Masked() != p {
		v.fatal(path, fmt.Sprintf("did you mean %s? the bits after the prefix length must be zero", p.Masked()), "%s %q has host bits set", path, s)
		return netip.Prefix{}, false
	}
	return p, true
}

func (v *validator) subnetRefs(path string, refs []string, subnets []Subnet) {
	byName := map[string]Subnet{}
	var names []string
	for _, s := range subnets {
		byName[s.Name] = s
		names = append(names, s.Name)
	}
	for i, r := range refs {
		p := IndexPath(path, i)
		if _, ok := byName[r]; !ok {
			hint := "use the name of a subnet in network.subnets"
			if len(names) > 0 {
				hint = "use one of: " + strings.Join(names, ", ")
			}
			if s := closest(r, names); s != "" {
				hint = fmt.Sprintf("did you mean %q? ", s) + hint
			}
			v.fatal(p, hint, "subnet %q is not defined", r)
		}
	}
}

func (v *validator) machines(path string, m MachineSet, subnets []Subnet, minCount int) {
	if m.Count < minCount {
		v.fatal(path+".count", fmt.Sprintf("run at least %d; 2 controllers or 3 etcd members survive losing one", minCount), "%s.count is %d", path, m.Count)
	}
	if m.InstanceType != "" && !instanceTypeRe.MatchString(m.InstanceType) {
		v.fatal(path+".instanceType", "use an EC2 instance type such as t3.medium", "%s.instanceType %q is not an EC2 instance type", path, m.InstanceType)
	}
	if m.RootVolumeSize < 0 || (m.RootVolumeSize > 0 && m.RootVolumeSize < 8) || m.RootVolumeSize > 16384 {
		v.fatal(path+".rootVolumeSize", "use a size in GiB between 8 and 16384", "%s.rootVolumeSize %d is out of range", path, m.RootVolumeSize)
	}
	v.subnetRefs(path+".subnets", m.Subnets, subnets)
}

func (v *validator) apiEndpoint(subnets []Subnet) {
	e := v.c.APIEndpoint
	if e.DNSName != "" && (len(e.DNSName) > 253 || !dnsSubdomainRe.MatchString(strings.TrimSuffix(e.DNSName, "."))) {
		v.fatal("apiEndpoint.dnsName", "use a lower-case DNS name such as k8s.example.com", "apiEndpoint.dnsName %q is not a valid DNS name", e.DNSName)
	}
	if e.HostedZoneID != "" {
		if e.DNSName == "" {
			v.fatal("apiEndpoint.hostedZoneId", "set apiEndpoint.dnsName: the hosted zone gets a record for that name", "apiEndpoint.hostedZoneId needs apiEndpoint.dnsName")
		}
		if !hostedZoneRe.MatchString(e.HostedZoneID) {
			v.fatal("apiEndpoint.hostedZoneId", "use a Route 53 hosted zone id such as Z0123456789ABCDEFGHIJ", "apiEndpoint.hostedZoneId %q is not a hosted zone id", e.HostedZoneID)
		}
	}
	if e.Private && len(subnets) > 0 {
		hasPrivate := false
		for _, s := range subnets {
			hasPrivate = hasPrivate || s.Private
		}
		if !hasPrivate {
			v.fatal("apiEndpoint.private", "add a private subnet to network.subnets, or set apiEndpoint.private: false", "apiEndpoint.private needs a private subnet, and network.subnets has none")
		}
	}
}

// rollingUpdate checks a pool's roll bounds: a roll must be able to move,
// and cannot take away more machines than the pool has.
func (v *validator) rollingUpdate(p string, np NodePool) {
	if np.RollingUpdate == nil {
		return
	}
	ru := np.RollingUpdate.WithDefaults()
	surge, unavailable := *ru.MaxSurge, *ru.MaxUnavailable
	if surge < 0 {
		v.fatal(p+".maxSurge", "use 0 or more", "%s.maxSurge is negative (%d)", p, surge)
	}
	if unavailable < 0 {
		v.fatal(p+".maxUnavailable", "use 0 or more", "%s.maxUnavailable is negative (%d)", p, unavailable)
	}
	if surge == 0 && unavailable == 0 {
		v.fatal(p, "allow a new machine first (maxSurge: 1) or an old one out of service (maxUnavailable: 1)",
			"%s.maxSurge and maxUnavailable are both 0: a roll could replace no machine", p)
	}
	if unavailable > np.MaxSize && np.MaxSize > 0 {
		v.fatal(p+".maxUnavailable", fmt.Sprintf("use at most the pool's maxSize (%d)", np.MaxSize),
			"%s.maxUnavailable %d is above the pool's maxSize %d", p, unavailable, np.MaxSize)
	}
}

func (v *validator) nodePools(subnets []Subnet) {
	c := v.c
	if len(c.NodePools) == 0 {
		v.fatal("nodePools", "add a node pool: workloads run on node pools, not on controllers", "nodePools needs at least one node pool")
	}
	poolNames := map[string]int{}
	logical := map[string]int{}
	for i, np := range c.NodePools {
		p := IndexPath("nodePools", i)
		switch {
		case np.Name == "":
			v.fatal(p+".name", "name the pool with lower-case letters, digits and '-', e.g. name: workers", "%s.name is required", p)
		case len(np.Name) > 63 || !dnsLabelRe.MatchString(np.Name):
			v.fatal(p+".name", "use 1-63 lower-case letters, digits and '-', starting with a letter and not ending with '-': the name becomes part of CloudFormation logical IDs, stack names and Kubernetes labels",
				"node pool name %q is not a valid CloudFormation/Kubernetes name", np.Name)
		default:
			if j, dup := poolNames[np.Name]; dup {
				v.fatal(p+".name", "give every node pool its own name", "node pool name %q is used twice (also at nodePools[%d])", np.Name, j)
				break
			}
			poolNames[np.Name] = i
			ln := strings.ReplaceAll(np.Name, "-", "")
			if j, dup := logical[ln]; dup {
				v.fatal(p+".name", "rename one of the pools: CloudFormation logical IDs allow only letters and digits, so names that differ only in '-' collide",
					"node pool names %q and %q (nodePools[%d]) differ only in '-' and clash as CloudFormation logical IDs", np.Name, c.NodePools[j].Name, j)
				break
			}
			logical[ln] = i
			if stack := names.StackName(c.ClusterName, names.NodePoolStack(np.Name)); c.ClusterName != "" && len(stack) > MaxStackNameLength {
				v.fatal(p+".name", "shorten the cluster or pool name", "stack name %s is longer than CloudFormation's %d characters", stack, MaxStackNameLength)
			}
		}
		if np.InstanceType != "" && !instanceTypeRe.MatchString(np.InstanceType) {
			v.fatal(p+".instanceType", "use an EC2 instance type such as t3.medium", "%s.instanceType %q is not an EC2 instance type", p, np.InstanceType)
		}
		if np.MinSize < 0 {
			v.fatal(p+".minSize", "use 0 or more", "%s.minSize is negative (%d)", p, np.MinSize)
		}
		if np.MaxSize < 1 {
			v.fatal(p+".maxSize", "use 1 or more", "%s.maxSize must be at least 1, not %d", p, np.MaxSize)
		}
		if np.MinSize > np.DesiredCapacity || np.DesiredCapacity > np.MaxSize {
			v.fatal(p+".desiredCapacity", "make minSize <= desiredCapacity <= maxSize",
				"%s needs minSize <= desiredCapacity <= maxSize, got %d <= %d <= %d", p, np.MinSize, np.DesiredCapacity, np.MaxSize)
		}
		v.subnetRefs(p+".subnets", np.Subnets, subnets)
		v.rollingUpdate(p+".rollingUpdate", np)
		if np.Spot != nil && np.Spot.MaxPrice != "" {
			if f, err := strconv.ParseFloat(np.Spot.MaxPrice, 64); !priceRe.MatchString(np.Spot.MaxPrice) || err != nil || f <= 0 {
				v.fatal(p+".spot.maxPrice", "use a price in USD per instance hour, e.g. maxPrice: \"0.05\", or leave it out to pay up to the on-demand price",
					"%s.spot.maxPrice %q is not a positive price", p, np.Spot.MaxPrice)
			}
		}
		for _, k := range sortedKeys(np.Labels) {
			lp := JoinPath(p+".labels", k)
			if msg := labelKeyProblem(k); msg != "" {
				v.fatal(lp, "a label key is [prefix/]name: name up to 63 letters, digits, '-', '_', '.', starting and ending alphanumeric; prefix a DNS subdomain", "label key %q %s", k, msg)
			}
			if val := np.Labels[k]; len(val) > 63 || !labelValueRe.MatchString(val) {
				v.fatal(lp, "a label value is up to 63 letters, digits, '-', '_', '.', starting and ending alphanumeric", "label %q has an invalid value %q", k, val)
			}
		}
		taints := map[string]int{}
		for j, t := range np.Taints {
			tp := IndexPath(p+".taints", j)
			if t.Key == "" {
				v.fatal(tp+".key", "give the taint a key, e.g. key: dedicated", "%s.key is required", tp)
			} else if msg := labelKeyProblem(t.Key); msg != "" {
				v.fatal(tp+".key", "a taint key follows the label key rules: [prefix/]name", "taint key %q %s", t.Key, msg)
			}
			if t.Value != "" && (len(t.Value) > 63 || !labelValueRe.MatchString(t.Value)) {
				v.fatal(tp+".value", "a taint value follows the label value rules", "taint %q has an invalid value %q", t.Key, t.Value)
			}
			if !contains(validTaintEffct, t.Effect) {
				hint := "use one of " + strings.Join(validTaintEffct, ", ")
				if s := closest(t.Effect, validTaintEffct); s != "" {
					hint = fmt.Sprintf("did you mean %s? ", s) + hint
				}
				v.fatal(tp+".effect", hint, "taint effect %q is not valid", t.Effect)
			}
			id := t.Key + ":" + t.Effect
			if k, dup := taints[id]; dup {
				v.fatal(tp, "remove the duplicate taint", "taint %s is listed twice (also at %s.taints[%d])", id, p, k)
			}
			taints[id] = j
		}
		v.pluginConfigs(p+".plugins", np.Plugins)
	}
}

func labelKeyProblem(k string) string {
	prefix, name, hasPrefix := strings.Cut(k, "/")
	if !hasPrefix {
		name, prefix = prefix, ""
	}
	if hasPrefix && (prefix == "" || len(prefix) > 253 || !dnsSubdomainRe.MatchString(prefix)) {
		return "has an invalid prefix (must be a lower-case DNS subdomain)"
	}
	if name == "" || len(name) > 63 || !labelNameRe.MatchString(name) {
		return "has an invalid name"
	}
	return ""
}

func (v *validator) plugins() {
	c := v.c
	v.pluginConfigs("plugins", c.Plugins)
	seen := map[string]int{}
	for i, name := range c.PluginOrder {
		p := IndexPath("pluginOrder", i)
		if j, dup := seen[name]; dup {
			v.fatal(p, "list each plugin once", "plugin %q is listed twice in pluginOrder (also at pluginOrder[%d])", name, j)
		}
		seen[name] = i
		if !pluginNameRe.MatchString(name) {
			v.fatal(p, "plugin names are lower-case letters, digits, '-' and '_'", "pluginOrder names %q, which is not a valid plugin name", name)
		}
	}
	for _, k := range sortedKeys(c.Capabilities) {
		p := JoinPath("capabilities", k)
		if c.Capabilities[k] == "" {
			v.fatal(p, "name the plugin that should provide "+k+", or remove the entry", "capability %q names no plugin", k)
		} else if !pluginNameRe.MatchString(c.Capabilities[k]) {
			v.fatal(p, "plugin names are lower-case letters, digits, '-' and '_'", "capability %q names %q, which is not a valid plugin name", k, c.Capabilities[k])
		}
	}
}

func (v *validator) pluginConfigs(path string, plugins map[string]PluginConfig) {
	for _, name := range sortedKeys(plugins) {
		pc := plugins[name]
		p := JoinPath(path, name)
		if !pluginNameRe.MatchString(name) {
			v.fatal(p, "plugin names are lower-case letters, digits, '-' and '_'", "%q is not a valid plugin name", name)
		}
		if len(pc.Values) > 0 {
			var obj any
			if err := json.Unmarshal(pc.Values, &obj); err == nil {
				if _, isMap := obj.(map[string]any); !isMap && obj != nil {
					v.fatal(p+".values", "write the values as a mapping of keys to values", "%s.values must be a mapping", p)
				}
			}
		}
		for i, f := range pc.ConfigFiles {
			if strings.TrimSpace(f) == "" {
				v.fatal(IndexPath(p+".configFiles", i), "give a path relative to cluster.yaml", "%s.configFiles[%d] is empty", p, i)
			}
		}
		v.pluginSource(path != "plugins", p, pc)
	}
}

// pluginSource checks plugins.NAME.source and verify. The reference is
// parsed fully where the registry is contacted (plugins/oci); here only its
// form, so that a typo is reported with its line before anything runs.
func (v *validator) pluginSource(inPool bool, p string, pc PluginConfig) {
	if inPool {
		if pc.Source != "" || v.c.isSet(p+".source", true) {
			v.fatal(p+".source", "set it under the cluster-level plugins: a plugin comes from one place for the whole cluster", "%s.source cannot be set for a node pool", p)
		}
		if pc.Verify != nil {
			v.fatal(p+".verify", "set it under the cluster-level plugins, beside source", "%s.verify cannot be set for a node pool", p)
		}
		return
	}
	switch {
	case pc.Source == "" && v.c.isSet(p+".source", true):
		// An empty source would quietly mean "no source": the shipped or
		// user plugin of that name, not the registry's.
		v.fatal(p+".source", "write oci://REGISTRY/REPOSITORY:TAG, or remove source to use the plugin shipped with kube-aws or beside cluster.yaml", "%s.source is empty", p)
	case pc.Source != "":
		if msg, hint := CheckPluginSource(pc.Source); msg != "" {
			v.fatal(p+".source", hint, "%s.source %q %s", p, pc.Source, msg)
		} else if pc.Verify == nil && (pc.Enabled == nil || *pc.Enabled) {
			v.warn(p+".source", fmt.Sprintf("have its author sign it (docs/plugins.md, section 12.4) and set %s.verify.key to their public key", p),
				"plugin %s comes from a registry and its signature is not checked: whoever can push to %s decides what kube-aws runs when it is installed or upgraded", lastElem(p), pc.Source)
		}
	}
	if pc.Verify != nil {
		switch {
		case pc.Source == "":
			v.fatal(p+".verify", "add "+p+".source (a plugin from a registry), or remove verify: plugins shipped with kube-aws or beside cluster.yaml are checked by plugins.lock", "%s.verify needs %s.source", p, p)
		case strings.TrimSpace(pc.Verify.Key) == "":
			v.fatal(p+".verify.key", "give the public key's path relative to cluster.yaml (cosign.pub)", "%s.verify.key is empty", p)
		}
	}
}

var (
	// The forms the registry client (oras-go) accepts, which kube-aws
	// itself does not link: a mistake is reported here, at its line,
	// before anything is installed.
	ociRepositoryRe = lazyRE(`^[a-z0-9]+(?:(?:[._]|__|[-]*)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|[-]*)[a-z0-9]+)*)*$`)
	ociTagRe        = lazyRE(`^[\w][\w.-]{0,127}$`)
	sha256DigestRe  = lazyRE(`^sha256:[a-f0-9]{64}$`)
)

// CheckPluginSource checks plugins.NAME.source, an
// oci://REGISTRY/REPOSITORY:TAG (or @DIGEST, or :TAG@DIGEST) reference, as
// the registry client in the kube-aws-oci helper parses it, and returns
// what is wrong ("" when nothing) and what to write instead. Every mistake
// in a source is thus a configuration error at its line (exit 2), never a
// failure of the helper later.
func CheckPluginSource(src string) (msg, hint string) {
	const form = "write oci://REGISTRY/REPOSITORY:TAG, e.g. oci://ghcr.io/acme/kube-aws-hello:0.1.0, or @sha256:DIGEST to pin a digest"
	rest, ok := strings.CutPrefix(src, "oci://")
	if !ok {
		return "is not an oci:// reference", "write oci://REGISTRY/REPOSITORY:TAG, or @sha256:DIGEST to pin a digest"
	}
	host, path, ok := strings.Cut(rest, "/")
	if !ok || host == "" || path == "" {
		return "names no registry and repository", form
	}
	if u, err := url.ParseRequestURI("oci://" + host); err != nil || u.Host != host {
		return fmt.Sprintf("names the registry %q, which is not a host name or address with an optional :PORT", host), form
	}
	repo, tag, dgst := path, "", ""
	if i := strings.Index(path, "@"); i >= 0 {
		repo, dgst = path[:i], path[i+1:]
		if j := strings.Index(repo, ":"); j >= 0 {
			repo, tag = repo[:j], repo[j+1:]
			if !ociTagRe.MatchString(tag) {
				return fmt.Sprintf("has the tag %q, which is not a valid tag", tag), "a tag is up to 128 letters, digits, '_', '.' and '-', and starts with a letter, digit or '_'"
			}
		}
	} else if j := strings.Index(path, ":"); j >= 0 {
		repo, tag = path[:j], path[j+1:]
	}
	if !ociRepositoryRe.MatchString(repo) {
		return fmt.Sprintf("names the repository %q, which is not a valid repository name", repo), "a repository is lower-case letters and digits, path components separated by '/' and words by '.', '_', '__' or '-'"
	}
	switch {
	case dgst != "":
		if !sha256DigestRe.MatchString(dgst) {
			return fmt.Sprintf("pins %q, which is not a sha256 digest", dgst), "pin @sha256: and the 64 lower-case hex digits of the digest `kube-aws plugins push` printed"
		}
	case tag == "":
		return "names no tag or digest", "add the version to install, :TAG, or pin a digest, @sha256:DIGEST"
	case !ociTagRe.MatchString(tag):
		return fmt.Sprintf("has the tag %q, which is not a valid tag", tag), "a tag is up to 128 letters, digits, '_', '.' and '-', and starts with a letter, digit or '_'"
	}
	return "", ""
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// quoteHint is the hint for a string value that YAML reads as a number or a
// boolean. Quoting is the fix, but quoting alone must not lead into the next
// error: kubernetesVersion: 1.30 needs all three parts of MAJOR.MINOR.PATCH
// as well, so that hint gives a value validation accepts.
func quoteHint(path, value string) string {
	if path == "kubernetesVersion" && !versionRe.MatchString(value) {
		return fmt.Sprintf("quote it and give all three parts, MAJOR.MINOR.PATCH: kubernetesVersion: %q", fullVersion(value))
	}
	return fmt.Sprintf("quote it: %s: %q", lastElem(path), value)
}

// fullVersion pads a number such as 1.30 to MAJOR.MINOR.PATCH (1.30.0); a
// value that is not dot-separated digits gets the default version instead.
func fullVersion(v string) string {
	parts := strings.Split(v, ".")
	if len(parts) > 3 {
		return DefaultKubernetesVersion
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return DefaultKubernetesVersion
		}
	}
	for len(parts) < 3 {
		parts = append(parts, "0")
	}
	return strings.Join(parts, ".")
}
