package version

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// semver is the regular expression semver.org gives for a version.
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

func TestVersionIsSemantic(t *testing.T) {
	if m := semver.FindStringSubmatch(Release); m == nil || m[5] != "" {
		t.Fatalf("Release %q is not a semantic version without build metadata", Release)
	}
	for _, tc := range []struct{ commit, want string }{
		{"", Release},
		{"cfc6527", Release + "+cfc6527"},
		{"cfc6527.dirty", Release + "+cfc6527.dirty"},
	} {
		got := withCommit(Release, tc.commit)
		if got != tc.want || !semver.MatchString(got) {
			t.Errorf("withCommit(%q) = %q, want %q, a semantic version", tc.commit, got, tc.want)
		}
	}
}

func TestModuleIsGoMod(t *testing.T) {
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	if first != "module "+Module {
		t.Fatalf("go.mod says %q, version.Module is %q", first, Module)
	}
}

// The plugin guide tells authors which SDK version to require: it must be
// the one kube-aws version prints, so every require line of the docs names it.
func TestReleaseIsTheDocumentedSDKVersion(t *testing.T) {
	req := regexp.MustCompile(`require ` + regexp.QuoteMeta(Module) + ` (\S+)`)
	found := 0
	for _, doc := range []string{"../../docs/plugins.md", "../../README.md"} {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range req.FindAllStringSubmatch(string(b), -1) {
			found++
			if m[1] != SDKVersion {
				t.Errorf("%s: %q, but this kube-aws's SDK is %s", doc, m[0], SDKVersion)
			}
		}
	}
	if found == 0 {
		t.Fatal("docs/plugins.md no longer shows the require line of the SDK")
	}
}
