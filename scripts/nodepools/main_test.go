package main

import (
	"bytes"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func TestRun(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		n     int
		names []string
		err   string
	}{
		{"copies the first pool", "clusterName: demo\nnodePools:\n- name: general\n  instanceType: t3.large\n- name: spot\n", 3,
			[]string{"pool000", "pool001", "pool002"}, ""},
		{"no pool to copy", "clusterName: demo\n", 2, nil, "no nodePools"},
		{"not YAML", "clusterName: [\n", 2, nil, "reading the cluster.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(strings.NewReader(tt.in), &out, tt.n)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var doc struct {
				ClusterName string `json:"clusterName"`
				NodePools   []struct {
					Name         string `json:"name"`
					InstanceType string `json:"instanceType"`
				} `json:"nodePools"`
			}
			if err := yaml.UnmarshalStrict(out.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			if doc.ClusterName != "demo" || len(doc.NodePools) != len(tt.names) {
				t.Fatalf("got %+v", doc)
			}
			for i, p := range doc.NodePools {
				if p.Name != tt.names[i] || p.InstanceType != "t3.large" {
					t.Errorf("pool %d: %+v", i, p)
				}
			}
		})
	}
}
