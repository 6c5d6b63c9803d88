package config

import (
	"go/build"
	"net/netip"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/diag"
)

func TestChooseProviders(t *testing.T) {
	cases := []struct {
		name      string
		pref      map[string]string
		providers map[string][]string
		chosen    map[string]string
		sev       diag.Severity
		msg       string
	}{
		{"single provider", nil, map[string][]string{"cni": {"calico"}}, map[string]string{"cni": "calico"}, "", ""},
		{"preference among several", map[string]string{"cni": "cilium"}, map[string][]string{"cni": {"calico", "cilium"}}, map[string]string{"cni": "cilium"}, "", ""},
		{"two and no preference", nil, map[string][]string{"cni": {"calico", "cilium"}}, map[string]string{}, diag.Fatal, "capability cni is provided by 2 enabled plugins: calico, cilium"},
		{"preferred absent, one available", map[string]string{"cni": "weave"}, map[string][]string{"cni": {"calico"}}, map[string]string{"cni": "calico"}, diag.Warning, "preferred plugin weave is not enabled or does not provide it; using calico"},
		{"preferred absent, none available", map[string]string{"cni": "weave"}, nil, map[string]string{}, diag.Fatal, "no enabled plugin provides cni"},
		{"preferred absent, several available", map[string]string{"cni": "weave"}, map[string][]string{"cni": {"calico", "cilium"}}, map[string]string{}, diag.Fatal, "several enabled plugins do: calico, cilium"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, diags := ChooseProviders(tc.pref, tc.providers)
			if len(got) != len(tc.chosen) {
				t.Fatalf("chosen %v, want %v", got, tc.chosen)
			}
			for k, v := range tc.chosen {
				if got[k] != v {
					t.Fatalf("chosen %v, want %v", got, tc.chosen)
				}
			}
			if tc.sev == "" {
				if len(diags) != 0 {
					t.Fatalf("unexpected: %s", diags.Error())
				}
				return
			}
			if len(diags) != 1 || diags[0].Severity != tc.sev || !strings.Contains(diags[0].Message, tc.msg) || diags[0].Path != "capabilities.cni" || diags[0].Hint == "" {
				t.Fatalf("diags: %s", diags.Error())
			}
		})
	}
}

