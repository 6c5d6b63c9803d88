package stages

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/source"
)

// The admin credential comes through the protocol: the admin-credential
// operation runs alone (no stage before it, nothing rendered or
// persisted) in the plugins that declare it, and exactly one must answer.
func TestAdminCredential(t *testing.T) {
	cred := &stage.Credential{CACert: []byte("CA"), Cert: []byte("CERT"), Key: []byte("KEY")}
	answer := func(res *stage.Result) func(context.Context, *stage.Input, func(stage.Event)) (*stage.Result, error) {
		return func(context.Context, *stage.Input, func(stage.Event)) (*stage.Result, error) { return res, nil }
	}
	tests := []struct {
		name      string
		providers map[string]*stage.Result // plugins implementing the operation, and their answer
		wantErr   string
		wantDiag  string
	}{
		{"one provider", map[string]*stage.Result{"pki": {AdminCredential: cred}}, "", ""},
		{"a warning passes on", map[string]*stage.Result{"pki": {AdminCredential: cred, Diagnostics: diag.List{diag.Warningf("expires soon")}}}, "", "expires soon"},
		{"no provider", nil, "no enabled plugin provides the cluster's admin credential", ""},
		{"two providers", map[string]*stage.Result{"pki": {AdminCredential: cred}, "vault": {AdminCredential: cred}},
			"getting the admin credential failed", "plugins pki and vault both provide the cluster's admin credential"},
		{"a fatal", map[string]*stage.Result{"pki": {Diagnostics: diag.List{diag.Fatalf("credentials/pki/admin.key is not there: run kube-aws render first")}}},
			"getting the admin credential failed", "run kube-aws render first"},
		{"no answer", map[string]*stage.Result{"pki": {}}, "plugin pki answered the admin-credential operation without a credential", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			other := h.add("cloudformation", source.Builtin)
			var providers []*fakePlugin
			for _, name := range []string{"pki", "vault"} {
				if res, ok := tt.providers[name]; ok {
					p := h.add(name, source.Builtin, stage.Initialise, stage.AdminCredential)
					p.run = answer(res)
					providers = append(providers, p)
				}
			}
			got, warnings, err := h.session().AdminCredential(context.Background())
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("%v\n%v", err, diagsOf(err))
				}
				if !reflect.DeepEqual(got, cred) {
					t.Errorf("credential %v", got)
				}
			} else if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("got %v, want an error with %q", err, tt.wantErr)
			}
			if tt.wantDiag != "" {
				all := append(warnings, diagsOf(err)...)
				if !strings.Contains(all.Error(), tt.wantDiag) {
					t.Errorf("diagnostics %v, want %q", all, tt.wantDiag)
				}
			}
			// Only the operation ran, only in its providers, on cluster.yaml
			// and the values: nothing rendered, nothing persisted.
			for _, p := range providers {
				if c := p.called(); !reflect.DeepEqual(c, []stage.Name{stage.AdminCredential}) {
					t.Errorf("%s was called for %v", p.cand.Name, c)
				}
				if in := string(p.input(stage.AdminCredential)); strings.Contains(in, `"constructs"`) || strings.Contains(in, `"rendered"`) || !strings.Contains(in, `"config"`) {
					t.Errorf("%s got input %s", p.cand.Name, in)
				}
			}
			if c := other.called(); len(c) != 0 {
				t.Errorf("a plugin without the operation was called for %v", c)
			}
			for _, dir := range []string{filepath.Join(h.dir, ".kube-aws", "state"), filepath.Join(h.dir, "rendered")} {
				if _, err := os.Stat(dir); err == nil {
					t.Errorf("the operation wrote %s", dir)
				}
			}
		})
	}
}
