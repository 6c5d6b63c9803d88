package nodeplan

import (
	"os"
	"path"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// docPlans maps each plan's path to its type: docs/node-agent.md has, for
// each, a section with an example and a table of every field.
var docPlans = map[string]func() Plan{
	SecretsPath:            func() Plan { return &SecretsPlan{} },
	ArtifactsPath:          func() Plan { return &ArtifactsPlan{} },
	CertificatesPath:       func() Plan { return &CertificatesPlan{} },
	VolumesPath:            func() Plan { return &VolumesPlan{} },
	DNSPath:                func() Plan { return &DNSPlan{} },
	AddonsPath:             func() Plan { return &AddonsPlan{} },
	GoalPath:               func() Plan { return &GoalPlan{} },
	ApproverPath:           func() Plan { return &ApproverPlan{} },
	DrainerPath:            func() Plan { return &DrainerPlan{} },
	PodIdentityWebhookPath: func() Plan { return &PodIdentityWebhookPlan{} },
}

// fieldPaths lists every JSON field of t as the doc's tables name them:
// a.b for a nested object, a[].b for a list's items, a.<arch>.b for a map's
// values.
func fieldPaths(t reflect.Type, prefix string, out map[string]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		p := prefix + name
		out[p] = true
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch ft.Kind() {
		case reflect.Struct:
			fieldPaths(ft, p+".", out)
		case reflect.Slice:
			if ft.Elem().Kind() == reflect.Struct {
				fieldPaths(ft.Elem(), p+"[].", out)
			}
		case reflect.Map:
			if ft.Elem().Kind() == reflect.Struct {
				fieldPaths(ft.Elem(), p+".<"+keyName(ft)+">.", out)
			}
		}
	}
}

func keyName(m reflect.Type) string {
	if m.Key() == reflect.TypeOf(Arch("")) {
		return "arch"
	}
	return "key"
}

var (
	sectionHead = regexp.MustCompile("(?m)^### `(/etc/kube-aws/[a-z-]+\\.json)`")
	jsonBlock   = regexp.MustCompile("(?s)```json\n(.*?)```")
	tableField  = regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")
)

// The plan formats in docs/node-agent.md cannot drift from the Go types:
// every example decodes strictly into its type and validates, and every
// section's table lists exactly the type's fields.
func TestDocsMatchTypes(t *testing.T) {
	b, err := os.ReadFile("../../docs/node-agent.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	heads := sectionHead.FindAllStringSubmatchIndex(doc, -1)
	seen := map[string]bool{}
	for i, h := range heads {
		path := doc[h[2]:h[3]]
		end := len(doc)
		if i+1 < len(heads) {
			end = heads[i+1][0]
		}
		if n := strings.Index(doc[h[1]:end], "\n## "); n >= 0 {
			end = h[1] + n
		}
		section := doc[h[1]:end]
		mk, ok := docPlans[path]
		if !ok {
			t.Errorf("docs/node-agent.md documents %s, which is no plan", path)
			continue
		}
		seen[path] = true
		examples := jsonBlock.FindAllStringSubmatch(section, -1)
		if len(examples) == 0 {
			t.Errorf("%s: no JSON example", path)
		}
		for _, ex := range examples {
			if err := Decode([]byte(ex[1]), mk()); err != nil {
				t.Errorf("%s: the example does not decode and validate: %v\n%s", path, err, ex[1])
			}
		}
		want := map[string]bool{}
		fieldPaths(reflect.TypeOf(mk()), "", want)
		got := map[string]bool{}
		for _, m := range tableField.FindAllStringSubmatch(section, -1) {
			got[m[1]] = true
		}
		for _, f := range sorted(want) {
			if !got[f] {
				t.Errorf("%s: field %s is not in the doc's table", path, f)
			}
		}
		for _, f := range sorted(got) {
			if !want[f] {
				t.Errorf("%s: the doc's table has %s, which the type does not", path, f)
			}
		}
	}
	for p := range docPlans {
		if !seen[p] {
			t.Errorf("docs/node-agent.md has no section for %s", p)
		}
	}
	// The status object and the settings are documented too.
	st := map[string]bool{}
	fieldPaths(reflect.TypeOf(Status{}), "", st)
	for f := range st {
		if !strings.Contains(doc, "`"+f+"`") {
			t.Errorf("status field %s is not documented", f)
		}
	}
	for _, v := range (&Settings{}).vars() {
		if !strings.Contains(doc, "`"+v.name+"`") {
			t.Errorf("setting %s is not documented", v.name)
		}
	}
}

func sorted(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// docs/node-agent.md's table of steps is the declarations: every step in
// the order Steps derives, with its plan, whether runcmd starts it, and
// what it needs.
func TestDocsListSteps(t *testing.T) {
	b, err := os.ReadFile("../../docs/node-agent.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(b), "\n### Steps\n")
	section, _, _ = strings.Cut(section, "\n###")
	var rows [][]string
	for _, l := range strings.Split(section, "\n") {
		if strings.HasPrefix(l, "| `") {
			cells := strings.Split(strings.Trim(l, "|"), "|")
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			rows = append(rows, cells)
		}
	}
	var steps []Step
	for _, s := range Steps() {
		if s.Name != Units {
			steps = append(steps, s)
		}
	}
	if len(rows) != len(steps) {
		t.Fatalf("the table has %d steps, %d are declared", len(rows), len(steps))
	}
	for i, s := range steps {
		row := rows[i]
		if row[0] != "`"+s.Name+"`" {
			t.Errorf("row %d is %s, want %s (the declared order)", i, row[0], s.Name)
			continue
		}
		if plan := row[1]; (s.Plan == "" && !strings.HasPrefix(plan, "(")) || (s.Plan != "" && !strings.HasPrefix(plan, "`"+path.Base(s.Plan)+"`")) {
			t.Errorf("%s: plan %s, declared %q", s.Name, plan, s.Plan)
		}
		if strings.Contains(row[2], "runcmd") != s.RunCmd {
			t.Errorf("%s: started by %s, declared RunCmd %v", s.Name, row[2], s.RunCmd)
		}
		var needs []string
		for _, n := range s.Needs {
			if n.Step == Units {
				needs = append(needs, Units)
			} else {
				needs = append(needs, "`"+n.Step+"`")
			}
		}
		if got, want := row[3], strings.Join(needs, ", "); got != want {
			t.Errorf("%s: needs %q, declared %q", s.Name, got, want)
		}
	}
}
