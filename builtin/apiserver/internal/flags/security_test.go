package flags

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kube-aws/kube-aws/builtin/internal/podspec"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
)

func fileContent(set construct.Set, path string) (string, bool) {
	for _, f := range set.Files {
		if f.Path == path {
			return f.Content, true
		}
	}
	return "", false
}

// TestSecuritySettings: each setting's default, each way to change it, and
// what a wrong value says.
func TestSecuritySettings(t *testing.T) {
	off := false
	tests := []struct {
		name    string
		version string
		values  Values
		// flags: want value; "" means the flag is absent.
		flags map[string]string
		// files: path -> substring of its content; "" means no such file.
		files    map[string]string
		severity diag.Severity
		path     string // of the diagnostic
		message  string
	}{
		{name: "defaults", version: "1.34.4",
			flags: map[string]string{
				"audit-log-path": AuditLogDir + "/audit.log", "audit-log-maxage": "30", "audit-log-maxbackup": "10", "audit-log-maxsize": "100",
				"audit-policy-file": AuditPolicyPath, "admission-control-config-file": AdmissionConfigPath,
				"authentication-config": AuthenticationConfigPath, "anonymous-auth": "",
				"tls-cipher-suites": strings.Join(names.TLSCipherSuites(), ","), "service-account-lookup": "true", "profiling": "false",
				"kubelet-certificate-authority": "/etc/kubernetes/pki/ca.crt",
			},
			files: map[string]string{
				AuditPolicyPath:          "omitStages:\n  - RequestReceived",
				AdmissionConfigPath:      "enforce: \"baseline\"\n        enforce-version: latest\n        warn: \"restricted\"",
				AuthenticationConfigPath: "conditions:\n    - path: /healthz\n    - path: /livez\n    - path: /readyz\n",
			}},
		{name: "audit off", version: "1.34.4", values: Values{Audit: &Audit{Enabled: &off}},
			flags: map[string]string{"audit-log-path": "", "audit-policy-file": "", "audit-log-maxage": ""},
			files: map[string]string{AuditPolicyPath: ""}},
		{name: "own audit policy", version: "1.34.4",
			values: Values{Audit: &Audit{Policy: map[string]any{"apiVersion": "audit.k8s.io/v1", "kind": "Policy", "rules": []any{map[string]any{"level": "RequestResponse"}}}}},
			flags:  map[string]string{"audit-policy-file": AuditPolicyPath},
			files:  map[string]string{AuditPolicyPath: "- level: RequestResponse"}},
		{name: "audit policy of another kind", version: "1.34.4",
			values:   Values{Audit: &Audit{Policy: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}},
			severity: diag.Fatal, path: "plugins.apiserver.values.audit.policy", message: "want audit.k8s.io/v1, Policy"},
		{name: "audit policy without rules", version: "1.34.4",
			values:   Values{Audit: &Audit{Policy: map[string]any{"apiVersion": "audit.k8s.io/v1", "kind": "Policy"}}},
			severity: diag.Fatal, path: "plugins.apiserver.values.audit.policy", message: "no rules"},
		{name: "user's rotation flags win", version: "1.34.4", values: Values{Flags: map[string]string{"audit-log-maxage": "90"}},
			flags: map[string]string{"audit-log-maxage": "90", "audit-log-maxbackup": "10"}},
		{name: "user's own policy file", version: "1.34.4", values: Values{Flags: map[string]string{"audit-policy-file": "/etc/mine.yaml"}},
			flags: map[string]string{"audit-policy-file": "/etc/mine.yaml", "audit-log-path": AuditLogDir + "/audit.log"},
			files: map[string]string{AuditPolicyPath: ""}},
		{name: "pod security levels", version: "1.34.4",
			values: Values{PodSecurity: &PodSecurity{Enforce: "restricted", Warn: "restricted", Audit: "baseline", ExemptNamespaces: []string{"kube-system", "kube-flannel"}}},
			files:  map[string]string{AdmissionConfigPath: "enforce: \"restricted\"\n        enforce-version: latest\n        warn: \"restricted\"\n        warn-version: latest\n        audit: \"baseline\"\n        audit-version: latest\n      exemptions:\n        usernames: []\n        runtimeClasses: []\n        namespaces: [\"kube-system\", \"kube-flannel\"]\n"}},
		{name: "pod security off", version: "1.34.4",
			values: Values{PodSecurity: &PodSecurity{Enforce: "privileged", Warn: "privileged", Audit: "privileged", ExemptNamespaces: []string{}}},
			files:  map[string]string{AdmissionConfigPath: "namespaces: []"}},
		{name: "pod security level unknown", version: "1.34.4", values: Values{PodSecurity: &PodSecurity{Enforce: "strict"}},
			severity: diag.Fatal, path: "plugins.apiserver.values.podSecurity.enforce", message: `"strict" is not a Pod Security level`},
		{name: "exempt namespace not a name", version: "1.34.4", values: Values{PodSecurity: &PodSecurity{ExemptNamespaces: []string{"kube-system", "Kube_Flannel"}}},
			severity: diag.Fatal, path: "plugins.apiserver.values.podSecurity.exemptNamespaces[1]", message: "not a namespace name"},
		{name: "kube-system not exempt", version: "1.34.4", values: Values{PodSecurity: &PodSecurity{ExemptNamespaces: []string{"tools"}}},
			files:    map[string]string{AdmissionConfigPath: `namespaces: ["tools"]`},
			severity: diag.Warning, path: "plugins.apiserver.values.podSecurity.exemptNamespaces", message: "leaves out kube-system"},
		{name: "user's own admission configuration", version: "1.34.4", values: Values{Flags: map[string]string{"admission-control-config-file": "/etc/mine.yaml"}},
			flags: map[string]string{"admission-control-config-file": "/etc/mine.yaml"},
			files: map[string]string{AdmissionConfigPath: ""}},
		{name: "anonymous rbac", version: "1.34.4", values: Values{AnonymousAuth: AnonymousRBAC},
			flags: map[string]string{"anonymous-auth": "true", "authentication-config": ""},
			files: map[string]string{AuthenticationConfigPath: ""}},
		{name: "anonymous off", version: "1.34.4", values: Values{AnonymousAuth: AnonymousOff},
			flags:    map[string]string{"anonymous-auth": "false", "authentication-config": ""},
			severity: diag.Warning, path: "plugins.apiserver.values.anonymousAuth", message: "refuses the load balancer's health check"},
		{name: "anonymous mode unknown", version: "1.34.4", values: Values{AnonymousAuth: "some"},
			severity: diag.Fatal, path: "plugins.apiserver.values.anonymousAuth", message: `"some" is not a mode`},
		{name: "health before anonymous paths", version: "1.31.2",
			flags: map[string]string{"anonymous-auth": "true", "authentication-config": ""},
			files: map[string]string{AuthenticationConfigPath: ""}},
		{name: "health from 1.32", version: "1.32.0",
			flags: map[string]string{"authentication-config": AuthenticationConfigPath, "anonymous-auth": ""}},
		{name: "user's own authentication configuration", version: "1.34.4", values: Values{Flags: map[string]string{"authentication-config": "/etc/mine.yaml"}},
			flags: map[string]string{"authentication-config": "/etc/mine.yaml", "anonymous-auth": ""},
			files: map[string]string{AuthenticationConfigPath: ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cluster()
			c.KubernetesVersion = tt.version
			set, eff, d := Defaults(c, tt.values)
			switch {
			case tt.severity == "" && len(d) != 0:
				t.Fatalf("unexpected diagnostics: %v", d)
			case tt.severity != "" && (len(d) != 1 || d[0].Severity != tt.severity || d[0].Path != tt.path || !strings.Contains(d[0].Message, tt.message) || d[0].Hint == ""):
				t.Fatalf("diagnostics %v; want one %s at %s saying %q, with a hint", d, tt.severity, tt.path, tt.message)
			}
			if tt.severity == diag.Fatal {
				if !set.IsEmpty() {
					t.Errorf("a fatal value must contribute nothing")
				}
				return
			}
			for name, want := range tt.flags {
				got, ok := flagValue(set.APIServer.Flags, name)
				if want == "" && ok {
					t.Errorf("--%s=%s is rendered, want it absent", name, got)
				}
				if want != "" && got != want {
					t.Errorf("--%s = %q, want %q", name, got, want)
				}
			}
			for path, want := range tt.files {
				got, ok := fileContent(set, path)
				if want == "" && ok {
					t.Errorf("%s is contributed, want it absent", path)
				}
				if want != "" && !strings.Contains(got, want) {
					t.Errorf("%s:\n%s\nwant it to hold %q", path, got, want)
				}
				if want != "" && !hasVolume(set, path) {
					t.Errorf("%s is not mounted into the API server's pod", path)
				}
			}
			// Every file contributed is valid YAML and mounted; the flags
			// pass the render check and make a static pod.
			for _, f := range set.Files {
				var doc map[string]any
				if err := yaml.Unmarshal([]byte(f.Content), &doc); err != nil || doc["kind"] == nil {
					t.Errorf("%s is not a YAML document with a kind: %v", f.Path, err)
				}
				if !hasVolume(set, f.Path) {
					t.Errorf("%s is not mounted into the API server's pod", f.Path)
				}
			}
			if d := Check(set.APIServer.Flags, tt.version); len(d) != 0 {
				t.Errorf("the flags fail the render check: %v", d)
			}
			if _, err := podspec.StaticPod(set.APIServer.Flags, set.APIServer.Volumes, tt.version); err != nil {
				t.Errorf("no static pod: %v", err)
			}
			// The effective values say what was chosen.
			if eff.Audit == nil || eff.Audit.Enabled == nil || eff.PodSecurity == nil || eff.PodSecurity.Enforce == "" || eff.AnonymousAuth == "" {
				t.Errorf("effective values lack the settings' defaults: %+v", eff)
			}
		})
	}
}

