package config

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// FuzzLoad feeds arbitrary bytes through everything that reads cluster.yaml:
// parse, defaults, validation, subnet layout, effective values and secrets.
// None of it may panic, and every diagnostic must say where it points.
func FuzzLoad(f *testing.F) {
	if b, err := os.ReadFile("testdata/valid.yaml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("clusterName: x\nnodePools: [{name: a, minSize: 1}]\n"))
	f.Add([]byte("a: &a [1, 2]\nb: *a\n<<: {c: 1}\n"))
	f.Add([]byte("plugins: {p: {values: {s: {valueFrom: {env: HOME}}}, configFiles: [x.yaml]}}\n"))
	f.Add([]byte("network: {vpcCIDR: 10.0.0.0/33, subnets: [{name: a, cidr: 10.0.0.0/8}]}\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		c, diags := Parse("cluster.yaml", data)
		if c == nil {
			t.Fatal("Parse returned a nil cluster")
		}
		ApplyDefaults(c)
		diags = append(diags, Validate(c, "")...)
		_, _ = ComputeSubnets(c)
		if bytes.Contains(data, []byte("dev/")) || bytes.Contains(data, []byte("proc/")) || bytes.Contains(data, []byte("sys/")) {
			// Device files (a terminal, a pipe with no writer) can block
			// forever; they are the operator's business, not the fuzzer's.
			data = nil
			c.Plugins, c.NodePools = nil, nil
		}
		vals, vd := EffectiveValues(c, dir)
		diags = append(diags, vd...)
		r, rd := ResolveSecrets(c, vals, nil, dir)
		diags = append(diags, rd...)
		if r == nil {
			t.Fatal("ResolveSecrets returned nil")
		}
		for _, d := range diags {
			if d.Message == "" || (d.Line > 0 && d.File == "") || d.Severity == "" {
				t.Fatalf("malformed diagnostic %+v", d)
			}
			if strings.Contains(d.Message, "kube-aws bug") {
				t.Fatalf("internal error on input %q: %s", data, d)
			}
		}
	})
}
