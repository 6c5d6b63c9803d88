package cisbench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestTools builds kube-bench, kubectl and jq as the booted cluster's
// machines run them (`make test-tools`, `make cis-tools`), runs each on
// this machine, and checks the staged checks carry kube-aws's paths
// merged into a benchmark config kube-bench can read.
func TestTools(t *testing.T) {
	tools, err := Build()
	if err != nil {
		t.Fatal(err)
	}
	if tools.Version != "v0.10.4" {
		t.Errorf("kube-bench %s, want v0.10.4 (tools/kube-bench/go.mod)", tools.Version)
	}
	for _, c := range []struct {
		bin  string
		args []string
		want string
	}{
		{tools.KubeBench, []string{"version"}, ""},
		{tools.Kubectl, []string{"version", "--client", "-o", "json"}, `"clientVersion"`},
		{tools.JQ, []string{"-n", "-c", `{a: ([1, 2] | add)}`}, `{"a":3}`},
	} {
		out, err := exec.Command(c.bin, c.args...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), c.want) {
			t.Errorf("%s %v: %v, %q; want %q in its output", c.bin, c.args, err, out, c.want)
		}
	}
	dir := t.TempDir()
	if err := tools.Stage(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"kube-bench", "kubectl", "jq", "cfg/config.yaml", "cfg/" + Benchmark + "/master.yaml"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "cfg", Benchmark, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Etcd, Master map[string]struct {
			Confs      []string `json:"confs"`
			Datadirs   []string `json:"datadirs"`
			DefaultDir string   `json:"defaultdatadir"`
		}
	}
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("the staged %s/config.yaml: %v\n%s", Benchmark, err, b)
	}
	for _, e := range []struct {
		Confs      []string `json:"confs"`
		Datadirs   []string `json:"datadirs"`
		DefaultDir string   `json:"defaultdatadir"`
	}{cfg.Etcd["etcd"], cfg.Master["etcd"]} {
		if len(e.Confs) != 1 || e.Confs[0] != "/etc/systemd/system/etcd.service" || e.DefaultDir != "/var/lib/etcd/data" {
			t.Errorf("the staged config gives etcd %+v, want kube-aws's unit and data folder", e)
		}
	}
	// The module cache's copy is left as it was.
	orig, err := os.ReadFile(filepath.Join(tools.Config, Benchmark, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(orig), "kube-aws") {
		t.Errorf("Stage changed the module cache's %s/config.yaml", Benchmark)
	}
}

