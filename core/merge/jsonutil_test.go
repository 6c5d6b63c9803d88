package merge

import (
	"reflect"
	"strings"
	"testing"
)

func TestJSONEqual(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{`{"a":1,"b":[1,2]}`, `{ "b" : [1, 2], "a" : 1 }`, true},
		{`1`, `1.0`, true},
		{`1`, `10e-1`, true},
		{`0.1e1`, `1`, true},
		{`-0`, `0`, true},
		{`100`, `1e2`, true},
		{`123456789012345678901234567890`, `123456789012345678901234567891`, false},
		{`1e999999999999999999999`, `1e999999999999999999999`, true},
		{`1`, `2`, false},
		{`[1,2]`, `[2,1]`, false},
		{`{"a":null}`, `{}`, false},
		{`"1"`, `1`, false},
		{`{broken`, `{broken`, true},
		{`{broken`, `{broken }`, false},
	}
	for _, tc := range tests {
		if got := jsonEqual([]byte(tc.a), []byte(tc.b)); got != tc.want {
			t.Errorf("jsonEqual(%s, %s) = %t, want %t", tc.a, tc.b, got, tc.want)
		}
		if tc.want && canonicalRaw([]byte(tc.a)) != canonicalRaw([]byte(tc.b)) && !strings.Contains(tc.a, "broken") {
			t.Errorf("canonical forms of equal %s and %s differ", tc.a, tc.b)
		}
	}
}

func TestDescribeJSONDiff(t *testing.T) {
	got := describeJSONDiff("a", []byte(`{"P":{"x":1,"y":[1,2]}}`), "b", []byte(`{"P":{"x":1,"y":[1,3]}}`))
	if want := `they differ at /P/y/1: "a" sets 2, "b" sets 3`; got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	got = describeJSONDiff("a", []byte(`{"P":{}}`), "b", []byte(`{"P":{"a/b":1}}`))
	if want := `they differ at /P/a~1b: "a" sets nothing, "b" sets 1`; got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
	long := `{"P":"` + strings.Repeat("x", 500) + `"}`
	got = describeJSONDiff("a", []byte(long), "b", []byte(`{"P":"y"}`))
	if len(got) > 300 || !strings.Contains(got, "(502 bytes)") {
		t.Errorf("a long value is not truncated: %s", got)
	}
}

func TestDescribeTextDiff(t *testing.T) {
	got := describeTextDiff("a", "x\ny\nz", "b", "x\ny")
	if want := `they differ at line 3: "a" has "z", "b" has nothing`; got != want {
		t.Errorf("got %s\nwant %s", got, want)
	}
}

func TestParsePointer(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  bool
	}{
		{"", nil, false},
		{"/", []string{""}, false},
		{"/a/b", []string{"a", "b"}, false},
		{"/a~1b/c~0d", []string{"a/b", "c~d"}, false},
		{"a", nil, true},
		{"/a~2", nil, true},
		{"/a~", nil, true},
	}
	for _, tc := range tests {
		got, err := parsePointer(tc.in)
		if (err != nil) != tc.err || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parsePointer(%q) = %q, %v", tc.in, got, err)
		}
		if err == nil && joinPointer(got) != tc.in {
			t.Errorf("joinPointer(parsePointer(%q)) = %q", tc.in, joinPointer(got))
		}
	}
}

func TestSimilar(t *testing.T) {
	got := similar("LaunchTemplat", []string{"ASG", "LaunchTemplate", "launchtemplate2", "SecurityGroup"}, 5)
	if want := []string{"LaunchTemplate", "launchtemplate2"}; !reflect.DeepEqual(got, want) {
		t.Errorf("similar = %v, want %v", got, want)
	}
	if got := similar("VPC", []string{"Subnet0", "IGW"}, 5); len(got) != 0 {
		t.Errorf("similar = %v, want none", got)
	}
}
