package envfile

import "testing"

// Any input either parses or is an error naming a line, never a panic; a
// parsed file is written back byte for byte, and a value Set on it is read
// back exactly.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"A=1\n", "# c\nB=\"x\\\"y\n z\"\n", "C='a b'\nD=e\\ f", "E=\"unclosed", "=x", "F=a\\\nb"} {
		f.Add(s, "v\"\\$`\nw")
	}
	f.Fuzz(func(t *testing.T, in, value string) {
		file, err := Parse([]byte(in))
		if err != nil {
			return
		}
		if got := string(file.Bytes()); got != in {
			t.Fatalf("round trip changed the file:\n%q\n%q", in, got)
		}
		as := file.Assignments()
		if len(as) == 0 {
			return
		}
		as[0].Set(value)
		again, err := Parse(file.Bytes())
		if err != nil {
			t.Fatalf("what Set wrote does not parse: %v\n%q", err, file.Bytes())
		}
		if got := again.Assignments()[0].Value; got != value {
			t.Fatalf("Set %q, read back %q", value, got)
		}
	})
}
