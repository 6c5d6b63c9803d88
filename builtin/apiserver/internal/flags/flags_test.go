package flags

import (
	"strconv"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/builtin/internal/podspec"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
)

func cluster() *config.Cluster {
	return &config.Cluster{ClusterName: "demo", KubernetesVersion: "v1.30.4", Etcd: config.MachineSet{Count: 3}, S3URI: "s3://assets/demo", Region: "eu-west-1",
		Kubernetes: config.Kubernetes{ServiceCIDR: "10.7.0.0/24"}}
}

func flagValue(fs []construct.Flag, name string) (string, bool) {
	for _, f := range fs {
		if f.Name == name {
			return f.Value, true
		}
	}
	return "", false
}

func TestDefaults(t *testing.T) {
	set, eff, diags := Defaults(cluster(), Values{Flags: map[string]string{"--v": "2", "profiling": "true"}})
	if len(diags) != 0 {
		t.Fatalf("diagnostics: %v", diags)
	}
	fs := set.APIServer.Flags
	for name, want := range map[string]string{
		"etcd-servers":             "https://etcd0.demo.internal:2379,https://etcd1.demo.internal:2379,https://etcd2.demo.internal:2379",
		"service-cluster-ip-range": "10.7.0.0/24", // kubernetes.serviceCIDR
		"authorization-mode":       "Node,RBAC",
		"secure-port":              "443",
		"tls-cert-file":            "/etc/kubernetes/pki/apiserver.crt",
		"etcd-cafile":              "/etc/kubernetes/pki/etcd/ca.crt",
		"service-account-key-file": "/etc/kubernetes/pki/sa.pub",
		// Where AWS STS reads the discovery document: the s3URI's oidc/.
		"service-account-issuer":   "https://assets.s3.eu-west-1.amazonaws.com/demo/oidc",
		"service-account-jwks-uri": "https://assets.s3.eu-west-1.amazonaws.com/demo/oidc/keys.json",
		"v":                        "2",    // user flag, dashes trimmed
		"profiling":                "true", // user flag replaces the default
	} {
		if got, ok := flagValue(fs, name); !ok || got != want {
			t.Errorf("--%s = %q (present %v), want %q", name, got, ok, want)
		}
	}
	if v, ok := flagValue(fs, "advertise-address"); ok {
		t.Errorf("--advertise-address=%q is rendered; it is the machine's own address, left to kube-apiserver", v)
	}
	for _, f := range fs {
		if f.Value == "" {
			t.Errorf("--%s is rendered with an empty value", f.Name)
		}
	}
	if v, _ := flagValue(fs, "enable-admission-plugins"); !strings.Contains(v, "NodeRestriction") {
		t.Errorf("admission plugins %q lack NodeRestriction", v)
	}
	for i := 1; i < len(fs); i++ {
		if fs[i-1].Name >= fs[i].Name {
			t.Fatalf("flags not sorted: %s before %s", fs[i-1].Name, fs[i].Name)
		}
	}
	if len(eff.EtcdEndpoints) != 3 || eff.SecurePort != 443 {
		t.Errorf("effective values lack the defaults: %+v", eff)
	}
	// Every file a flag names is contributed to the controllers and
	// mounted into the API server's pod.
	for flag, path := range map[string]string{"audit-policy-file": AuditPolicyPath, "admission-control-config-file": AdmissionConfigPath} {
		if v, _ := flagValue(fs, flag); v != path {
			t.Errorf("--%s = %q, want %s", flag, v, path)
		}
		if !hasFile(set, path) || !hasVolume(set, path) {
			t.Errorf("%s (--%s) must be contributed to the controllers and mounted: files %+v", path, flag, set.Files)
		}
	}
	// The defaults pass their own check and make a valid static pod.
	if d := Check(fs, "v1.30.4"); len(d) != 0 {
		t.Errorf("defaults fail the check: %v", d)
	}
	if _, err := podspec.StaticPod(fs, set.APIServer.Volumes, "v1.30.4"); err != nil {
		t.Errorf("defaults make no static pod: %v", err)
	}
	// Every supported version accepts the defaults.
	for m := OldestMinor; m <= NewestMinor; m++ {
		v := "1." + strconv.Itoa(m) + ".0"
		if d := Check(fs, v); len(d) != 0 {
			t.Errorf("defaults fail the check for %s: %v", v, d)
		}
	}
}

func hasFile(set construct.Set, path string) bool {
	for _, f := range set.Files {
		if f.Path == path && f.Target.Role == construct.Controller && f.Mode == "0600" {
			return true
		}
	}
	return false
}

func hasVolume(set construct.Set, path string) bool {
	for _, v := range set.APIServer.Volumes {
		if v.HostPath == path && v.MountPath == path && v.ReadOnly {
			return true
		}
	}
	return false
}

