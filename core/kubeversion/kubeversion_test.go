package kubeversion

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in, want string
		minor    int
		err      bool
	}{
		{in: "1.30.4", want: "v1.30.4", minor: 30},
		{in: "v1.31.0", want: "v1.31.0", minor: 31},
		{in: "v1.31.0-rc.1", want: "v1.31.0-rc.1", minor: 31},
		{in: "1.29", want: "v1.29", minor: 29},
		{in: "", err: true},
		{in: "2.0.0", err: true},
		{in: "1", err: true},
		{in: "1.x.0", err: true},
		{in: "1.30-rc.1", err: true},
	}
	for _, tt := range tests {
		v, err := Parse(tt.in)
		if tt.err {
			if err == nil {
				t.Errorf("Parse(%q) = %v, want an error", tt.in, v)
			}
			continue
		}
		if err != nil || v.String() != tt.want || v.Minor != tt.minor {
			t.Errorf("Parse(%q) = %v (minor %d), %v; want %s", tt.in, v, v.Minor, err, tt.want)
		}
	}
}

func TestCheckUpgrade(t *testing.T) {
	tests := []struct {
		from, to string
		// rule is a fragment of the refusal, "" when the change is allowed.
		rule, hint string
	}{
		{from: "1.34.4", to: "1.34.4"},
		{from: "1.33.13", to: "1.34.4"},
		{from: "1.33.13", to: "1.33.14"},
		// A patch downgrade within a minor leaves a faulty patch release.
		{from: "1.34.4", to: "1.34.2"},
		{from: "1.33.13", to: "1.34.0-rc.1"},
		{from: "1.34.0-rc.1", to: "1.34.4"},
		{from: "1.33", to: "1.34.4"},
		{from: "1.32.5", to: "1.34.4", rule: "skips 1.33: Kubernetes upgrades one minor version at a time", hint: "upgrade to 1.33 first: set kubernetesVersion to a 1.33.x release, run kube-aws up, then set 1.34.4"},
		{from: "1.30.0", to: "1.34.4", rule: "skips 1.31", hint: "upgrade to 1.31 first"},
		{from: "1.34.4", to: "1.33.13", rule: "downgrades the minor version from 1.34 to 1.33: Kubernetes does not support a minor downgrade", hint: "keep kubernetesVersion at a 1.34.x release"},
		{from: "1.34.0", to: "1.32.9", rule: "downgrades the minor version from 1.34 to 1.32", hint: "make a new cluster"},
	}
	if err := CheckUpgrade(Version{Major: 1, Minor: 34, Patch: 4, HasPatch: true}, Version{Major: 2, Minor: 0, HasPatch: true}); err == nil ||
		!strings.Contains(err.Error(), "changes the major version") {
		t.Errorf("a major version change: %v", err)
	}
	for _, tt := range tests {
		t.Run(tt.from+"->"+tt.to, func(t *testing.T) {
			from, err := Parse(tt.from)
			if err != nil {
				t.Fatal(err)
			}
			to, err := Parse(tt.to)
			if err != nil {
				t.Fatal(err)
			}
			err = CheckUpgrade(from, to)
			if tt.rule == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var skew *SkewError
			if !errors.As(err, &skew) {
				t.Fatalf("CheckUpgrade = %v, want a *SkewError", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, from.String()) || !strings.Contains(msg, to.String()) || !strings.Contains(msg, tt.rule) ||
				!strings.Contains(msg, "upstream version skew policy") {
				t.Errorf("message %q: want both versions, the rule %q and the policy", msg, tt.rule)
			}
			if !strings.Contains(skew.Hint, tt.hint) {
				t.Errorf("hint %q, want %q", skew.Hint, tt.hint)
			}
			if skew.From != from || skew.To != to {
				t.Errorf("versions %v -> %v", skew.From, skew.To)
			}
		})
	}
}
