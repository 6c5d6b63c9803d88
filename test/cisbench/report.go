package cisbench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Report is kube-bench's JSON report (`kube-bench run --json`), the parts
// read here.
type Report struct {
	Controls []Controls `json:"Controls"`
}

// Controls are the results of one target (master, etcd, node...).
type Controls struct {
	ID       string  `json:"id"`
	Version  string  `json:"version"`
	Text     string  `json:"text"`
	NodeType string  `json:"node_type"`
	Groups   []Group `json:"tests"`
}

// Group is a section of a target (1.1, 1.2...).
type Group struct {
	Section string   `json:"section"`
	Desc    string   `json:"desc"`
	Results []Result `json:"results"`
}

// Result is one check's outcome.
type Result struct {
	ID       string `json:"test_number"`
	Desc     string `json:"test_desc"`
	Status   string `json:"status"` // PASS, FAIL, WARN or INFO
	Scored   bool   `json:"scored"`
	Actual   string `json:"actual_value"`
	Expected string `json:"expected_result"`
	Reason   string `json:"reason"`
}

// ParseReport reads kube-bench's JSON report and checks it is one of the
// benchmark this package runs.
func ParseReport(b []byte) (*Report, error) {
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("kube-bench's JSON report: %w", err)
	}
	if len(r.Controls) == 0 {
		return nil, fmt.Errorf("kube-bench's JSON report has no controls")
	}
	for _, c := range r.Controls {
		if c.Version != Benchmark {
			return nil, fmt.Errorf("kube-bench's report of %s is of benchmark %q, want %s", c.NodeType, c.Version, Benchmark)
		}
	}
	return &r, nil
}

// Count is how many checks of a section gave each result.
type Count struct {
	Section, Desc          string
	Pass, Fail, Warn, Info int
}

// Counts counts each section's results, in the report's order.
func (r *Report) Counts() []Count {
	var out []Count
	for _, c := range r.Controls {
		for _, g := range c.Groups {
			n := Count{Section: g.Section, Desc: g.Desc}
			for _, res := range g.Results {
				switch res.Status {
				case "PASS":
					n.Pass++
				case "FAIL":
					n.Fail++
				case "WARN":
					n.Warn++
				default:
					n.Info++
				}
			}
			out = append(out, n)
		}
	}
	return out
}

// Results are the report's checks, in its order.
func (r *Report) Results() []Result {
	var out []Result
	for _, c := range r.Controls {
		for _, g := range c.Groups {
			out = append(out, g.Results...)
		}
	}
	return out
}

// Roles are the machines the benchmark runs on, and the kube-bench targets
// of each.
var Roles = []struct{ Name, Targets string }{
	{"etcd", "etcd"},
	{"controller", "master,controlplane,policies"},
	{"worker", "node"},
}

// Row is a row of the table of docs/security.md: a check whose FAIL or
// WARN is left on a role, with its reason and what a user sets to meet it.
type Row struct {
	Check, Role, Result, Reason, ToMeet string
	Line                                int
}

// TableMarker precedes the table in docs/security.md.
const TableMarker = "<!-- the CIS benchmark's results left:"

var checkID = regexp.MustCompile(`^[0-9]+(\.[0-9]+)+$`)

