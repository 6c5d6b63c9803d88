package cloudformation

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// cfnLint finds cfn-lint in $KUBE_AWS_VENV (set by the Makefile) or in the
// .venv at the repository root. It fails rather than skips when there is
// none: a template that CloudFormation rejects must never pass make test.
func cfnLint(t *testing.T) string {
	t.Helper()
	var candidates []string
	if v := os.Getenv("KUBE_AWS_VENV"); v != "" {
		candidates = append(candidates, filepath.Join(v, "bin", "cfn-lint"))
	}
	if dir, err := os.Getwd(); err == nil {
		for d := dir; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
				candidates = append(candidates, filepath.Join(d, ".venv", "bin", "cfn-lint"))
				break
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	for _, c := range candidates {
		if _, err := os.Stat(c); err == nil {
			return c
		}
	}
	t.Fatalf("cfn-lint not found (looked at %v): run `make venv` to install it", candidates)
	return ""
}

// TestCfnLint renders every fixture into a temporary folder and wants
// cfn-lint to find nothing. W3010 (hardcoded availability zones) is the one
// check switched off, and only because naming the zones is the point:
// cluster.yaml lists them and the subnets' CIDRs are computed per zone at
// render time, which Fn::GetAZs cannot express.
func TestCfnLint(t *testing.T) {
	lint := cfnLint(t)
	for _, name := range lintFixtures {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			_, c := loadFixture(t, name)
			res := renderFixture(t, name)
			dir := t.TempDir()
			args := []string{"--regions", c.Region, "--ignore-checks", "W3010", "--"}
			for _, f := range res.Files {
				p := filepath.Join(dir, filepath.FromSlash(f.Path))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, f.Content, 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, p)
			}
			if len(res.Files) == 0 {
				t.Fatal("nothing rendered")
			}
			out, err := exec.Command(lint, args...).CombinedOutput()
			if err != nil {
				t.Errorf("cfn-lint: %v\n%s", err, out)
			}
		})
	}
}
