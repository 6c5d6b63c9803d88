package merge

import (
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/construct"
)

// What one plugin gives every worker and another gives one pool lands on
// that pool twice: different is a conflict naming both plugins (in either
// plugin order, blamed on the later), identical is merged into one.
func TestOverlappingTargets(t *testing.T) {
	svc := "[Service]\nExecStart=/bin/a\n"
	tests := []struct {
		name           string
		all, pool      construct.Set
		path, contains string
	}{
		{"unit content",
			construct.Set{Units: []construct.Unit{{Target: worker, Name: "a.service", Content: svc}}},
			construct.Set{Units: []construct.Unit{{Target: pool1, Name: "a.service", Content: svc + "Restart=always\n"}}},
			"constructs.units[worker/pool1:a.service]", "systemd unit a.service"},
		{"drop-in",
			construct.Set{Units: []construct.Unit{{Target: worker, Name: "kubelet.service", DropIns: []construct.DropIn{{Name: "10.conf", Content: "a"}}}}},
			construct.Set{Units: []construct.Unit{{Target: pool1, Name: "kubelet.service", DropIns: []construct.DropIn{{Name: "10.conf", Content: "b"}}}}},
			"constructs.units[worker/pool1:kubelet.service].dropIns[10.conf]", "drop-in 10.conf of systemd unit kubelet.service"},
		{"file",
			construct.Set{Files: []construct.File{{Target: worker, Path: "/etc/a", Content: "x"}}},
			construct.Set{Files: []construct.File{{Target: pool1, Path: "/etc/a", Content: "y"}}},
			"constructs.files[worker/pool1:/etc/a]", "file /etc/a"},
		{"IAM Sid",
			construct.Set{IAM: []construct.IAMStatement{{Target: worker, Sid: "S", Effect: "Allow", Actions: []string{"s3:GetObject"}, Resources: []string{"*"}}}},
			construct.Set{IAM: []construct.IAMStatement{{Target: pool1, Sid: "S", Effect: "Allow", Actions: []string{"s3:*"}, Resources: []string{"*"}}}},
			"constructs.iam[worker/pool1:S]", "IAM statement S"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, order := range [][2]string{{"alpha", "beta"}, {"beta", "alpha"}} {
				all, pool := tc.all, tc.pool
				c := []Contribution{{Plugin: "alpha", Set: &all}, {Plugin: "beta", Set: &pool}}
				if order[0] == "beta" {
					c[0], c[1] = Contribution{Plugin: "beta", Set: &pool}, Contribution{Plugin: "alpha", Set: &all}
				}
				_, diags := Merge(c)
				checkConflict(t, diags, order[1], tc.path, tc.contains, `"alpha"`, `"beta"`, "node pool pool1")
			}
			// Identical: one copy, for every worker.
			same := tc.all
			for i := range same.Units {
				same.Units[i].Target = pool1
			}
			for i := range same.Files {
				same.Files[i].Target = pool1
			}
			for i := range same.IAM {
				same.IAM[i].Target = pool1
			}
			out := mustMerge(t, two(tc.all, same))
			if n := len(out.Units) + len(out.Files); tc.name != "IAM Sid" && n != 1 {
				t.Errorf("identical overlap kept %d entries: %+v %+v", n, out.Units, out.Files)
			}
		})
	}
}

// A pool may still add its own drop-in to a unit every worker gets, and
// kubelet flags for a pool still win over those for every worker.
func TestOverlapsThatAreNoConflict(t *testing.T) {
	all := construct.Set{
		Units:        []construct.Unit{{Target: worker, Name: "a.service", Content: "[Service]\nExecStart=/bin/a\n"}},
		KubeletFlags: []construct.TargetedFlag{{Target: worker, Flag: construct.Flag{Name: "max-pods", Value: "110"}}},
		NodeLabels:   []construct.NodeLabel{{Target: worker, Key: "tier", Value: "any"}},
	}
	pool := construct.Set{
		Units:        []construct.Unit{{Target: pool1, Name: "a.service", DropIns: []construct.DropIn{{Name: "gpu.conf", Content: "[Service]\nEnvironment=GPU=1\n"}}}},
		KubeletFlags: []construct.TargetedFlag{{Target: pool1, Flag: construct.Flag{Name: "max-pods", Value: "58"}}},
		NodeLabels:   []construct.NodeLabel{{Target: pool1, Key: "tier", Value: "gpu"}},
	}
	out := mustMerge(t, two(all, pool))
	if len(out.Units) != 2 || out.Units[1].Content != "" || len(out.Units[1].DropIns) != 1 || len(out.KubeletFlags) != 2 || len(out.NodeLabels) != 2 {
		t.Errorf("merged %+v", out)
	}
	if !strings.Contains(out.Units[1].DropIns[0].Content, "GPU=1") || out.Units[1].DropIns[0].Plugin != "beta" {
		t.Errorf("pool drop-in %+v", out.Units[1])
	}
}
