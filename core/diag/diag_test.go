package diag

import (
	"strings"
	"testing"
)

func TestStringShowsWhoWhereAndHint(t *testing.T) {
	cases := []struct {
		name string
		d    Diagnostic
		want string
	}{
		{"bare", Fatalf("broken"), "fatal: broken"},
		{"plugin and stage", Diagnostic{Severity: Warning, Plugin: "dex", Stage: "render", Message: "m"}, "warning [dex/render]: m"},
		{"stage only", Diagnostic{Severity: Fatal, Stage: "render", Message: "m"}, "fatal [render]: m"},
		{"file line col and path", Fatalf("unknown key").InFile("cluster.yaml", 3, 5).At("regoin"), "fatal cluster.yaml:3:5 regoin: unknown key"},
		{"file and line", Fatalf("x").InFile("a.yaml", 7, 0), "fatal a.yaml:7: x"},
		{"a conflict of two plugins shows both", Diagnostic{Severity: Fatal, Plugin: "audit-trail-2", Stage: "initialise", Path: "constructs.patches[1]", Message: "m"}.ConflictWith("audit-trail-1"),
			"fatal [audit-trail-2/initialise, conflicts with audit-trail-1] constructs.patches[1]: m"},
		{"a plugin in conflict with itself is one plugin", Diagnostic{Severity: Fatal, Plugin: "a", Stage: "initialise", Message: "m"}.ConflictWith("a"),
			"fatal [a/initialise]: m"},
		{"conflict reported by another plugin", Diagnostic{Severity: Fatal, Plugin: "dex", Stage: "render", ConflictsWith: "kube2iam", ReportedBy: "helm", Message: "m"},
			"fatal [dex/render, conflicts with kube2iam, reported by helm]: m"},
		{"hint on its own line", Warningf("old flag").WithHint("use --new"), "warning: old flag\n    hint: use --new"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.d.String(); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}

func TestListSeverities(t *testing.T) {
	l := List{Warningf("w1"), Fatalf("f1"), Warningf("w2")}
	if !l.HasFatal() {
		t.Error("HasFatal: want true")
	}
	if f, w := l.Count(); f != 1 || w != 2 {
		t.Errorf("Count: %d fatal %d warning, want 1 and 2", f, w)
	}
	if got := l.Fatals(); len(got) != 1 || got[0].Message != "f1" {
		t.Errorf("Fatals: %v", got)
	}
	if (List{Warningf("w")}).HasFatal() {
		t.Error("a list of warnings has no fatal")
	}
	promoted := l.PromoteWarnings()
	if f, w := promoted.Count(); f != 3 || w != 0 {
		t.Errorf("PromoteWarnings: %d fatal %d warning, want 3 and 0", f, w)
	}
	if !strings.Contains(promoted[0].Hint, "--warnings-as-errors") {
		t.Errorf("a promoted warning says why it is fatal: %q", promoted[0].Hint)
	}
	if l[0].Severity != Warning {
		t.Error("PromoteWarnings changed its input")
	}
	if !strings.HasSuffix(l.Error(), "1 fatal, 2 warning(s)") {
		t.Errorf("Error() ends with a summary: %q", l.Error())
	}
}

func TestWithDefaultsKeepsWhatIsSet(t *testing.T) {
	l := List{Fatalf("a"), {Severity: Fatal, Plugin: "other", Stage: "deploy", Message: "b"}}.WithDefaults("dex", "render")
	if l[0].Plugin != "dex" || l[0].Stage != "render" {
		t.Errorf("defaults not filled: %+v", l[0])
	}
	if l[1].Plugin != "other" || l[1].Stage != "deploy" {
		t.Errorf("set fields overwritten: %+v", l[1])
	}
}

func TestSortFatalsFirstThenByPlace(t *testing.T) {
	l := List{
		Warningf("w").InFile("a", 1, 0),
		Fatalf("f2").InFile("b", 2, 0),
		Fatalf("f1").InFile("b", 1, 0),
		Fatalf("f0").InFile("a", 9, 0),
	}
	l.Sort()
	var got []string
	for _, d := range l {
		got = append(got, d.Message)
	}
	if strings.Join(got, " ") != "f0 f1 f2 w" {
		t.Errorf("order %v, want f0 f1 f2 w", got)
	}
}
