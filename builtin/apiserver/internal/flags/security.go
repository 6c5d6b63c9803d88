package flags

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
)

// The API server's security settings a reviewer (and the CIS Kubernetes
// Benchmark) looks for, each with a value in cluster.yaml: the audit log,
// Pod Security Admission and what anonymous requests may reach.

// Paths of the configuration files the settings write on the controllers.
const (
	AdmissionConfigPath      = "/etc/kubernetes/admission-config.yaml"
	AuthenticationConfigPath = "/etc/kubernetes/authentication-config.yaml"
)

// Audit is values.audit.
type Audit struct {
	// Enabled false turns the audit log off (no --audit-* flags).
	Enabled *bool `json:"enabled,omitempty"`
	// Policy replaces kube-aws's audit policy: an audit.k8s.io/v1 Policy.
	Policy map[string]any `json:"policy,omitempty"`
}

// PodSecurity is values.podSecurity: the cluster-wide Pod Security
// Admission levels, and the namespaces they do not apply to.
type PodSecurity struct {
	Enforce          string   `json:"enforce"`
	Warn             string   `json:"warn"`
	Audit            string   `json:"audit"`
	ExemptNamespaces []string `json:"exemptNamespaces"`
}

// Defaults of the settings.
const (
	DefaultEnforce = "baseline"
	DefaultWarn    = "restricted"
	DefaultAudit   = "restricted"
	// SystemNamespace is exempt from Pod Security by default: the
	// add-ons there (kube-proxy, the cloud controller manager) run on the
	// host's network, as the control plane's static pods do.
	SystemNamespace = "kube-system"
)

// Anonymous request modes (values.anonymousAuth).
const (
	// AnonymousHealth lets anonymous requests reach the health endpoints
	// and nothing else: the load balancer's health check (HTTPS /readyz,
	// no credentials) and the kubelet's probes of the API server need them.
	AnonymousHealth = "health"
	// AnonymousRBAC is --anonymous-auth=true: anonymous requests reach what
	// RBAC grants system:unauthenticated (by default the health endpoints
	// and /version).
	AnonymousRBAC = "rbac"
	// AnonymousOff is --anonymous-auth=false: every request needs
	// credentials, the health check and the probes included.
	AnonymousOff = "off"
)

// healthPaths are the paths anonymous requests may reach in mode health.
var healthPaths = []string{"/healthz", "/livez", "/readyz"}

// anonymousPathsMinor is the first minor version whose kube-apiserver
// limits anonymous requests to paths (AuthenticationConfiguration's
// anonymous conditions, beta and on by default from 1.32, GA in 1.34).
const anonymousPathsMinor = 32

var podSecurityLevels = []string{"privileged", "baseline", "restricted"}

// securitySchema is the part of Schema for the settings.
const securitySchema = `
    "audit": {
      "type": "object",
      "additionalProperties": false,
      "description": "the API server's audit log on the controllers",
      "properties": {
        "enabled": {"type": "boolean", "description": "default true; false writes no audit log"},
        "policy": {"type": "object", "description": "an audit.k8s.io/v1 Policy replacing kube-aws's"}
      }
    },
    "podSecurity": {
      "type": "object",
      "additionalProperties": false,
      "description": "cluster-wide Pod Security Admission levels",
      "properties": {
        "enforce": {"enum": ["privileged", "baseline", "restricted"], "description": "pods violating this level are refused; default baseline"},
        "warn": {"enum": ["privileged", "baseline", "restricted"], "description": "the client is warned of violations of this level; default restricted"},
        "audit": {"enum": ["privileged", "baseline", "restricted"], "description": "violations of this level are annotated in the audit log; default restricted"},
        "exemptNamespaces": {"type": "array", "items": {"type": "string"}, "description": "namespaces no level applies to; default [kube-system]"}
      }
    },
    "anonymousAuth": {"enum": ["health", "rbac", "off"], "description": "what anonymous requests reach: the health endpoints only (default), what RBAC allows, or nothing"}`

