package config_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// Every plugin binary links core/config through the SDK, so its package
// init runs at the start of every plugin process. Validation regexps, the
// init template and the field docs are built on first use; this keeps it so.
func TestPackageInitIsCheap(t *testing.T) {
	dir := t.TempDir()
	main := "package main\n\nimport _ \"github.com/kube-aws/kube-aws/core/config\"\n\nfunc main() {}\n"
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "probe")
	build := exec.Command("go", "build", "-o", bin, filepath.Join(dir, "main.go"))
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building probe: %v\n%s", err, out)
	}
	run := exec.Command(bin)
	run.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("running probe: %v\n%s", err, out)
	}
	m := regexp.MustCompile(`init github.com/kube-aws/kube-aws/core/config @[^,]+, [^,]+, (\d+) bytes, (\d+) allocs`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no init trace line for core/config in:\n%s", out)
	}
	allocs, _ := strconv.Atoi(string(m[2]))
	if allocs > 200 {
		t.Errorf("core/config package init makes %d allocations (%s bytes); build regexps, templates and tables on first use", allocs, m[1])
	}
}
