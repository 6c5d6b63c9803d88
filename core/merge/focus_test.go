package merge

import (
	"strings"
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

func TestValueAt(t *testing.T) {
	doc := `{"a": [ {"b": 1}, "x" , [2, {"c": "]"}] ], "d\u0065": {"f": null}}`
	tests := []struct {
		path, want string
		ok         bool
	}{
		{"", doc, true},
		{"/a/0", `{"b": 1}`, true},
		{"/a/0/b", `1`, true},
		{"/a/1", `"x"`, true},
		{"/a/2/1/c", `"]"`, true},
		{"/de/f", `null`, true},
		{"/a/3", "", false},
		{"/a/-", "", false},
		{"/a/01", "", false},
		{"/a/0/b/c", "", false},
		{"/z", "", false},
	}
	for _, tc := range tests {
		tokens, err := parsePointer(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		s, e, ok := valueAt([]byte(doc), tokens)
		if ok != tc.ok || (ok && doc[s:e] != tc.want) {
			t.Errorf("valueAt(%q) = %q, %t; want %q, %t", tc.path, doc[s:e], ok, tc.want, tc.ok)
		}
	}
}

// Operations applied at their focus give what they give on the whole
// resource, and the rest of the resource keeps its bytes.
func TestApplyOperationsAtTheirFocus(t *testing.T) {
	doc := `{"Type": "T",  "Properties": {"Keep": [1,  2], "Tags": [{"Key": "a", "Value": "<b>"}]}, "Z": 0.10}`
	pp := pendingPatch{}
	var err error
	pp.ops, _, pp.opsFocus, err = decodeOperations([]byte(`[{"op":"add","path":"/Properties/Tags/-","value":{"Key":"c&d","Value":"e"}},
		{"op":"test","path":"/Properties/Tags/0/Key","value":"a"}]`))
	if err != nil {
		t.Fatal(err)
	}
	if got := joinPointer(pp.opsFocus); got != "/Properties/Tags" {
		t.Fatalf("focus %q", got)
	}
	got, err := applyOperations([]byte(doc), &pp)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"Type": "T",  "Properties": {"Keep":[1,2],"Tags":[{"Key":"a","Value":"<b>"},{"Key":"c&d","Value":"e"}]}, "Z": 0.10}`; string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// A failing operation is reported with its full path.
	pp.ops, _, pp.opsFocus, _ = decodeOperations([]byte(`[{"op":"remove","path":"/Properties/Tags/5"}]`))
	if _, err := applyOperations([]byte(doc), &pp); err == nil || !strings.Contains(err.Error(), "/Properties/Tags/5") {
		t.Errorf("error %v does not name the full path", err)
	}
}

// applyOperations must give what json-patch gives on the whole document.
func FuzzFocusOperations(f *testing.F) {
	f.Add([]byte(launchTemplate), []byte(`[{"op":"add","path":"/Properties/LaunchTemplateData/TagSpecifications/0/Tags/-","value":{"Key":"k","Value":"v"}}]`))
	f.Add([]byte(launchTemplate), []byte(`[{"op":"replace","path":"/Properties/LaunchTemplateData/ImageId","value":"ami-1"},{"op":"remove","path":"/Properties/LaunchTemplateData/UserData"}]`))
	f.Add([]byte(launchTemplate), []byte(`[{"op":"move","from":"/Properties/LaunchTemplateData/ImageId","path":"/Properties/LaunchTemplateData/X"}]`))
	f.Add([]byte(launchTemplate), []byte(`[{"op":"copy","from":"/Properties/LaunchTemplateData/ImageId","path":"/Properties/Y"}]`))
	f.Add([]byte(`{"a":[[1,{"b":2}]]}`), []byte(`[{"op":"add","path":"/a/0/1/c","value":3},{"op":"test","path":"/a/0/0","value":1}]`))
	f.Add([]byte(`{"a":{"b":{"c":1}}}`), []byte(`[{"op":"remove","path":"/a/b/c"},{"op":"add","path":"/a/b/c","value":[]}]`))
	f.Add([]byte(`{"a":{"b":1}}`), []byte(`[{"op":"replace","path":"","value":{}}]`))
	f.Fuzz(func(t *testing.T, doc, ops []byte) {
		if !isJSONObject(doc) {
			return
		}
		pp := pendingPatch{}
		var err error
		if pp.ops, _, pp.opsFocus, err = decodeOperations(ops); err != nil {
			return
		}
		want, errWant := pp.ops.ApplyWithOptions(doc, applyOptions())
		got, errGot := applyOperations(doc, &pp)
		if (errWant == nil) != (errGot == nil) {
			t.Fatalf("whole document: %v; at the focus: %v", errWant, errGot)
		}
		if errWant == nil && !jsonEqual(want, got) {
			t.Fatalf("applyOperations(%s, %s)\n = %s\njson-patch gives %s", doc, ops, got, want)
		}
	})
}