// dnsLabel is a namespace name.
var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// securityDefaults fills the settings' defaults into v and checks them.
func securityDefaults(v *Values) diag.List {
	var diags diag.List
	const at = "plugins.apiserver.values."
	if v.Audit == nil {
		v.Audit = &Audit{}
	}
	if v.Audit.Enabled == nil {
		on := true
		v.Audit.Enabled = &on
	}
	if v.Audit.Policy != nil {
		if err := checkAuditPolicy(v.Audit.Policy); err != nil {
			diags = append(diags, diag.Fatalf("audit policy: %v", err).At(at+"audit.policy").
				WithHint("give an audit.k8s.io/v1 Policy (apiVersion, kind: Policy, rules), or leave policy out for kube-aws's"))
		}
	}
	if v.PodSecurity == nil {
		v.PodSecurity = &PodSecurity{}
	}
	ps := v.PodSecurity
	for _, l := range []struct {
		name  string
		level *string
		def   string
	}{{"enforce", &ps.Enforce, DefaultEnforce}, {"warn", &ps.Warn, DefaultWarn}, {"audit", &ps.Audit, DefaultAudit}} {
		if *l.level == "" {
			*l.level = l.def
		}
		if !slices.Contains(podSecurityLevels, *l.level) {
			diags = append(diags, diag.Fatalf("podSecurity.%s %q is not a Pod Security level", l.name, *l.level).At(at+"podSecurity."+l.name).
				WithHint("use privileged, baseline or restricted"))
		}
	}
	if ps.ExemptNamespaces == nil {
		ps.ExemptNamespaces = []string{SystemNamespace}
	}
	for i, ns := range ps.ExemptNamespaces {
		if !dnsLabel.MatchString(ns) {
			diags = append(diags, diag.Fatalf("podSecurity.exemptNamespaces[%d] %q is not a namespace name", i, ns).
				At(fmt.Sprintf("%spodSecurity.exemptNamespaces[%d]", at, i)).WithHint("a namespace is a DNS label: lower-case letters, digits and '-'"))
		}
	}
	if ps.Enforce != "privileged" && !slices.Contains(ps.ExemptNamespaces, SystemNamespace) {
		diags = append(diags, diag.Warningf("podSecurity.exemptNamespaces leaves out %s: Pod Security %s then applies to kube-proxy and the cloud controller manager, which run on the host's network, and refuses their pods", SystemNamespace, ps.Enforce).
			At(at+"podSecurity.exemptNamespaces").WithHint("add kube-system, or label it pod-security.kubernetes.io/enforce=privileged yourself"))
	}
	if v.AnonymousAuth == "" {
		v.AnonymousAuth = AnonymousHealth
	}
	switch v.AnonymousAuth {
	case AnonymousHealth, AnonymousRBAC:
	case AnonymousOff:
		diags = append(diags, diag.Warningf("anonymousAuth: off refuses the load balancer's health check (HTTPS /readyz without credentials) and the kubelet's probes of the API server").
			At(at+"anonymousAuth").WithHint("keep the default, health, which lets anonymous requests reach /healthz, /livez and /readyz only"))
	default:
		diags = append(diags, diag.Fatalf("anonymousAuth %q is not a mode", v.AnonymousAuth).At(at+"anonymousAuth").WithHint("use health, rbac or off"))
	}
	return diags
}

// checkAuditPolicy checks what kube-apiserver would refuse at start-up in
// a policy a user gives: another kind, or no rules.
func checkAuditPolicy(p map[string]any) error {
	if p["apiVersion"] != "audit.k8s.io/v1" || p["kind"] != "Policy" {
		return fmt.Errorf("apiVersion %v, kind %v: want audit.k8s.io/v1, Policy", p["apiVersion"], p["kind"])
	}
	rules, _ := p["rules"].([]any)
	if len(rules) == 0 {
		return fmt.Errorf("no rules: kube-apiserver would log nothing")
	}
	return nil
}

// userSets says whether the user's flags set one of names: the user then
// owns that setting and kube-aws contributes neither the flag nor its file.
func userSets(v Values, names ...string) bool {
	for n := range v.Flags {
		if slices.Contains(names, strings.TrimLeft(n, "-")) {
			return true
		}
	}
	return false
}

