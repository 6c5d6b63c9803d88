package merge

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
)

// FuzzMerge decodes the input as a JSON array of construct sets, one per
// plugin, and checks what must hold for any input: Merge does not panic, is
// deterministic, leaves its inputs alone, reports well-formed fatals, and a
// clean merge is a fixed point (merging the result again changes nothing).
// The seed corpus is in testdata/fuzz/FuzzMerge.
func FuzzMerge(f *testing.F) {
	f.Add([]byte(`[{"stacks":[{"name":"s","resources":{"R":{"Type":"T"}}}]},{"stacks":[{"name":"s","resources":{"R":{"Type":"U"}}}]}]`))
	f.Add([]byte(`[{"apiServer":{"flags":[{"name":"enable-admission-plugins","value":"A,B"}]}},{"apiServer":{"flags":[{"name":"enable-admission-plugins","value":"B,C"}]}}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		var sets []construct.Set
		if err := json.Unmarshal(data, &sets); err != nil || len(sets) > 8 {
			return
		}
		contribs := make([]Contribution, len(sets))
		plugins := map[string]bool{}
		for i := range sets {
			contribs[i] = Contribution{Plugin: fmt.Sprintf("p%d", i), Set: &sets[i]}
			plugins[contribs[i].Plugin] = true
		}
		before, err := json.Marshal(sets)
		if err != nil {
			t.Fatal(err)
		}
		out1, d1 := Merge(contribs)
		out2, d2 := Merge(contribs)
		after, _ := json.Marshal(sets)
		if string(before) != string(after) {
			t.Fatalf("Merge modified its input:\nbefore %s\nafter  %s", before, after)
		}
		j1, _ := json.Marshal(out1)
		j2, _ := json.Marshal(out2)
		if string(j1) != string(j2) || !reflect.DeepEqual(d1, d2) {
			t.Fatalf("Merge is not deterministic:\n%s\n%s\n%v\n%v", j1, j2, d1, d2)
		}
		for _, d := range d1 {
			if d.Severity != diag.Fatal || d.Stage != "initialise" || !plugins[d.Plugin] || d.Message == "" || d.Hint == "" || d.Path == "" {
				t.Fatalf("malformed diagnostic %#v", d)
			}
		}
		for _, s := range out1.Stacks {
			for id, body := range s.Resources {
				if !isJSONObject(body) {
					t.Fatalf("merged resource %s/%s is not a JSON object: %s", s.Name, id, body)
				}
			}
		}
		if len(d1) > 0 {
			return
		}
		// Re-merging a clean result reports nothing and keeps every item;
		// it may reorder items into name order within the one contribution,
		// after which it is a fixed point.
		again, d3 := Merge([]Contribution{{Plugin: "merged", Set: out1}})
		if len(d3) > 0 {
			t.Fatalf("re-merging a clean merge reports:\n%s\nmerged: %s", d3.Error(), j1)
		}
		if counts(again) != counts(out1) {
			t.Fatalf("re-merging changed what was merged:\n%v\n%v", counts(out1), counts(again))
		}
		j3, _ := json.Marshal(again)
		twice, _ := Merge([]Contribution{{Plugin: "merged", Set: again}})
		j4, _ := json.Marshal(twice)
		if string(j3) != string(j4) {
			t.Fatalf("merge is not idempotent:\n%s\n%s", j3, j4)
		}
	})
}

func counts(s *construct.Set) [12]int {
	var resources int
	for _, st := range s.Stacks {
		resources += len(st.Resources) + len(st.Outputs) + len(st.Parameters) + len(st.Conditions) + len(st.Mappings) + len(st.Tags)
	}
	return [12]int{len(s.Stacks), resources, len(s.Protected), len(s.Units), len(s.Files), len(s.APIServer.Flags),
		len(s.APIServer.Volumes), len(s.KubeletFlags), len(s.NodeLabels) + len(s.NodeTaints), len(s.IAM), len(s.HelmReleases), len(s.Manifests)}
}
