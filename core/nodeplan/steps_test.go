package nodeplan

import (
	"strings"
	"testing"
)

// The boot flow every role's runcmd follows, and kube-aws-node's list.
func TestStepsOrder(t *testing.T) {
	var names []string
	pos := map[string]int{}
	for i, s := range Steps() {
		names = append(names, s.Name)
		pos[s.Name] = i
	}
	want := "boot volumes secrets artifacts certificates dns units addons wait wait-api etcd-snapshot approve-csrs drainer pod-identity-webhook"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("order %s\nwant  %s", got, want)
	}
	for _, s := range Steps() {
		for _, n := range s.Needs {
			if pos[n.Step] >= pos[s.Name] {
				t.Errorf("%s comes before %s, which it needs", s.Name, n.Step)
			}
			if n.Why == "" {
				t.Errorf("%s needs %s and does not say why", s.Name, n.Step)
			}
		}
		if s.Name != Units && s.Summary == "" {
			t.Errorf("step %s has no summary", s.Name)
		}
		if s.RunCmd && s.Plan == "" {
			t.Errorf("runcmd calls %s when the role has its plan, and it declares none", s.Name)
		}
	}
	if d, ok := StepNamed(StepWaitAPI); !ok || d.Name != "wait-api" {
		t.Errorf("StepNamed(wait-api) = %+v, %v", d, ok)
	}
	if _, ok := StepNamed("frobnicate"); ok {
		t.Error("StepNamed found an undeclared step")
	}
}

func TestOrder(t *testing.T) {
	need := func(names ...string) []Need {
		var out []Need
		for _, n := range names {
			out = append(out, Need{Step: n, Why: "because"})
		}
		return out
	}
	tests := []struct {
		name  string
		decls []Step
		want  string // the order, or the error
	}{
		{"declared order where free", []Step{{Name: "c"}, {Name: "a"}, {Name: "b"}}, "c a b"},
		{"a need moves a step after", []Step{{Name: "c", Needs: need("b")}, {Name: "a"}, {Name: "b"}}, "a b c"},
		{"the first ready comes first", []Step{{Name: "d", Needs: need("a")}, {Name: "c"}, {Name: "a"}, {Name: "b", Needs: need("d")}}, "c a d b"},
		{"missing need", []Step{{Name: "a", Needs: need("b")}}, "step a needs b, which is not declared"},
		{"declared twice", []Step{{Name: "a"}, {Name: "a"}}, "step a is declared twice"},
		{"needs itself", []Step{{Name: "a", Needs: need("a")}}, "the steps' needs go round: a needs a (because)"},
		{"cycle", []Step{{Name: "x"}, {Name: "a", Needs: need("x", "c")}, {Name: "b", Needs: need("a")}, {Name: "c", Needs: need("b")}},
			"the steps' needs go round: a needs c (because), c needs b (because), b needs a (because)"},
		{"cycle behind a step", []Step{{Name: "a", Needs: need("b")}, {Name: "b", Needs: need("c")}, {Name: "c", Needs: need("b")}},
			"the steps' needs go round: b needs c (because), c needs b (because)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps, err := Order(tt.decls)
			got := ""
			if err != nil {
				got = err.Error()
			} else {
				for _, s := range steps {
					got += " " + s.Name
				}
				got = strings.TrimSpace(got)
			}
			if got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