// security adds the settings' flags, volumes and files; minor is the
// cluster's Kubernetes minor version.
func security(v Values, minor int, flags map[string]string, set *construct.Set) error {
	file := func(path, content string) {
		set.Files = append(set.Files, construct.File{Target: construct.Target{Role: construct.Controller}, Path: path, Mode: "0600", Owner: "root:root", Content: content})
		set.APIServer.Volumes = append(set.APIServer.Volumes, construct.Volume{Name: volumeName(path), HostPath: path, MountPath: path, ReadOnly: true})
	}

	if *v.Audit.Enabled {
		flags["audit-log-maxage"] = "30"
		flags["audit-log-maxbackup"] = "10"
		flags["audit-log-maxsize"] = "100"
		flags["audit-log-path"] = AuditLogDir + "/audit.log"
		set.APIServer.Volumes = append(set.APIServer.Volumes, construct.Volume{Name: "audit-log", HostPath: AuditLogDir, MountPath: AuditLogDir})
		if !userSets(v, "audit-policy-file") {
			policy := auditPolicy
			if v.Audit.Policy != nil {
				b, err := yaml.Marshal(v.Audit.Policy)
				if err != nil {
					return fmt.Errorf("encoding the audit policy: %w", err)
				}
				policy = string(b)
			}
			flags["audit-policy-file"] = AuditPolicyPath
			file(AuditPolicyPath, policy)
		}
	}

	if !userSets(v, "admission-control-config-file") {
		flags["admission-control-config-file"] = AdmissionConfigPath
		file(AdmissionConfigPath, admissionConfig(*v.PodSecurity))
	}

	if !userSets(v, "anonymous-auth", "authentication-config") {
		switch {
		case v.AnonymousAuth == AnonymousOff:
			flags["anonymous-auth"] = "false"
		case v.AnonymousAuth == AnonymousRBAC || minor < anonymousPathsMinor:
			// Before 1.32 kube-apiserver cannot limit anonymous
			// requests to paths: RBAC alone does (system:public-info-viewer).
			flags["anonymous-auth"] = "true"
		default:
			flags["authentication-config"] = AuthenticationConfigPath
			file(AuthenticationConfigPath, authenticationConfig)
		}
	}
	return nil
}

// volumeName names a file's volume after the file: admission-config.yaml
// is admission-config.
func volumeName(path string) string {
	base := path[strings.LastIndex(path, "/")+1:]
	return strings.TrimSuffix(base, ".yaml")
}

// auditPolicy records who did what to which object for every request, and
// the request's body for changes to RBAC (who granted what). Secrets,
// ConfigMaps and token reviews are recorded without bodies, which hold
// their values; the noisy health checks and watches are left out, and so
// is the RequestReceived stage (every request is recorded when it ends).
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages:
  - RequestReceived
rules:
  - level: None
    nonResourceURLs: ["/healthz*", "/livez*", "/readyz*", "/version"]
  - level: None
    verbs: ["watch"]
  - level: Metadata
    resources:
      - group: ""
        resources: ["secrets", "configmaps"]
      - group: "authentication.k8s.io"
        resources: ["tokenreviews"]
  - level: Request
    verbs: ["create", "update", "patch", "delete", "deletecollection"]
    resources:
      - group: "rbac.authorization.k8s.io"
  - level: Metadata
`

// admissionConfig is the API server's admission configuration: Pod
// Security's cluster-wide levels, at the newest policy version of the
// running Kubernetes.
func admissionConfig(ps PodSecurity) string {
	ns := make([]string, len(ps.ExemptNamespaces))
	for i, n := range ps.ExemptNamespaces {
		ns[i] = fmt.Sprintf("%q", n)
	}
	return fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
  - name: PodSecurity
    configuration:
      apiVersion: pod-security.admission.config.k8s.io/v1
      kind: PodSecurityConfiguration
      defaults:
        enforce: %q
        enforce-version: latest
        warn: %q
        warn-version: latest
        audit: %q
        audit-version: latest
      exemptions:
        usernames: []
        runtimeClasses: []
        namespaces: [%s]
`, ps.Enforce, ps.Warn, ps.Audit, strings.Join(ns, ", "))
}

// authenticationConfig lets anonymous requests reach the health endpoints
// and nothing else, whatever RBAC grants system:anonymous. v1beta1 is the
// version kube-apiserver 1.32 to 1.34 all read.
var authenticationConfig = func() string {
	var b strings.Builder
	b.WriteString("apiVersion: apiserver.config.k8s.io/v1beta1\nkind: AuthenticationConfiguration\nanonymous:\n  enabled: true\n  conditions:\n")
	for _, p := range healthPaths {
		fmt.Fprintf(&b, "    - path: %s\n", p)
	}
	return b.String()
}()
