package merge

import (
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
)

func TestObjectMember(t *testing.T) {
	tests := []struct {
		doc, key, want string
		ok             bool
	}{
		{`{"a":1,"b":{"c":[1,"}"]},"d":"x"}`, "b", `{"c":[1,"}"]}`, true},
		{` { "a" : "q\"}" , "b" : true } `, "b", `true`, true},
		{`{"a":1}`, "b", "", false},
		{`{"a":1,"a":2}`, "a", "", false},
		{`{"a\u0062":5}`, "ab", "5", true},
		{`[1]`, "a", "", false},
		{`{}`, "a", "", false},
		{`{"a":-1.5e3}`, "a", "-1.5e3", true},
	}
	for _, tc := range tests {
		s, e, ok := objectMember([]byte(tc.doc), tc.key)
		if ok != tc.ok || (ok && tc.doc[s:e] != tc.want) {
			t.Errorf("objectMember(%s, %q) = %q, %t", tc.doc, tc.key, tc.doc[s:e], ok)
		}
	}
}

// focusMergePatch must give what MergePatch gives, whatever the patch.
func FuzzFocusMergePatch(f *testing.F) {
	f.Add([]byte(launchTemplate), []byte(`{"Properties":{"LaunchTemplateData":{"TagSpecifications":[{"a":null}]}}}`))
	f.Add([]byte(launchTemplate), []byte(`{"Properties":{"LaunchTemplateData":{"UserData":null,"X":{"y":null}}}}`))
	f.Add([]byte(launchTemplate), []byte(`{"Properties":{"LaunchTemplateData":"x"}}`))
	f.Add([]byte(`{"a":{"b":1},"c":2}`), []byte(`{"a":{}}`))
	f.Add([]byte(`{"a":"s"}`), []byte(`{"a":{"b":{"c":null,"d":1}}}`))
	f.Add([]byte(`{"a\u0062":{"c":1}}`), []byte(`{"ab":{"c":2}}`))
	f.Fuzz(func(t *testing.T, doc, patch []byte) {
		if !isJSONObject(doc) || !isJSONObject(patch) {
			return
		}
		pv, err := decodeJSON(patch)
		if err != nil {
			return
		}
		want, errWant := jsonpatch.MergePatch(doc, patch)
		got, errGot := focusMergePatch(doc, pv.(map[string]any), patch)
		if errWant != nil {
			return // not a document MergePatch accepts; the merge never gets here
		}
		if errGot != nil {
			t.Fatalf("focusMergePatch failed where MergePatch did not: %v", errGot)
		}
		if !jsonEqual(want, got) {
			t.Fatalf("focusMergePatch(%s, %s)\n = %s\nMergePatch gives %s", doc, patch, got, want)
		}
	})
}

func TestFocusMergePatchKeepsUntouchedBytes(t *testing.T) {
	doc := `{"Type": "T",  "Properties": {"Keep": [1,  2], "Inner": {"a": 1}}, "Z": 0.10}`
	got, err := focusMergePatch([]byte(doc), map[string]any{"Properties": map[string]any{"Inner": map[string]any{"b": "2"}}},
		[]byte(`{"Properties":{"Inner":{"b":"2"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"Type": "T",  "Properties": {"Keep": [1,  2], "Inner": {"a":1,"b":"2"}}, "Z": 0.10}`; string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
