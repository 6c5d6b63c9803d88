package nodeplan

import (
	"regexp"
	"strings"
	"testing"
)

// IsSHA256 and lifecycleHookName accept exactly what the regular
// expressions they stand for match.
func TestCharsetChecksMatchTheirExpressions(t *testing.T) {
	hex64 := strings.Repeat("0123456789abcdef", 4)
	for _, tc := range []struct {
		name  string
		re    *regexp.Regexp
		check func(string) bool
		in    []string
	}{
		{"IsSHA256", regexp.MustCompile(`^[0-9a-f]{64}$`), IsSHA256, []string{
			"", hex64, hex64[:63], hex64 + "0", strings.ToUpper(hex64), hex64[:63] + "g", hex64[:63] + "\n",
			"\n" + hex64[:63], hex64[:62] + "é", strings.Repeat("a", 64), strings.Repeat("f", 64),
		}},
		{"lifecycleHookName", regexp.MustCompile(`^[A-Za-z0-9_/-]{1,255}$`), lifecycleHookName, []string{
			"", "kube-aws-drain", "a/b_c-D9", strings.Repeat("x", 255), strings.Repeat("x", 256), "with space",
			"dot.", "é", "tab\t", "new\nline", "-", "/", "_", "x\n",
		}},
	} {
		for _, s := range tc.in {
			if got, want := tc.check(s), tc.re.MatchString(s); got != want {
				t.Errorf("%s(%q) = %v, the expression says %v", tc.name, s, got, want)
			}
		}
	}
}
