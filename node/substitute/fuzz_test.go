package substitute

import (
	"encoding/json"
	"testing"

	"github.com/kube-aws/kube-aws/core/nodeplan"
)

// Any file in any format either substitutes or is an error, never a panic;
// valid JSON stays valid JSON; and a second run finds nothing left (the
// value holds no marker).
func FuzzFile(f *testing.F) {
	for i, s := range []string{`{"a": "` + mA + `", "b": [1, "x` + mB + `"]}`, "a: " + mA + "\n---\nb: [" + mB + "]\n", "A=" + mA + "\nB=\"" + mB + "\"\n", mA} {
		f.Add(uint8(i), s)
	}
	f.Fuzz(func(t *testing.T, which uint8, in string) {
		format := nodeplan.Formats[int(which)%len(nodeplan.Formats)]
		out, n, err := File(format, []byte(in), lookup)
		if err != nil {
			return
		}
		if format == nodeplan.FormatJSON && json.Valid([]byte(in)) && !json.Valid(out) {
			t.Fatalf("valid JSON became invalid:\n%s\n%s", in, out)
		}
		if n == 0 {
			return
		}
		again, m, err := File(format, out, lookup)
		if err != nil || m != 0 || string(again) != string(out) {
			t.Fatalf("second run: %d markers, %v\n%s", m, err, out)
		}
	})
}
