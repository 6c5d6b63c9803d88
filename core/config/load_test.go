package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/diag"
)

func readValid(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile("testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// loadAll parses, defaults and validates, like the CLI does.
func loadAll(file, src string) (*Cluster, diag.List) {
	c, diags := Parse(file, []byte(src))
	ApplyDefaults(c)
	return c, append(diags, Validate(c, file)...)
}

func TestValidFileHasNoDiagnostics(t *testing.T) {
	c, diags := loadAll("cluster.yaml", readValid(t))
	if len(diags) != 0 {
		t.Fatalf("unexpected diagnostics:\n%s", diags.Error())
	}
	if c.ClusterName != "demo" || len(c.NodePools) != 2 || c.NodePools[1].Spot == nil || c.NodePools[1].Spot.MaxPrice != "0.05" {
		t.Fatalf("parsed wrongly: %+v", c)
	}
	if got := c.NodePools[1].Labels["node.kubernetes.io/lifecycle"]; got != "spot" {
		t.Fatalf("label = %q", got)
	}
	if string(c.Plugins["dex"].Values) != `{"issuer":"https://dex.example.com","anything":{"goes":["here",1,true]}}` {
		t.Fatalf("plugin values = %s", c.Plugins["dex"].Values)
	}
	if file, line, col, ok := c.Position("nodePools[1].spot.maxPrice"); !ok || file != "cluster.yaml" || line != 20 || col != 17 {
		t.Fatalf("position of nodePools[1].spot.maxPrice = %s:%d:%d %v", file, line, col, ok)
	}
	if _, line, _, _ := c.Position("plugins.dex.values.anything.goes[1]"); line != 37 {
		t.Fatalf("position inside plugin values: line %d", line)
	}
}

func TestDefaults(t *testing.T) {
	c, diags := loadAll("cluster.yaml", readValid(t))
	if diags.HasFatal() {
		t.Fatal(diags.Error())
	}
	if c.KubernetesVersion != DefaultKubernetesVersion || c.Controller.Count != 2 || c.Etcd.Count != 3 ||
		c.Controller.InstanceType != "t3.medium" || c.Etcd.RootVolumeSize != 30 {
		t.Fatalf("machine defaults not applied: %+v %+v %s", c.Controller, c.Etcd, c.KubernetesVersion)
	}
	g, s := c.NodePools[0], c.NodePools[1]
	if g.MinSize != 1 || g.DesiredCapacity != 1 || g.MaxSize != 4 || g.InstanceType != "t3.large" {
		t.Fatalf("general pool: %+v", g)
	}
	// minSize: 0 was written, so it stays 0 (scale to zero) and is not
	// mistaken for "unset".
	if s.MinSize != 0 || s.DesiredCapacity != 0 || s.MaxSize != 3 || s.InstanceType != DefaultInstanceType {
		t.Fatalf("spot pool: %+v", s)
	}

	// A Cluster built in Go: zero means unset.
	gc := &Cluster{NodePools: []NodePool{{Name: "a", DesiredCapacity: 5}}}
	ApplyDefaults(gc)
	if np := gc.NodePools[0]; np.MinSize != 1 || np.DesiredCapacity != 5 || np.MaxSize != 5 {
		t.Fatalf("go-built pool defaults: %+v", np)
	}
	if gc.Network.VPCCIDR != DefaultVPCCIDR {
		t.Fatalf("vpc cidr default: %q", gc.Network.VPCCIDR)
	}
	// An existing VPC gets no CIDR invented for it.
	ec := &Cluster{Network: Network{VPCID: "vpc-01234567"}}
	ApplyDefaults(ec)
	if ec.Network.VPCCIDR != "" {
		t.Fatalf("existing VPC got a CIDR: %q", ec.Network.VPCCIDR)
	}
}

type want struct {
	path string
	line int
	col  int // 0: don't check
	msg  string
	hint string
	sev  diag.Severity // "" means fatal
}

func TestBadInput(t *testing.T) {
	valid := readValid(t)
	replace := func(old, new string) string {
		if !strings.Contains(valid, old) {
			t.Fatalf("fixture does not contain %q", old)
		}
		return strings.Replace(valid, old, new, 1)
	}
	cases := []struct {
		name string
		src  string
		want []want
	}{
		{"unknown top-level key", replace("clusterName: demo", "clustrName: demo"), []want{
			{path: "clustrName", line: 1, col: 1, msg: `unknown key "clustrName" (did you mean "clusterName"?)`},
		}},
		{"misspelt key next to the real one", replace("clusterName: demo", "clusterName: demo\nclustrName: demo"), []want{
			{path: "clustrName", line: 2, col: 1, msg: `unknown key "clustrName" (did you mean "clusterName"?)`},
		}},
		{"unknown nested key", replace("    maxSize: 4", "    maxsize: 4"), []want{
			{path: "nodePools[0].maxsize", line: 16, col: 5, msg: `unknown key "maxsize" in nodePools[0] (did you mean "maxSize"?)`, hint: "rename it to maxSize"},
		}},
		{"unknown key without a close match lists valid keys", replace("  natGateways: true", "  natGateways: true\n  flux: capacitor"), []want{
			{path: "network.flux", line: 9, col: 3, msg: `unknown key "flux" in network`, hint: "valid keys here: internetGatewayId, natGateways, subnets, vpcCIDR, vpcId"},
		}},
		{"unknown key in a spot block", replace(`      maxPrice: "0.05"`, `      maxPrise: "0.05"`), []want{
			{path: "nodePools[1].spot.maxPrise", line: 20, col: 7, msg: `did you mean "maxPrice"?`},
		}},
		{"wrong type integer", replace("    minSize: 0", "    minSize: three"), []want{
			{path: "nodePools[1].minSize", line: 18, col: 14, msg: `nodePools[1].minSize must be an integer, not the string "three"`},
		}},
		{"wrong type list", replace("availabilityZones: [us-east-1a, us-east-1b]", "availabilityZones: us-east-1a"), []want{
			{path: "availabilityZones", line: 3, col: 20, msg: "availabilityZones must be a list, not a string"},
		}},
		{"number where a string is expected", replace("clusterName: demo", "clusterName: demo\nkubernetesVersion: 1.30"), []want{
			{path: "kubernetesVersion", line: 2, col: 20, msg: "kubernetesVersion must be a string, but 1.30 is read as a number", hint: `quote it and give all three parts, MAJOR.MINOR.PATCH: kubernetesVersion: "1.30.0"`},
		}},
		{"yes is not a boolean", replace("  natGateways: true", "  natGateways: yes"), []want{
			{path: "network.natGateways", line: 8, col: 16, msg: `network.natGateways must be true or false, not the string "yes"`},
		}},
		{"mapping where a struct is expected", replace("apiEndpoint:\n  dnsName: k8s.example.com\n  hostedZoneId: Z0123456789ABCDEFGHIJ", "apiEndpoint: k8s.example.com"), []want{
			{path: "apiEndpoint", line: 9, msg: "apiEndpoint must be a mapping, not a string"},
		}},
		{"duplicate key", replace("region: us-east-1", "region: us-east-1\nregion: us-west-2"), []want{
			{path: "region", line: 3, col: 1, msg: `key "region" appears more than once`},
		}},
		{"yaml syntax error", replace("region: us-east-1", "region: [us-east-1"), []want{
			{msg: "invalid YAML"},
		}},
		{"binary garbage: a NUL byte", replace("region: us-east-1", "region: us-\x00east-1"), []want{
			{line: 2, col: 12, msg: "invalid YAML: control characters are not allowed: character U+0000 is not allowed", hint: "must be UTF-8 text"},
		}},
		{"binary garbage: not UTF-8", replace("region: us-east-1", "region: us-east-1 \xff\xfe"), []want{
			{line: 2, col: 19, msg: "byte 0xFF is not UTF-8", hint: "from line 2 on"},
		}},
		{"binary garbage: an executable appended", valid + "\x7fELF\x02\x01\x01\x00\x00", []want{
			{line: 38, col: 1, msg: "character U+007F is not allowed"},
		}},
		{"two documents", valid + "---\nclusterName: other\n", []want{
			{line: 38, col: 1, msg: "more than one YAML document"},
		}},
		{"missing required fields", "# nothing but a comment\n", []want{
			{path: "clusterName", msg: "clusterName is required"},
			{path: "region", msg: "region is required"},
			{path: "availabilityZones", msg: "availabilityZones is required"},
			{path: "s3URI", msg: "s3URI is required"},
			{path: "nodePools", msg: "at least one node pool"},
		}},
		{"invalid cluster name", replace("clusterName: demo", "clusterName: Demo_1"), []want{
			{path: "clusterName", line: 1, col: 14, msg: `clusterName "Demo_1" is not a valid cluster name`},
		}},
		{"zone outside the region", replace("availabilityZones: [us-east-1a, us-east-1b]", "availabilityZones: [us-east-1a, eu-west-1b]"), []want{
			{path: "availabilityZones[1]", line: 3, col: 33, msg: `availability zone "eu-west-1b" is not a zone of region us-east-1`},
		}},
		{"invalid VPC CIDR", replace("  vpcCIDR: 10.0.0.0/16", "  vpcCIDR: 10.0.0.300/16"), []want{
			{path: "network.vpcCIDR", line: 7, col: 12, msg: `network.vpcCIDR "10.0.0.300/16" is not a valid IPv4 CIDR`},
		}},
		{"CIDR with host bits", replace("  vpcCIDR: 10.0.0.0/16", "  vpcCIDR: 10.0.0.1/16"), []want{
			{path: "network.vpcCIDR", line: 7, msg: "has host bits set", hint: "did you mean 10.0.0.0/16?"},
		}},
		{"overlapping subnets, subnet outside the VPC and unknown zone", replace("  natGateways: true", `  natGateways: true
  subnets:
    - name: a
      availabilityZone: us-east-1a
      cidr: 10.0.0.0/20
    - name: b
      availabilityZone: us-east-1b
      cidr: 10.0.8.0/24
    - name: c
      availabilityZone: us-east-1c
      cidr: 10.1.0.0/24`), []want{
			{path: "network.subnets[1].cidr", line: 15, col: 13, msg: `subnet "b" CIDR 10.0.8.0/24 overlaps subnet "a" (network.subnets[0].cidr 10.0.0.0/20)`},
			{path: "network.subnets[2].availabilityZone", line: 17, msg: "us-east-1c, which is not in availabilityZones"},
			{path: "network.subnets[2].cidr", line: 18, msg: "is outside the VPC CIDR 10.0.0.0/16"},
		}},
		{"existing VPC without subnets", replace("  vpcCIDR: 10.0.0.0/16", "  vpcId: vpc-0123456789abcdef0"), []want{
			{path: "network.subnets", line: 7, msg: "network.subnets must list its subnets"},
		}},
		{"clashing node pool names", replace("  - name: spot", "  - name: general"), []want{
			{path: "nodePools[1].name", line: 17, col: 11, msg: `node pool name "general" is used twice (also at nodePools[0])`},
		}},
		{"invalid node pool name", replace("  - name: spot", "  - name: Spot_Pool"), []want{
			{path: "nodePools[1].name", line: 17, msg: `node pool name "Spot_Pool" is not a valid CloudFormation/Kubernetes name`},
		}},
		{"node pool names that clash as logical IDs", replace("  - name: general", "  - name: sp-ot"), []want{
			{path: "nodePools[1].name", line: 17, msg: `node pool names "spot" and "sp-ot" (nodePools[0]) differ only in '-'`},
		}},
		{"sizes out of order", replace("    maxSize: 4", "    maxSize: 4\n    desiredCapacity: 9"), []want{
			{path: "nodePools[0].desiredCapacity", line: 17, msg: "needs minSize <= desiredCapacity <= maxSize, got 1 <= 9 <= 4"},
		}},
		{"a roll that could replace nothing", replace("    maxSize: 4", "    maxSize: 4\n    rollingUpdate: {maxSurge: 0, maxUnavailable: 0}"), []want{
			{path: "nodePools[0].rollingUpdate", line: 17, msg: "maxSurge and maxUnavailable are both 0", hint: "allow a new machine first (maxSurge: 1)"},
		}},
		{"maxUnavailable above the pool's size", replace("    maxSize: 4", "    maxSize: 4\n    rollingUpdate: {maxUnavailable: 5}"), []want{
			{path: "nodePools[0].rollingUpdate.maxUnavailable", line: 17, msg: "maxUnavailable 5 is above the pool's maxSize 4"},
		}},
		{"negative maxSurge", replace("    maxSize: 4", "    maxSize: 4\n    rollingUpdate: {maxSurge: -1}"), []want{
			{path: "nodePools[0].rollingUpdate.maxSurge", line: 17, msg: "maxSurge is negative"},
		}},
		{"a drain timeout of 0", replace("clusterName: demo", "clusterName: demo\ndrain: {timeout: 0s}"), []want{
			{path: "drain.timeout", line: 2, msg: `drain.timeout "0s" is not a positive duration`, hint: "use a positive duration such as 5m"},
		}},
		{"invalid taint effect", replace("effect: NoSchedule", "effect: NoSchedul"), []want{
			{path: "nodePools[1].taints[0].effect", line: 26, col: 17, msg: `taint effect "NoSchedul" is not valid`, hint: "did you mean NoSchedule?"},
		}},
		{"bad s3 URI", replace("s3URI: s3://kube-aws-demo-assets/clusters/demo", "s3URI: https://kube-aws-demo-assets/clusters/demo"), []want{
			{path: "s3URI", line: 4, col: 8, msg: "is not an S3 URI of the form s3://bucket[/prefix]"},
		}},
		{"bad KMS ARN", replace("kmsKeyArn: arn:aws:kms:us-east-1:123456789012:key/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b", "kmsKeyArn: my-key"), []want{
			{path: "kmsKeyArn", line: 5, msg: `kmsKeyArn "my-key" is not a KMS key ARN`},
		}},
		{"KMS key in another region", replace("arn:aws:kms:us-east-1:", "arn:aws:kms:eu-west-1:"), []want{
			{path: "kmsKeyArn", line: 5, msg: "kmsKeyArn is in region eu-west-1 but the cluster is in us-east-1"},
		}},
		{"unknown subnet reference", replace("    instanceType: t3.large", "    instanceType: t3.large\n    subnets: [private-us-east-1x]"), []want{
			{path: "nodePools[0].subnets[0]", line: 15, msg: `subnet "private-us-east-1x" is not defined`, hint: `did you mean "private-us-east-1a"?`},
		}},
		{"even etcd count is a warning", replace("clusterName: demo", "clusterName: demo\netcd: {count: 2}"), []want{
			{path: "etcd.count", line: 2, sev: diag.Warning, msg: "etcd.count is 2, an even number"},
		}},
		{"plugin source not oci", replace("  dex:\n    enabled: true", "  dex:\n    source: https://ghcr.io/acme/dex:1\n    enabled: true"), []want{
			{path: "plugins.dex.source", line: 33, msg: `plugins.dex.source "https://ghcr.io/acme/dex:1" is not an oci:// reference`, hint: "write oci://REGISTRY/REPOSITORY:TAG, or @sha256:DIGEST to pin a digest"},
		}},
		{"plugin source without a tag", replace("  dex:\n    enabled: true", "  dex:\n    source: oci://ghcr.io/acme/dex\n    enabled: true"), []want{
			{path: "plugins.dex.source", line: 33, msg: `names no tag or digest`},
		}},
		{"plugin source without a repository", replace("  dex:\n    enabled: true", "  dex:\n    source: oci://ghcr.io\n    enabled: true"), []want{
			{path: "plugins.dex.source", line: 33, msg: `names no registry and repository`},
		}},
		{"empty plugin source", replace("  dex:\n    enabled: true", "  dex:\n    source: \"\"\n    enabled: true"), []want{
			{path: "plugins.dex.source", line: 33, msg: `plugins.dex.source is empty`, hint: "or remove source to use the plugin shipped with kube-aws or beside cluster.yaml"},
		}},
		{"plugin source with an upper-case repository", replace("  dex:\n    enabled: true", "  dex:\n    source: oci://ghcr.io/Acme/dex:1\n    enabled: true"), []want{
			{path: "plugins.dex.source", line: 33, msg: `names the repository "Acme/dex", which is not a valid repository name`, hint: "lower-case letters and digits"},
		}},
		{"plugin source with a bad registry", replace("  dex:\n    enabled: true", "  dex:\n    source: oci://ghcr io/acme/dex:1\n    enabled: true"), []want{
			{path: "plugins.dex.source", line: 33, msg: `names the registry "ghcr io", which is not a host name`},
		}},
		{"plugin source with a bad tag", replace("  dex:\n    enabled: true", "  dex:\n    source: oci://ghcr.io/acme/dex:+1\n    enabled: true"), []want{
			{path: "plugins.dex.source", line: 33, msg: `has the tag "+1", which is not a valid tag`},
		}},
		{"plugin source with a bad tag before a digest", replace("  dex:\n    enabled: true", "  dex:\n    source: oci://ghcr.io/acme/dex:-1@sha256:"+strings.Repeat("a", 64)+"\n    enabled: true"), []want{
			{path: "plugins.dex.source", line: 33, msg: `has the tag "-1", which is not a valid tag`},
		}},
		{"plugin source with a short digest", replace("  dex:\n    enabled: true", "  dex:\n    source: oci://ghcr.io/acme/dex@sha256:abc\n    enabled: true"), []want{
			{path: "plugins.dex.source", line: 33, msg: `pins "sha256:abc", which is not a sha256 digest`},
		}},
		{"plugin source with another digest algorithm", replace("  dex:\n    enabled: true", "  dex:\n    source: oci://ghcr.io/acme/dex@sha512:"+strings.Repeat("a", 128)+"\n    enabled: true"), []want{
			{path: "plugins.dex.source", line: 33, msg: `which is not a sha256 digest`},
		}},
		{"plugin from a registry without a key", replace("  dex:\n    enabled: true", "  dex:\n    source: oci://ghcr.io/acme/dex:1\n    enabled: true"), []want{
			{path: "plugins.dex.source", line: 33, sev: diag.Warning, msg: "plugin dex comes from a registry and its signature is not checked: whoever can push to oci://ghcr.io/acme/dex:1 decides what kube-aws runs",
				hint: "set plugins.dex.verify.key to their public key"},
		}},
		{"empty source in a node pool", replace("      dex:\n        values:", "      dex:\n        source: ''\n        values:"), []want{
			{path: "nodePools[1].plugins.dex.source", line: 29, msg: `cannot be set for a node pool`},
		}},
		{"verify without a source", replace("  dex:\n    enabled: true", "  dex:\n    verify: {key: cosign.pub}\n    enabled: true"), []want{
			{path: "plugins.dex.verify", line: 33, msg: `plugins.dex.verify needs plugins.dex.source`},
		}},
		{"verify without a key", replace("  dex:\n    enabled: true", "  dex:\n    source: oci://ghcr.io/acme/dex:1\n    verify: {key: ''}\n    enabled: true"), []want{
			{path: "plugins.dex.verify.key", line: 34, msg: `plugins.dex.verify.key is empty`},
		}},
		{"source in a node pool", replace("      dex:\n        values:", "      dex:\n        source: oci://ghcr.io/acme/dex:1\n        verify: {key: k.pub}\n        values:"), []want{
			{path: "nodePools[1].plugins.dex.source", line: 29, msg: `cannot be set for a node pool`},
			{path: "nodePools[1].plugins.dex.verify", line: 30, msg: `cannot be set for a node pool`},
		}},
		{"pod CIDR overlapping the VPC", replace("clusterName: demo", "clusterName: demo\nkubernetes: {podCIDR: 10.0.128.0/17}"), []want{
			{path: "kubernetes.podCIDR", line: 2, msg: "kubernetes.podCIDR 10.0.128.0/17 overlaps network.vpcCIDR 10.0.0.0/16"},
		}},
		{"service CIDR overlapping the pod CIDR", replace("clusterName: demo", "clusterName: demo\nkubernetes: {serviceCIDR: 10.2.3.0/24}"), []want{
			{path: "kubernetes.serviceCIDR", line: 2, msg: "kubernetes.serviceCIDR 10.2.3.0/24 overlaps kubernetes.podCIDR 10.2.0.0/16"},
		}},
		{"service CIDR too small for the DNS address", replace("clusterName: demo", "clusterName: demo\nkubernetes: {serviceCIDR: 10.3.0.0/29}"), []want{
			{path: "kubernetes.serviceCIDR", line: 2, msg: "kubernetes.serviceCIDR 10.3.0.0/29 is smaller than /28"},
		}},
		{"pod CIDR too small for two nodes", replace("clusterName: demo", "clusterName: demo\nkubernetes: {podCIDR: 10.2.0.0/24}"), []want{
			{path: "kubernetes.podCIDR", line: 2, msg: "leaves room for fewer than two nodes"},
		}},
		{"pod CIDR with host bits", replace("clusterName: demo", "clusterName: demo\nkubernetes: {podCIDR: 10.2.0.1/16}"), []want{
			{path: "kubernetes.podCIDR", line: 2, msg: `kubernetes.podCIDR "10.2.0.1/16" has host bits set`, hint: "did you mean 10.2.0.0/16?"},
		}},
		{"bad cluster domain", replace("clusterName: demo", "clusterName: demo\nkubernetes: {clusterDomain: Cluster_Local}"), []want{
			{path: "kubernetes.clusterDomain", line: 2, msg: `kubernetes.clusterDomain "Cluster_Local" is not a valid DNS name`},
		}},
		{"plugin values must be a mapping", replace("    values:\n      issuer", "    values: [1]\n    x:\n      issuer"), []want{
			{path: "plugins.dex.values", line: 34, msg: "plugins.dex.values must be a mapping"},
			{path: "plugins.dex.x", line: 35, msg: `unknown key "x" in plugins.dex`},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := loadAll("cluster.yaml", tc.src)
			if len(diags) != len(tc.want) {
				t.Errorf("got %d diagnostics, want %d:\n%s", len(diags), len(tc.want), diags.Error())
			}
			for _, w := range tc.want {
				if !hasDiag(diags, w) {
					t.Errorf("missing diagnostic %+v in:\n%s", w, diags.Error())
				}
			}
		})
	}
}

// Well-formed sources are accepted as the registry client would accept
// them; a plugin from a registry with a key, or not enabled, is no warning.
func TestPluginSourcesAccepted(t *testing.T) {
	valid := readValid(t)
	for _, entry := range []string{
		"source: oci://ghcr.io/acme/dex:1.0.0\n    verify: {key: keys/acme.pub}",
		"source: oci://127.0.0.1:5000/acme/kube-aws_dex:v1.0.0-rc.1\n    verify: {key: keys/acme.pub}",
		"source: oci://registry.example.com/a/b/c@sha256:" + strings.Repeat("0f", 32) + "\n    verify: {key: keys/acme.pub}",
		"source: oci://ghcr.io/acme/dex:1@sha256:" + strings.Repeat("0f", 32) + "\n    verify: {key: keys/acme.pub}",
		"source: oci://[::1]:5000/acme/dex__x:_1\n    verify: {key: keys/acme.pub}",
		"source: oci://ghcr.io/acme/dex:1\n    enabled: false",
	} {
		src := strings.Replace(valid, "  dex:\n    enabled: true", "  dex:\n    "+entry, 1)
		if _, diags := loadAll("cluster.yaml", src); len(diags) != 0 {
			t.Errorf("%s:\n%s", entry, diags.Error())
		}
	}
}

// The hint for an unquoted value must lead straight to a value that
// validation accepts, not into a second error: following it is the test.
func TestQuoteHintLeadsToAValidValue(t *testing.T) {
	valid := readValid(t)
	hintValue := regexp.MustCompile(`: (?:kubernetesVersion|maxPrice|[a-z-]+): ("[^"]*")$`)
	for _, tc := range []struct{ name, line string }{
		{"two-part version", "kubernetesVersion: 1.30"},
		{"one-part version", "kubernetesVersion: 1"},
		{"version with a trailing zero YAML would drop", "kubernetesVersion: 1.10"},
		{"exponent", "kubernetesVersion: 1e3"},
		{"boolean", "kubernetesVersion: true"},
		{"a spot price", "    spot: {maxPrice: 0.05}"},
		{"a tag value", "tags: {cost-center: 1234}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(valid, "clusterName: demo\n", "clusterName: demo\n"+tc.line+"\n", 1)
			if strings.HasPrefix(tc.line, "    ") {
				src = strings.Replace(valid, "    instanceType: t3.large\n", "    instanceType: t3.large\n"+tc.line+"\n", 1)
			}
			_, diags := loadAll("cluster.yaml", src)
			if len(diags) != 1 || !strings.Contains(diags[0].Message, "must be a string") {
				t.Fatalf("want one 'must be a string' diagnostic, got:\n%s", diags.Error())
			}
			m := hintValue.FindStringSubmatch(diags[0].Hint)
			if m == nil {
				t.Fatalf("hint %q names no quoted value", diags[0].Hint)
			}
			key, _, _ := strings.Cut(strings.TrimSpace(tc.line), ":")
			fixed := key + ": " + m[1]
			if strings.HasPrefix(tc.line, "    spot") {
				fixed = "    spot: {maxPrice: " + m[1] + "}"
			} else if strings.HasPrefix(tc.line, "tags") {
				fixed = "tags: {cost-center: " + m[1] + "}"
			}
			_, diags = loadAll("cluster.yaml", strings.Replace(src, tc.line, fixed, 1))
			if len(diags) != 0 {
				t.Fatalf("following the hint (%s) still gives:\n%s", fixed, diags.Error())
			}
		})
	}
}

func hasDiag(diags diag.List, w want) bool {
	sev := w.sev
	if sev == "" {
		sev = diag.Fatal
	}
	for _, d := range diags {
		if d.Severity == sev && d.Path == w.path && strings.Contains(d.Message, w.msg) &&
			(w.line == 0 || d.Line == w.line) && (w.col == 0 || d.Column == w.col) &&
			strings.Contains(d.Hint, w.hint) && (w.line == 0 || d.File == "cluster.yaml") {
			return true
		}
	}
	return false
}

func TestEveryErrorAtOnce(t *testing.T) {
	src := `clustrName: x
region: mars-1
availabilityZones: [mars-1a]
s3URI: s3:/nope
nodePools:
  - name: A
    minSize: "2"
  - name: A
`
	_, diags := loadAll("c.yaml", src)
	for _, p := range []string{"clustrName", "region", "s3URI", "nodePools[0].name", "nodePools[0].minSize"} {
		found := false
		for _, d := range diags {
			found = found || d.Path == p
		}
		if !found {
			t.Errorf("no diagnostic at %s in:\n%s", p, diags.Error())
		}
	}
}

func TestLoadReadsAFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cluster.yaml")
	if err := os.WriteFile(path, []byte(readValid(t)), 0o644); err != nil {
		t.Fatal(err)
	}
	c, diags, err := Load(path)
	if err != nil || len(diags) != 0 || c.SourceFile() != path {
		t.Fatalf("Load: %v %v %q", err, diags, c.SourceFile())
	}
	if _, _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "kube-aws init") {
		t.Fatalf("missing file: %v", err)
	}
}