// TestSecuritySchema: the plugin's schema is JSON and names every setting.
func TestSecuritySchema(t *testing.T) {
	var s struct {
		Properties map[string]any `json:"properties"`
	}
	if err := yaml.Unmarshal([]byte(Schema), &s); err != nil {
		t.Fatalf("schema: %v", err)
	}
	for _, k := range []string{"audit", "podSecurity", "anonymousAuth", "flags"} {
		if s.Properties[k] == nil {
			t.Errorf("the schema has no %s", k)
		}
	}
}

// TestCheckExclusiveFlags: --authentication-config with --oidc-* flags is a
// render fatal naming both plugins; either alone is fine.
func TestCheckExclusiveFlags(t *testing.T) {
	config := construct.Flag{Name: "authentication-config", Value: AuthenticationConfigPath, Plugin: "apiserver"}
	oidc := construct.Flag{Name: "oidc-issuer-url", Value: "https://dex.example.com", Plugin: "dex"}
	anon := construct.Flag{Name: "anonymous-auth", Value: "true", Plugin: "apiserver"}
	tests := []struct {
		name  string
		flags []construct.Flag
		fatal bool
	}{
		{"config alone", []construct.Flag{config}, false},
		{"oidc alone", []construct.Flag{anon, oidc}, false},
		{"both", []construct.Flag{config, oidc}, true},
		{"both, oidc first", []construct.Flag{oidc, config}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Check(tt.flags, "1.34.4")
			if !tt.fatal {
				if len(d) != 0 {
					t.Fatalf("unexpected diagnostics: %v", d)
				}
				return
			}
			if len(d) != 1 || d[0].Severity != diag.Fatal || !strings.Contains(d[0].Message, "plugin apiserver") || !strings.Contains(d[0].Message, "plugin dex") ||
				!strings.Contains(d[0].Hint, "anonymousAuth: rbac") {
				t.Errorf("diagnostics %v; want one fatal naming both plugins, with the anonymousAuth hint", d)
			}
		})
	}
}