// ParseTable reads the table that follows TableMarker in doc: five columns
// (check, role, result, reason, what a user sets to meet it), one row per
// check and role, each FAIL or WARN with a reason.
func ParseTable(doc string) ([]Row, error) {
	i := strings.Index(doc, TableMarker)
	if i < 0 {
		return nil, fmt.Errorf("no %q marker before the table of results", TableMarker)
	}
	first := strings.Count(doc[:i], "\n") + 1
	lines := strings.Split(doc[i:], "\n")[1:]
	var rows []Row
	var errs []string
	seen := map[string]int{}
	header := 0
	for n, line := range lines {
		line = strings.TrimSpace(line)
		if line == "" && header == 0 {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		no := first + 1 + n
		if header < 2 { // the header and its separator
			header++
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 5 {
			errs = append(errs, fmt.Sprintf("line %d: %d columns, want 5 (check | role | result | reason | what a user sets to meet it)", no, len(cells)))
			continue
		}
		for k := range cells {
			cells[k] = strings.TrimSpace(cells[k])
		}
		r := Row{Check: strings.Trim(cells[0], "`"), Role: cells[1], Result: cells[2], Reason: cells[3], ToMeet: cells[4], Line: no}
		switch {
		case !checkID.MatchString(r.Check):
			errs = append(errs, fmt.Sprintf("line %d: %q is not a check id", no, r.Check))
		case !isRole(r.Role):
			errs = append(errs, fmt.Sprintf("line %d: role %q is none of etcd, controller, worker", no, r.Role))
		case r.Result != "FAIL" && r.Result != "WARN":
			errs = append(errs, fmt.Sprintf("line %d: result %q is neither FAIL nor WARN", no, r.Result))
		case r.Reason == "" || r.ToMeet == "":
			errs = append(errs, fmt.Sprintf("line %d: %s on %s has no reason or no word on meeting it", no, r.Check, r.Role))
		case seen[r.Role+" "+r.Check] != 0:
			errs = append(errs, fmt.Sprintf("line %d: %s on %s is listed on line %d already", no, r.Check, r.Role, seen[r.Role+" "+r.Check]))
		default:
			seen[r.Role+" "+r.Check] = no
			rows = append(rows, r)
		}
	}
	if header < 2 {
		errs = append(errs, "no table follows the marker")
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("the table of results: %s", strings.Join(errs, "; "))
	}
	return rows, nil
}

func isRole(s string) bool {
	for _, r := range Roles {
		if r.Name == s {
			return true
		}
	}
	return false
}

// Compare checks a role's results against the table: every FAIL and WARN
// has its row with that result, and every row of the role is still what it
// says. It returns what is not, each with the row to add or the change to
// make.
func Compare(role string, results []Result, rows []Row) []string {
	want := map[string]Row{}
	for _, r := range rows {
		if r.Role == role {
			want[r.Check] = r
		}
	}
	got := map[string]Result{}
	var problems []string
	for _, res := range results {
		got[res.ID] = res
		if res.Status != "FAIL" && res.Status != "WARN" {
			continue
		}
		row, ok := want[res.ID]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s %s on %s has no row: add | %s | %s | %s | <reason> | <what a user sets to meet it> | (%s; actual %q)",
				res.ID, res.Status, role, res.ID, role, res.Status, res.Desc, firstLine(res.Actual)))
		case row.Result != res.Status:
			problems = append(problems, fmt.Sprintf("%s on %s gives %s, its row (line %d) says %s: %s", res.ID, role, res.Status, row.Line, row.Result, res.Desc))
		}
	}
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		row := want[id]
		res, ok := got[id]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s on %s: its row (line %d) names a check kube-bench did not run there: remove the row", id, role, row.Line))
		case res.Status != "FAIL" && res.Status != "WARN":
			problems = append(problems, fmt.Sprintf("%s on %s now gives %s, its row (line %d) says %s: remove the row", id, role, res.Status, row.Line, row.Result))
		}
	}
	return problems
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 120 {
		s = s[:120] + "..."
	}
	return s
}

// CountsTable is the counts of each role's sections as the Markdown table
// docs/security.md shows.
func CountsTable(counts map[string][]Count) string {
	var b strings.Builder
	b.WriteString("| Role | Section | PASS | FAIL | WARN | INFO |\n|---|---|---|---|---|---|\n")
	for _, r := range Roles {
		for _, c := range counts[r.Name] {
			fmt.Fprintf(&b, "| %s | %s %s | %d | %d | %d | %d |\n", r.Name, c.Section, c.Desc, c.Pass, c.Fail, c.Warn, c.Info)
		}
	}
	return b.String()
}

// DocPath is the guide that holds the table, from the repository's root.
const DocPath = "docs/security.md"

// LoadTable reads the table of docs/security.md in the checkout the
// working directory is in.
func LoadTable() ([]Row, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(root, DocPath))
	if err != nil {
		return nil, err
	}
	rows, err := ParseTable(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", DocPath, err)
	}
	return rows, nil
}
