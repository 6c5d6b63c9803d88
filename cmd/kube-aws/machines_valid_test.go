package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kube-aws/kube-aws/core/nodeplan"
)

// TestRenderedMachinesAreValid renders cluster.yaml.example with every
// built-in and checks what each machine gets the way the machine's own tools
// would: every userdata by `cloud-init schema`, every systemd unit and
// drop-in by `systemd-analyze verify`. verify may only say that a command is
// not there when the machine installs it (its artifacts plan, or
// kube-aws-node, which the bootstrap installs); anything else it says fails.
// The machines' tools come with the image contract (docs/node-agent.md), and
// .ci/run installs cloud-init and containerd where they are missing.
func TestRenderedMachinesAreValid(t *testing.T) {
	for _, tool := range []string{"cloud-init", "systemd-analyze"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is not installed: .ci/run installs it (apt-get install cloud-init systemd)", tool)
		}
	}
	l := newExampleLayout(t)
	if stdout, stderr, code := l.run("render"); code != 0 {
		t.Fatalf("render: exit %d\n%s\n%s", code, stdout, stderr)
	}
	files, err := filepath.Glob(filepath.Join(l.cluster, "rendered", "userdata", "*.yaml"))
	if err != nil || len(files) < 3 {
		t.Fatalf("rendered userdata %v (%v), want controller, etcd and a node pool", files, err)
	}
	for _, f := range files {
		role := strings.TrimSuffix(filepath.Base(f), ".yaml")
		t.Run(role, func(t *testing.T) {
			out, err := exec.Command("cloud-init", "schema", "--config-file", f).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "Valid cloud-config") {
				t.Errorf("cloud-init schema: %v\n%s", err, out)
			}
			verifyUnits(t, f)
		})
	}
}

// notExecutable is what systemd-analyze verify says of a command that is not
// on this machine.
var notExecutable = regexp.MustCompile(`^(\S+): Command (\S+) is not executable: No such file or directory$`)

// verifyUnits writes the units and drop-ins of a userdata to a folder on
// SYSTEMD_UNIT_PATH and verifies every unit they name.
func verifyUnits(t *testing.T, userdata string) {
	t.Helper()
	b, err := os.ReadFile(userdata)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		WriteFiles []struct {
			Path    string `json:"path"`
			Content string `json:"content"`
		} `json:"write_files"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	units := map[string]bool{}
	installed := map[string]bool{"/opt/kube-aws/bin/kube-aws-node": true}
	for _, f := range doc.WriteFiles {
		if f.Path == nodeplan.ArtifactsPath {
			var plan nodeplan.ArtifactsPlan
			if err := json.Unmarshal([]byte(f.Content), &plan); err != nil {
				t.Fatal(err)
			}
			for _, bin := range plan.Binaries {
				installed[bin.Path] = true
			}
		}
		rel, ok := strings.CutPrefix(f.Path, "/etc/systemd/system/")
		if !ok {
			continue
		}
		full := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(f.Content), 0o644); err != nil {
			t.Fatal(err)
		}
		// A drop-in is verified with the unit it changes.
		unit := rel
		if d := path.Dir(rel); d != "." {
			unit = strings.TrimSuffix(d, ".d")
		}
		units[unit] = true
	}
	if len(units) == 0 {
		return
	}
	names := make([]string, 0, len(units))
	for u := range units {
		names = append(names, u)
	}
	sort.Strings(names)
	c := exec.Command("systemd-analyze", append([]string{"verify", "--man=no"}, names...)...)
	// The folder first; the trailing ':' keeps the system's own unit
	// folders (a drop-in's unit, the targets units want).
	c.Env = append(os.Environ(), "SYSTEMD_UNIT_PATH="+dir+":")
	out, _ := c.CombinedOutput()
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		if m := notExecutable.FindStringSubmatch(line); m != nil && installed[m[2]] {
			continue // the machine installs it before it starts the unit
		}
		t.Errorf("systemd-analyze verify %s: %s", strings.Join(names, " "), line)
	}
	t.Logf("verified %s", strings.Join(names, " "))
}
