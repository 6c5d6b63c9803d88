package stacks

import (
	"fmt"
	"testing"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/names"
)

// withPools is the minimal cluster with n node pools.
func withPools(n int) *config.Cluster {
	c := minimal()
	c.NodePools = nil
	for i := 0; i < n; i++ {
		c.NodePools = append(c.NodePools, config.NodePool{Name: fmt.Sprintf("pool-%d", i), InstanceType: "m6i.large",
			MinSize: 1, MaxSize: 3, DesiredCapacity: 1, Labels: map[string]string{"pool": fmt.Sprint(i)}})
	}
	return c
}

// BenchmarkInitialiseRender measures both stages of the plugin for 10 and
// 100 node pools: the work grows linearly with the pools (one stack each).
func BenchmarkInitialiseRender(b *testing.B) {
	for _, n := range []int{10, 100} {
		c := withPools(n)
		b.Run(fmt.Sprintf("pools=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				set, diags := Initialise(c, Values{})
				if diags.HasFatal() {
					b.Fatal(diags)
				}
				// What the merge adds: the iam plugin renders stack iam late.
				set.Stacks = append(set.Stacks, construct.Stack{Name: names.StackIAM, Plugin: "iam", Renderer: "iam"})
				if _, _, diags := Render(c, Values{}, nil, set); diags.HasFatal() {
					b.Fatal(diags)
				}
			}
		})
	}
}
