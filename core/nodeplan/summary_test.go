package nodeplan

import (
	"reflect"
	"testing"
)

func TestSummaryRoundTripAndChanges(t *testing.T) {
	old := Summary{KubernetesVersion: "1.33.13", Plugins: map[string]string{"kubernetes": "aaa", "etcd": "bbb", "dex": "ccc"}}
	doc := "#cloud-config\n" + old.Comment() + "write_files: []\n# a comment further down is not the summary\n"
	if got := ParseSummary([]byte(doc)); !reflect.DeepEqual(got, old) {
		t.Fatalf("ParseSummary = %+v, want %+v", got, old)
	}
	for _, c := range []struct {
		name string
		new  Summary
		want []string
	}{
		{"same", old, nil},
		{"an upgrade", Summary{KubernetesVersion: "1.34.4", Plugins: map[string]string{"kubernetes": "ddd", "etcd": "bbb", "dex": "ccc"}},
			[]string{"kubernetesVersion 1.33.13 -> 1.34.4", "plugin kubernetes changed"}},
		{"plugins added and removed", Summary{KubernetesVersion: "1.33.13", Plugins: map[string]string{"kubernetes": "aaa", "etcd": "eee", "audit": "fff", "kube2iam": "ggg"}},
			[]string{"plugin etcd changed", "plugins audit, kube2iam added", "plugin dex removed"}},
	} {
		if got := c.new.Changes(old); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Changes = %q, want %q", c.name, got, c.want)
		}
	}
	// A userdata of an older kube-aws has no summary: nothing to compare.
	if got := (Summary{KubernetesVersion: "1.34.4"}).Changes(ParseSummary([]byte("#cloud-config\n{}\n"))); len(got) != 0 {
		t.Errorf("against no summary: %q", got)
	}
}