func TestParseReport(t *testing.T) {
	b, err := os.ReadFile("testdata/report.json")
	if err != nil {
		t.Fatal(err)
	}
	r, err := ParseReport(b)
	if err != nil {
		t.Fatal(err)
	}
	got := r.Counts()
	want := []Count{
		{Section: "5.1", Desc: "RBAC and Service Accounts", Pass: 1, Fail: 1, Warn: 1},
		{Section: "5.2", Desc: "Pod Security Standards", Warn: 1, Info: 1},
	}
	if len(got) != len(want) {
		t.Fatalf("counts %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("count %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	if n := len(r.Results()); n != 5 {
		t.Errorf("%d results, want 5", n)
	}
	for _, c := range []struct{ name, in, err string }{
		{"not json", "{", "JSON report"},
		{"no controls", `{"Controls":[]}`, "no controls"},
		{"other benchmark", `{"Controls":[{"version":"cis-1.9","node_type":"node"}]}`, `benchmark "cis-1.9"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := ParseReport([]byte(c.in)); err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("error %v, want it to say %q", err, c.err)
			}
		})
	}
}

const table = `# Guide

## CIS Kubernetes Benchmark

` + TableMarker + ` ... -->

| Check | Role | Result | Reason | What a user sets to meet it |
|---|---|---|---|---|
`

func TestParseTable(t *testing.T) {
	for _, c := range []struct {
		name, rows string
		want       []Row
		err        string
	}{
		{name: "empty"},
		{name: "rows", rows: "| 1.2.9 | controller | WARN | manual | EventRateLimit |\n| `4.2.1` | worker | FAIL | why | how |\n\nafter the table | not a row\n",
			want: []Row{{"1.2.9", "controller", "WARN", "manual", "EventRateLimit", 9}, {"4.2.1", "worker", "FAIL", "why", "how", 10}}},
		{name: "columns", rows: "| 1.2.9 | controller | WARN | manual |\n", err: "line 9: 4 columns"},
		{name: "check id", rows: "| x | controller | WARN | a | b |\n", err: `"x" is not a check id`},
		{name: "role", rows: "| 1.2.9 | master | WARN | a | b |\n", err: `role "master"`},
		{name: "result", rows: "| 1.2.9 | etcd | PASS | a | b |\n", err: `result "PASS"`},
		{name: "reason", rows: "| 1.2.9 | etcd | WARN |  | b |\n", err: "no reason"},
		{name: "twice", rows: "| 1.2.9 | etcd | WARN | a | b |\n| 1.2.9 | etcd | FAIL | a | b |\n", err: "listed on line 9 already"},
	} {
		t.Run(c.name, func(t *testing.T) {
			rows, err := ParseTable(table + c.rows)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want it to say %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(rows) != len(c.want) {
				t.Fatalf("rows %+v, want %+v", rows, c.want)
			}
			for i := range rows {
				if rows[i] != c.want[i] {
					t.Errorf("row %d: %+v, want %+v", i, rows[i], c.want[i])
				}
			}
		})
	}
	if _, err := ParseTable("# no table\n"); err == nil {
		t.Error("a guide without the marker parsed")
	}
	if _, err := ParseTable(TableMarker + " -->\n\ntext\n"); err == nil {
		t.Error("a marker without a table parsed")
	}
}

// TestTheGuidesTableParses keeps docs/security.md's table readable by the
// booted-cluster test.
func TestTheGuidesTableParses(t *testing.T) {
	if _, err := LoadTable(); err != nil {
		t.Fatal(err)
	}
}

func TestCompare(t *testing.T) {
	rows := []Row{
		{Check: "1.2.9", Role: "controller", Result: "WARN", Line: 1},
		{Check: "1.2.10", Role: "controller", Result: "FAIL", Line: 2},
		{Check: "1.2.11", Role: "controller", Result: "FAIL", Line: 3},
		{Check: "1.2.12", Role: "controller", Result: "WARN", Line: 4},
		{Check: "4.2.1", Role: "worker", Result: "FAIL", Line: 5},
	}
	for _, c := range []struct {
		name    string
		results []Result
		want    []string
	}{
		{"as listed", []Result{{ID: "1.2.9", Status: "WARN"}, {ID: "1.2.10", Status: "FAIL"}, {ID: "1.2.11", Status: "FAIL"}, {ID: "1.2.12", Status: "WARN"}, {ID: "1.2.1", Status: "PASS"}}, nil},
		{"new fail and warn", []Result{{ID: "1.2.9", Status: "WARN"}, {ID: "1.2.10", Status: "FAIL"}, {ID: "1.2.11", Status: "FAIL"}, {ID: "1.2.12", Status: "WARN"}, {ID: "1.2.1", Status: "FAIL"}, {ID: "1.2.2", Status: "WARN"}},
			[]string{"1.2.1 FAIL on controller has no row: add | 1.2.1 | controller | FAIL |", "1.2.2 WARN on controller has no row"}},
		{"fixed and changed", []Result{{ID: "1.2.9", Status: "FAIL"}, {ID: "1.2.10", Status: "PASS"}, {ID: "1.2.12", Status: "INFO"}},
			[]string{"1.2.9 on controller gives FAIL, its row (line 1) says WARN", "1.2.10 on controller now gives PASS, its row (line 2) says FAIL: remove the row", "1.2.11 on controller: its row (line 3) names a check kube-bench did not run there", "1.2.12 on controller now gives INFO"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Compare("controller", c.results, rows)
			if len(got) != len(c.want) {
				t.Fatalf("problems:\n%s\nwant %d", strings.Join(got, "\n"), len(c.want))
			}
			for i := range got {
				if !strings.Contains(got[i], c.want[i]) {
					t.Errorf("problem %d: %q, want it to say %q", i, got[i], c.want[i])
				}
			}
		})
	}
}
