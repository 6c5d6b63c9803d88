package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// clusterWithPools writes a cluster.yaml with n node pools, each with
// labels, a taint, subnets, spot settings and a plugin override: the shape
// of a large real configuration.
func clusterWithPools(n int) string {
	var b strings.Builder
	b.WriteString(`clusterName: big
region: us-east-1
availabilityZones: [us-east-1a, us-east-1b, us-east-1c]
s3URI: s3://kube-aws-bench/clusters/big
kmsKeyArn: arn:aws:kms:us-east-1:123456789012:key/0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b
network:
  vpcCIDR: 10.0.0.0/16
  natGateways: true
apiEndpoint: {dnsName: k8s.example.com, hostedZoneId: Z0123456789ABCDEFGHIJ}
plugins:
  dex:
    enabled: true
    values: {issuer: "https://dex.example.com", replicas: 2, connectors: [{id: github, type: github}]}
nodePools:
`)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, `  - name: pool-%d
    instanceType: m5.large
    minSize: 1
    desiredCapacity: 2
    maxSize: 10
    subnets: [private-us-east-1a, private-us-east-1b]
    spot: {maxPrice: "0.08"}
    labels: {node.kubernetes.io/pool: pool-%d, team: team-%d}
    taints: [{key: dedicated, value: pool-%d, effect: NoSchedule}]
    plugins:
      dex: {values: {replicas: %d}}
`, i, i, i%7, i, i%3+1)
	}
	return b.String()
}

// BenchmarkLoadValidate200Pools: read, parse, default and validate a
// cluster.yaml with 200 node pools (docs/benchmarks.md, "cluster.yaml").
func BenchmarkLoadValidate200Pools(b *testing.B) {
	path := filepath.Join(b.TempDir(), "cluster.yaml")
	if err := os.WriteFile(path, []byte(clusterWithPools(200)), 0o644); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		c, diags, err := Load(path)
		if err != nil {
			b.Fatal(err)
		}
		ApplyDefaults(c)
		diags = append(diags, Validate(c, "")...)
		if len(diags) != 0 {
			b.Fatal(diags.Error())
		}
	}
	if cpu := processCPU() - cpu0; cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/1e6, "cpu-ms/op")
	}
}

// BenchmarkEffectiveValues200Pools: per-pool merge patches for 200 pools.
func BenchmarkEffectiveValues200Pools(b *testing.B) {
	c, diags := Parse("cluster.yaml", []byte(clusterWithPools(200)))
	if len(diags) != 0 {
		b.Fatal(diags.Error())
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, d := EffectiveValues(c, "."); len(d) != 0 {
			b.Fatal(d.Error())
		}
	}
}