func TestAliasesAndMergeKeys(t *testing.T) {
	src := readValid(t) + `tags: &t
  team: platform
`
	src = strings.Replace(src, "  - name: general\n", "  - &base\n    name: general\n", 1)
	src = strings.Replace(src, "  - name: spot\n", "  - <<: *base\n    name: spot\n", 1)
	c, diags := loadAll("cluster.yaml", src)
	if len(diags) != 0 {
		t.Fatal(diags.Error())
	}
	// The spot pool inherits general's instanceType and sizes through the
	// merge key, and overrides its name and minSize.
	if np := c.NodePools[1]; np.Name != "spot" || np.InstanceType != "t3.large" || np.MaxSize != 4 || np.MinSize != 0 {
		t.Fatalf("merge key: %+v", np)
	}
}

func TestBillionLaughsIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 12; i++ {
		prev := "*a" + itoa(i-1)
		b.WriteString("a" + itoa(i) + ": &a" + itoa(i) + " [" + strings.Repeat(prev+", ", 9) + prev + "]\n")
	}
	b.WriteString("clusterName: x\ntags: {}\nplugins: {p: {values: {v: *a11}}}\n")
	_, diags := Parse("c.yaml", []byte(b.String()))
	found := false
	for _, d := range diags {
		found = found || strings.Contains(d.Message, "expands to more than")
	}
	if !found {
		t.Fatalf("no size diagnostic:\n%s", diags.Error())
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

func TestClosest(t *testing.T) {
	valid := []string{"clusterName", "region", "availabilityZones", "nodePools"}
	for in, want := range map[string]string{"clustername": "clusterName", "regoin": "region", "nodepool": "nodePools", "zzzzzz": "", "availabilityzone": "availabilityZones"} {
		if got := closest(in, valid); got != want {
			t.Errorf("closest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRootMustBeAMapping(t *testing.T) {
	_, diags := loadAll("cluster.yaml", "- a\n- b\n")
	if len(diags) != 1 || diags[0].Line != 1 || !strings.Contains(diags[0].Message, "the configuration must be a mapping, not a list") || !strings.Contains(diags[0].Hint, "kube-aws init") {
		t.Fatalf("%s", diags.Error())
	}
}