func TestComputeSubnets(t *testing.T) {
	c := &Cluster{AvailabilityZones: []string{"us-east-1a", "us-east-1b"}, Network: Network{VPCCIDR: "10.0.0.0/16"}}
	got, err := ComputeSubnets(c)
	if err != nil {
		t.Fatal(err)
	}
	want := []Subnet{
		{Name: "public-us-east-1a", AvailabilityZone: "us-east-1a", CIDR: "10.0.0.0/20"},
		{Name: "public-us-east-1b", AvailabilityZone: "us-east-1b", CIDR: "10.0.16.0/20"},
		{Name: "private-us-east-1a", AvailabilityZone: "us-east-1a", CIDR: "10.0.128.0/20", Private: true},
		{Name: "private-us-east-1b", AvailabilityZone: "us-east-1b", CIDR: "10.0.144.0/20", Private: true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("subnet %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	// Appending a zone keeps the existing subnets where they were.
	c.AvailabilityZones = append(c.AvailabilityZones, "us-east-1c")
	more, _ := ComputeSubnets(c)
	if more[0] != got[0] || more[1] != got[1] || more[3] != got[2] || more[4] != got[3] {
		t.Fatalf("adding a zone renumbered subnets: %v", more)
	}
	// Eight zones fit a /24 (16 /28s), without overlap, inside the VPC.
	c = &Cluster{Network: Network{VPCCIDR: "192.168.1.0/24"}}
	for _, z := range "abcdefgh" {
		c.AvailabilityZones = append(c.AvailabilityZones, "us-east-1"+string(z))
	}
	all, err := ComputeSubnets(c)
	if err != nil || len(all) != 16 {
		t.Fatalf("8 zones: %v %v", all, err)
	}
	vpc := netip.MustParsePrefix("192.168.1.0/24")
	for i, a := range all {
		pa := netip.MustParsePrefix(a.CIDR)
		if !prefixContains(vpc, pa) {
			t.Fatalf("%s outside the VPC", pa)
		}
		for _, b := range all[i+1:] {
			if prefixesOverlap(pa, netip.MustParsePrefix(b.CIDR)) {
				t.Fatalf("%s overlaps %s", a.CIDR, b.CIDR)
			}
		}
	}
	for _, bad := range []*Cluster{
		{Network: Network{VPCCIDR: "10.0.0.0/25"}, AvailabilityZones: []string{"us-east-1a"}},
		{Network: Network{VPCCIDR: "nope"}},
		{Network: Network{VPCID: "vpc-12345678"}},
		{Network: Network{VPCCIDR: "10.0.0.0/16"}, AvailabilityZones: strings.Split("a,b,c,d,e,f,g,h,i", ",")},
	} {
		if _, err := ComputeSubnets(bad); err == nil {
			t.Errorf("no error for %+v", bad.Network)
		}
	}
	// Listed subnets are returned as they are.
	listed := &Cluster{Network: Network{Subnets: []Subnet{{Name: "x", CIDR: "10.0.0.0/24"}}}}
	if s, _ := ComputeSubnets(listed); len(s) != 1 || s[0].Name != "x" {
		t.Fatalf("listed: %v", s)
	}
}

func TestInitTemplate(t *testing.T) {
	out, err := InitTemplate(InitOptions{
		ClusterName: "demo", Region: "eu-west-1", AvailabilityZones: []string{"eu-west-1a", "eu-west-1b"},
		S3URI: "s3://my-bucket/clusters/demo", KMSKeyARN: "arn:aws:kms:eu-west-1:123456789012:alias/kube-aws",
		KeyName: "ops", NodePoolName: "general", NodePoolInstanceType: "m5.large", NodePoolMinSize: 2, NodePoolMaxSize: 5,
		DNSName: "k8s.example.com", HostedZoneID: "Z0123456789ABCDEFGHIJ",
	})
	if err != nil {
		t.Fatal(err)
	}
	c, diags := loadAll("cluster.yaml", string(out))
	if len(diags) != 0 {
		t.Fatalf("init output does not validate:\n%s\n%s", diags.Error(), out)
	}
	if c.ClusterName != "demo" || c.Region != "eu-west-1" || c.KeyName != "ops" || c.APIEndpoint.HostedZoneID != "Z0123456789ABCDEFGHIJ" ||
		c.NodePools[0].Name != "general" || c.NodePools[0].MinSize != 2 || c.NodePools[0].MaxSize != 5 || c.NodePools[0].InstanceType != "m5.large" {
		t.Fatalf("init output lost a flag: %+v", c)
	}
	// Every section is explained.
	for _, section := range []string{"clusterName", "region", "s3URI", "kmsKeyArn", "keyName", "kubernetesVersion", "network", "controller", "etcd", "apiEndpoint", "nodePools", "plugins", "pluginOrder", "capabilities", "tags"} {
		if !strings.Contains(string(out), "# "+section) {
			t.Errorf("no comment explains %s", section)
		}
	}

	// Minimal flags still give a valid file.
	out, err = InitTemplate(InitOptions{ClusterName: "a", Region: "us-east-1", AvailabilityZones: []string{"us-east-1a"}, S3URI: "s3://bkt"})
	if err != nil {
		t.Fatal(err)
	}
	if _, diags := loadAll("cluster.yaml", string(out)); len(diags) != 0 {
		t.Fatalf("minimal init output does not validate:\n%s", diags.Error())
	}

	// Wrong flags are reported with what to do.
	_, err = InitTemplate(InitOptions{ClusterName: "Bad_Name", Region: "us-east-1", S3URI: "s3:/bkt"})
	if err == nil || !strings.Contains(err.Error(), `clusterName "Bad_Name" is not a valid cluster name`) || !strings.Contains(err.Error(), "set by --s3-uri") {
		t.Fatalf("err = %v", err)
	}
	de, ok := err.(interface{ Diagnostics() diag.List })
	if !ok || len(de.Diagnostics()) != 2 {
		t.Fatalf("error carries no diagnostics: %#v", err)
	}
	for _, d := range de.Diagnostics() {
		if d.File != "" || d.Line != 0 || !strings.HasPrefix(d.Hint, "set by --") {
			t.Fatalf("init diagnostic points into a file or not at a flag: %+v", d)
		}
	}
	// No zones given: the region's first.
	out, err = InitTemplate(InitOptions{ClusterName: "a", Region: "eu-west-2", S3URI: "s3://bkt"})
	if err != nil || !strings.Contains(string(out), `- "eu-west-2a"`) {
		t.Fatalf("default zone: %v\n%s", err, out)
	}
}

func TestPositionFallsBackToAncestor(t *testing.T) {
	c, _ := Parse("c.yaml", []byte("nodePools:\n  - name: a\n"))
	if f, line, col, ok := c.Position("nodePools[0].maxSize"); !ok || f != "c.yaml" || line != 2 || col != 5 {
		t.Fatalf("got %s:%d:%d %v", f, line, col, ok)
	}
	if _, _, _, ok := (&Cluster{}).Position("x"); ok {
		t.Fatal("a Go-built cluster has no positions")
	}
	if got := parentPath(`nodePools[0].labels["a.b/c"]`); got != "nodePools[0].labels" {
		t.Fatalf("parentPath = %q", got)
	}
}

// TestImportsStayLean: every plugin binary links this package, so it may
// import only the standard library, the YAML library, json-patch and core/.
func TestImportsStayLean(t *testing.T) {
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range pkg.Imports {
		first, _, _ := strings.Cut(imp, "/")
		if !strings.Contains(first, ".") {
			continue // standard library
		}
		if imp == "sigs.k8s.io/yaml/goyaml.v3" || imp == "github.com/evanphx/json-patch/v5" || strings.HasPrefix(imp, "github.com/kube-aws/kube-aws/core/") {
			continue
		}
		t.Errorf("core/config imports %s; heavy dependencies belong in a subpackage", imp)
	}
}

// A Cluster built in Go validates too; diagnostics then carry only paths.
func TestValidateGoBuiltCluster(t *testing.T) {
	c := &Cluster{
		ClusterName: "go-built", Region: "us-east-1", AvailabilityZones: []string{"us-east-1a"},
		S3URI: "s3://bucket-1", NodePools: []NodePool{{Name: "a", MaxSize: 2}, {Name: "a"}},
	}
	ApplyDefaults(c)
	diags := Validate(c, "")
	if len(diags) != 2 ||
		!hasDiag(diags, want{path: "nodePools[1].name", msg: `node pool name "a" is used twice`}) ||
		!hasDiag(diags, want{path: "network.natGateways", sev: diag.Warning, msg: "no NAT gateways"}) {
		t.Fatalf("diags:\n%s", diags.Error())
	}
	for _, d := range diags {
		if d.File != "" || d.Line != 0 {
			t.Fatalf("a Go-built cluster has no positions: %+v", d)
		}
	}
	if np := c.NodePools[0]; np.MinSize != 1 || np.DesiredCapacity != 1 || np.MaxSize != 2 {
		t.Fatalf("defaults: %+v", np)
	}
}

func TestLocate(t *testing.T) {
	c, _ := Parse("c.yaml", []byte("capabilities:\n  cni: weave\n"))
	_, diags := ChooseProviders(c.Capabilities, map[string][]string{"cni": {"calico"}})
	diags = c.Locate(diags)
	if len(diags) != 1 || diags[0].File != "c.yaml" || diags[0].Line != 2 || diags[0].Column != 8 {
		t.Fatalf("%+v", diags)
	}
}

// A plugin taken from a registry is on unless turned off: naming where to
// get it is asking for it.
func TestPluginEnabledBySource(t *testing.T) {
	off := false
	c := &Cluster{Plugins: map[string]PluginConfig{
		"hello": {Source: "oci://r/p:1"},
		"quiet": {Source: "oci://r/q:1", Enabled: &off},
		"dex":   {},
	}}
	for name, want := range map[string]bool{"hello": true, "quiet": false, "dex": false, "absent": false} {
		if got := c.PluginEnabled(name, false); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	if !c.PluginEnabled("absent", true) {
		t.Error("a built-in's default is lost")
	}
}
