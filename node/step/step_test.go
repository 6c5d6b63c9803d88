package step

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/report"
)

// fake finds the changes it is given and counts its Apply calls.
type fake struct {
	changes Changes
	err     error
	applied int
}

func (*fake) Name() string        { return "fake" }
func (*fake) Flags(*flag.FlagSet) {}
func (f *fake) Check(context.Context, *agent.Env) (Changes, error) {
	return f.changes, f.err
}
func (f *fake) Apply(_ context.Context, _ *agent.Env, c Changes) error {
	f.applied++
	if len(c) != len(f.changes) {
		return errors.New("Apply was not given Check's changes")
	}
	return nil
}

func env() *agent.Env {
	var out bytes.Buffer
	return &agent.Env{Step: "fake", Report: &report.Reporter{Out: &out}}
}

var two = Changes{
	{Action: "issue", Target: "/etc/a.pem", Detail: "CN a", Data: 1},
	{Action: "mount", Target: "/var/lib/etcd"},
}

func TestRun(t *testing.T) {
	tests := []struct {
		name    string
		step    *fake
		applied int
		err     string
	}{
		{"changes are applied", &fake{changes: two}, 1, ""},
		{"nothing to change, nothing to apply", &fake{}, 0, ""},
		{"a failed check applies nothing", &fake{changes: two, err: errors.New("bad plan")}, 0, "bad plan"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Run(t.Context(), env(), tt.step)
			if (err == nil) != (tt.err == "") || (err != nil && err.Error() != tt.err) || tt.step.applied != tt.applied {
				t.Errorf("err %v, applied %d times", err, tt.step.applied)
			}
		})
	}
}

func TestDryRun(t *testing.T) {
	tests := []struct {
		name    string
		changes Changes
		json    bool
		want    string
	}{
		{"lines", two, false, "issue /etc/a.pem: CN a\nmount /var/lib/etcd\n"},
		{"json", two, true, `{
  "step": "fake",
  "changes": [
    {
      "action": "issue",
      "target": "/etc/a.pem",
      "detail": "CN a"
    },
    {
      "action": "mount",
      "target": "/var/lib/etcd"
    }
  ]
}
`},
		{"nothing, in lines", nil, false, ""},
		{"nothing, in json", nil, true, "{\n  \"step\": \"fake\",\n  \"changes\": []\n}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fake{changes: tt.changes}
			var out bytes.Buffer
			if err := DryRun(t.Context(), env(), f, &out, tt.json); err != nil {
				t.Fatal(err)
			}
			if out.String() != tt.want || f.applied != 0 {
				t.Errorf("printed %q, applied %d times; want %q", out.String(), f.applied, tt.want)
			}
		})
	}
	err := DryRun(t.Context(), env(), &fake{err: agent.BadInput(errors.New("no such field"))}, &bytes.Buffer{}, false)
	if agent.ExitCode(err) != agent.ExitBadInput || !strings.Contains(err.Error(), "no such field") {
		t.Errorf("a plan the step cannot read: %v", err)
	}
}