func TestDefaultsVersion(t *testing.T) {
	tests := []struct {
		version  string
		severity diag.Severity // "" means no diagnostic
	}{
		{"v1.30.4", ""},
		{"1.27.0", ""},
		{"1.26.3", diag.Fatal},
		{"1.99.0", diag.Warning},
		{"latest", diag.Fatal},
		{"", diag.Fatal},
	}
	for _, tt := range tests {
		c := cluster()
		c.KubernetesVersion = tt.version
		set, _, d := Defaults(c, Values{})
		if tt.severity == "" {
			if len(d) != 0 {
				t.Errorf("%q: unexpected %v", tt.version, d)
			}
			continue
		}
		if len(d) != 1 || d[0].Severity != tt.severity || d[0].Path != "kubernetesVersion" {
			t.Errorf("%q: diagnostics %v, want one %s at kubernetesVersion", tt.version, d, tt.severity)
		}
		if tt.severity == diag.Fatal && !set.IsEmpty() {
			t.Errorf("%q: a fatal version must contribute nothing", tt.version)
		}
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name     string
		flag     string
		version  string
		severity diag.Severity
		message  string
		hint     string
	}{
		{"known", "etcd-servers", "1.30.0", "", "", ""},
		{"unknown typo", "etcd-server", "1.30.0", diag.Fatal, "unknown kube-apiserver flag --etcd-server", "did you mean --etcd-servers?"},
		{"unknown far", "make-it-fast", "1.30.0", diag.Fatal, "unknown kube-apiserver flag --make-it-fast", "kube-apiserver --help"},
		{"removed insecure-port", "insecure-port", "1.30.0", diag.Fatal, "removed in Kubernetes 1.24", "--secure-port"},
		{"removed swagger", "enable-swagger-ui", "1.30.0", diag.Fatal, "removed in Kubernetes 1.14", "/openapi/v2"},
		{"removed klog", "logtostderr", "1.28.0", diag.Fatal, "removed in Kubernetes 1.26", "--logging-format"},
		{"deprecated admission-control", "admission-control", "1.30.0", diag.Warning, "deprecated since Kubernetes 1.10", "--enable-admission-plugins"},
		{"deprecated cloud-provider", "cloud-provider", "1.30.0", diag.Warning, "deprecated", "cloud-controller-manager"},
		{"removed cloud-provider", "cloud-provider", "1.34.4", diag.Fatal, "removed in Kubernetes 1.33", "cloud-controller-manager"},
		{"too new for version", "authentication-config", "1.28.0", diag.Fatal, "needs Kubernetes 1.29", ""},
		{"available in version", "authentication-config", "1.29.0", "", "", ""},
		{"newer than the table checks as newest", "authentication-config", "1.40.0", "", "", ""},
		{"newer than the table still finds removed flags", "insecure-port", "1.40.0", diag.Fatal, "removed in Kubernetes 1.24", ""},
		{"dashes", "--etcd-servers", "1.30.0", diag.Fatal, "without leading dashes", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Check([]construct.Flag{{Name: "secure-port", Value: "443"}, {Name: tt.flag, Value: "x", Plugin: "extras"}}, tt.version)
			if tt.severity == "" {
				if len(d) != 0 {
					t.Fatalf("unexpected diagnostics: %v", d)
				}
				return
			}
			if len(d) != 1 {
				t.Fatalf("diagnostics = %v, want exactly one", d)
			}
			got := d[0]
			if got.Severity != tt.severity || !strings.Contains(got.Message, tt.message) || !strings.Contains(got.Hint, tt.hint) {
				t.Errorf("got %s %q hint %q; want %s containing %q, hint containing %q", got.Severity, got.Message, got.Hint, tt.severity, tt.message, tt.hint)
			}
			if got.Plugin != "extras" {
				t.Errorf("plugin = %q, want the plugin that set the flag", got.Plugin)
			}
			if got.Path != "constructs.apiServer.flags["+tt.flag+"]" {
				t.Errorf("path = %q, want the flag by name, as core/merge names it", got.Path)
			}
		})
	}
}

func TestCheckReportsEveryProblemOnce(t *testing.T) {
	fs := []construct.Flag{
		{Name: "insecure-port", Value: "0"},
		{Name: "admission-control", Value: "A"},
		{Name: "admission-control", Value: "B"}, // one warning per flag, not per value
		{Name: "nope", Value: ""},
	}
	d := Check(fs, "1.31.2")
	f, w := d.Count()
	if f != 2 || w != 1 {
		t.Errorf("got %d fatal, %d warning: %v; want 2 and 1", f, w, d)
	}
}

// TestCheckRefusesEmptyValues: a flag rendered as --name= (issue 11: the
// API server refused --advertise-address=) is a render fatal naming the
// flag and the plugin that set it.
func TestCheckRefusesEmptyValues(t *testing.T) {
	for _, name := range []string{"advertise-address", "etcd-servers", "v"} {
		d := Check([]construct.Flag{{Name: "secure-port", Value: "443"}, {Name: name, Value: "", Plugin: "extras"}}, "1.34.4")
		if len(d) != 1 || d[0].Severity != diag.Fatal || d[0].Plugin != "extras" ||
			!strings.Contains(d[0].Message, "--"+name+" has an empty value") || d[0].Path != "constructs.apiServer.flags["+name+"]" {
			t.Errorf("--%s=: got %v; want one fatal naming the flag, at its path, about plugin extras", name, d)
		}
	}
}
