// Package flags holds the apiserver plugin's knowledge of kube-apiserver:
// the default flags and volumes kube-aws runs it with, and the table of
// flags each supported Kubernetes version knows, removed or deprecated, that
// the render stage checks the merged flags of every plugin against.
//
// It is separate from the plugin's main package so that it is tested without
// the SDK's server.
package flags

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/kubeversion"
	"github.com/kube-aws/kube-aws/core/names"
)

// Paths on the controllers. The PKI files (core/names, kubeadm's layout)
// are provided by whichever plugin issues the cluster's certificates.
const (
	AuditPolicyPath = "/etc/kubernetes/audit-policy.yaml"
	AuditLogDir     = "/var/log/kube-apiserver"
)

// DefaultSecurePort is the port the API server listens on and the API load
// balancer forwards to.
const DefaultSecurePort = 443

// Values are the apiserver plugin's values in cluster.yaml.
type Values struct {
	// EtcdEndpoints is --etcd-servers; empty means one per etcd member,
	// named as EtcdEndpoint does.
	EtcdEndpoints []string `json:"etcdEndpoints,omitempty"`
	// SecurePort is --secure-port.
	SecurePort int `json:"securePort,omitempty"`
	// Flags are extra or replacement flags, name (no dashes) -> value; they
	// are checked like every other plugin's flags in render.
	Flags map[string]string `json:"flags,omitempty"`
	// Audit, PodSecurity and AnonymousAuth are the security settings
	// (security.go).
	Audit         *Audit       `json:"audit,omitempty"`
	PodSecurity   *PodSecurity `json:"podSecurity,omitempty"`
	AnonymousAuth string       `json:"anonymousAuth,omitempty"`
}

// Schema is the JSON Schema of Values, sent at registration so kube-aws
// rejects a typo in cluster.yaml before any stage runs.
const Schema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "etcdEndpoints": {"type": "array", "items": {"type": "string"}, "description": "--etcd-servers; default one per etcd member"},
    "securePort": {"type": "integer", "minimum": 1, "maximum": 65535, "description": "--secure-port"},
    "flags": {"type": "object", "additionalProperties": {"type": "string"}, "description": "extra kube-apiserver flags, name without dashes -> value"},` + securitySchema + `
  }
}`

// EtcdEndpoint is the client URL of etcd member i. The etcd stack gives each
// member a stable name in the cluster's private DNS zone so the API server's
// flags need not change when a member is replaced.
func EtcdEndpoint(clusterName string, i int) string {
	return fmt.Sprintf("https://etcd%d.%s.internal:2379", i, clusterName)
}

// admissionPlugins are enabled on top of kube-apiserver's own defaults:
// NodeRestriction limits what a kubelet may change, the rest are what a
// production cluster is expected to run with.
var admissionPlugins = []string{
	"NamespaceLifecycle", "LimitRanger", "ServiceAccount", "DefaultStorageClass",
	"DefaultTolerationSeconds", "MutatingAdmissionWebhook", "ValidatingAdmissionWebhook",
	"ResourceQuota", "Priority", "NodeRestriction",
}

// Defaults returns the flags, volumes and files the apiserver plugin
// contributes in initialise, with the effective values (defaults filled) to
// hand back to kube-aws. A diagnostic is returned instead when the cluster's
// Kubernetes version cannot be served.
func Defaults(c *config.Cluster, v Values) (construct.Set, Values, diag.List) {
	var diags diag.List
	ver, d := supported(c.KubernetesVersion)
	diags = append(diags, d...)
	diags = append(diags, securityDefaults(&v)...)
	if diags.HasFatal() {
		return construct.Set{}, v, diags
	}

	if v.SecurePort == 0 {
		v.SecurePort = DefaultSecurePort
	}
	if len(v.EtcdEndpoints) == 0 {
		n := c.Etcd.Count
		if n <= 0 {
			n = 1
		}
		for i := 0; i < n; i++ {
			v.EtcdEndpoints = append(v.EtcdEndpoints, EtcdEndpoint(c.ClusterName, i))
		}
	}

	issuer, bad := config.ServiceAccountIssuer(c)
	if bad != nil {
		return construct.Set{}, v, append(diags, *bad)
	}

	// Certificate and key files are kubeadm's layout (core/names), which
	// the pki plugin issues on every controller.
	flags := map[string]string{
		"allow-privileged":                   "true",
		"api-audiences":                      "https://kubernetes.default.svc.cluster.local",
		"authorization-mode":                 "Node,RBAC",
		"bind-address":                       "0.0.0.0",
		"client-ca-file":                     names.PKICACert,
		"enable-admission-plugins":           strings.Join(admissionPlugins, ","),
		"enable-bootstrap-token-auth":        "true",
		"etcd-cafile":                        names.PKIEtcdCACert,
		"etcd-certfile":                      names.PKIAPIServerEtcdClientCert,
		"etcd-keyfile":                       names.PKIAPIServerEtcdClientKey,
		"etcd-servers":                       strings.Join(v.EtcdEndpoints, ","),
		"kubelet-certificate-authority":      names.PKICACert,
		"kubelet-client-certificate":         names.PKIAPIServerKubeletClientCert,
		"kubelet-client-key":                 names.PKIAPIServerKubeletClientKey,
		"kubelet-preferred-address-types":    "InternalIP,Hostname,ExternalIP",
		"profiling":                          "false",
		"proxy-client-cert-file":             names.PKIFrontProxyClientCert,
		"proxy-client-key-file":              names.PKIFrontProxyClientKey,
		"requestheader-allowed-names":        names.UserFrontProxyClient,
		"requestheader-client-ca-file":       names.PKIFrontProxyCACert,
		"requestheader-extra-headers-prefix": "X-Remote-Extra-",
		"requestheader-group-headers":        "X-Remote-Group",
		"requestheader-username-headers":     "X-Remote-User",
		"secure-port":                        fmt.Sprint(v.SecurePort),
		// The issuer is where AWS STS reads the discovery document and
		// keys (names.ServiceAccountIssuer), so that pods can trade their
		// tokens for a pod role's credentials.
		"service-account-issuer":   issuer,
		"service-account-jwks-uri": issuer + "/" + names.OIDCKeysPath,
		"service-account-key-file": names.PKIServiceAccountPub,
		// The default, said explicitly for a reviewer (CIS 1.2.21): a
		// deleted service account's tokens stop working at once.
		"service-account-lookup":           "true",
		"service-account-signing-key-file": names.PKIServiceAccountKey,
		"service-cluster-ip-range":         c.Kubernetes.ServiceCIDR,
		"tls-cert-file":                    names.PKIAPIServerCert,
		"tls-cipher-suites":                strings.Join(names.TLSCipherSuites(), ","),
		"tls-min-version":                  "VersionTLS12",
		"tls-private-key-file":             names.PKIAPIServerKey,
	}
	// --advertise-address is left out: it is the controller's own address,
	// known only on the machine, and kube-apiserver then advertises the
	// address of the host's default interface, which on EC2 is the
	// instance's private address (the one the kubernetes Service's endpoint
	// must be).
	var set construct.Set
	minor := ver.Minor
	if minor > NewestMinor {
		minor = NewestMinor
	}
	if err := security(v, minor, flags, &set); err != nil {
		return construct.Set{}, v, append(diags, diag.Fatalf("%v", err).At("plugins.apiserver.values"))
	}
	// The user's flags replace the defaults: they were written on purpose.
	for name, value := range v.Flags {
		flags[strings.TrimLeft(name, "-")] = value
	}

	sorted := make([]string, 0, len(flags))
	for n := range flags {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, n := range sorted {
		set.APIServer.Flags = append(set.APIServer.Flags, construct.Flag{Name: n, Value: flags[n]})
	}
	set.APIServer.Volumes = append(set.APIServer.Volumes,
		construct.Volume{Name: "ca-certs", HostPath: "/etc/ssl/certs", MountPath: "/etc/ssl/certs", ReadOnly: true},
		construct.Volume{Name: "k8s-certs", HostPath: names.PKIDir, MountPath: names.PKIDir, ReadOnly: true},
	)
	sort.Slice(set.APIServer.Volumes, func(i, j int) bool { return set.APIServer.Volumes[i].Name < set.APIServer.Volumes[j].Name })
	return set, v, diags
}

// supported parses the cluster's Kubernetes version against the flag table.
// Older than the table is fatal (the defaults would be wrong); newer is a
// warning, checked against the newest known version, so a new Kubernetes
// release does not block a cluster until kube-aws catches up.
func supported(version string) (kubeversion.Version, diag.List) {
	v, err := kubeversion.Parse(version)
	if err != nil {
		return v, diag.List{diag.Fatalf("%v", err).At("kubernetesVersion").
			WithHint(fmt.Sprintf("set kubernetesVersion to a release between 1.%d and 1.%d, e.g. v1.%d.0", OldestMinor, NewestMinor, NewestMinor))}
	}
	if v.Minor < OldestMinor {
		return v, diag.List{diag.Fatalf("Kubernetes %s is older than the oldest version kube-aws supports (1.%d)", v, OldestMinor).
			At("kubernetesVersion").WithHint(fmt.Sprintf("use 1.%d to 1.%d", OldestMinor, NewestMinor))}
	}
	if v.Minor > NewestMinor {
		return v, diag.List{diag.Warningf("Kubernetes %s is newer than the newest version whose kube-apiserver flags kube-aws knows (1.%d); flags are checked as for 1.%d", v, NewestMinor, NewestMinor).
			At("kubernetesVersion").WithHint("check the API server flags against the release notes of " + v.MinorString())}
	}
	return v, nil
}

// Check checks the merged API server flags of every plugin against the flag
// table for the cluster's Kubernetes version: an unknown or removed flag is
// fatal, a deprecated one a warning naming the replacement. Conflicting
// values are already fatal in the merge.
func Check(flags []construct.Flag, kubernetesVersion string) diag.List {
	ver, vd := supported(kubernetesVersion)
	if vd.HasFatal() {
		return vd
	}
	// A newer-than-known version was already a warning in initialise; saying
	// it again in render would only double the noise.
	var diags diag.List
	minor := ver.Minor
	if minor > NewestMinor {
		minor = NewestMinor
	}
	seen := map[string]bool{}
	for _, f := range flags {
		name := f.Name
		if seen[name] {
			continue
		}
		seen[name] = true
		path := fmt.Sprintf("constructs.apiServer.flags[%s]", name)
		s, ok := known[name]
		// Each diagnostic is about the plugin that set the flag.
		n := len(diags)
		switch {
		case strings.HasPrefix(name, "-") || name == "":
			diags = append(diags, diag.Fatalf("kube-apiserver flag %q: write flag names without leading dashes", name).At(path))
		case f.Value == "":
			// kube-apiserver refuses most flags given as --name= (an empty
			// IP, port or path), and for the rest an empty value is never
			// what a plugin meant: leave the flag out instead.
			diags = append(diags, diag.Fatalf("kube-apiserver flag --%s has an empty value", name).At(path).
				WithHint("leave the flag out to get kube-apiserver's default, or give it a value"))
		case !ok:
			d := diag.Fatalf("unknown kube-apiserver flag --%s for Kubernetes %s", name, ver.MinorString()).At(path)
			if near := diag.Closest(name, knownNames(), 2); near != "" {
				d = d.WithHint("did you mean --" + near + "?")
			} else {
				d = d.WithHint("kube-apiserver would refuse to start; see kube-apiserver --help for " + ver.MinorString())
			}
			diags = append(diags, d)
		case s.Removed != 0 && minor >= s.Removed:
			diags = append(diags, diag.Fatalf("kube-apiserver flag --%s was removed in Kubernetes 1.%d", name, s.Removed).
				At(path).WithHint("use "+s.Replacement))
		case s.Since != 0 && minor < s.Since:
			diags = append(diags, diag.Fatalf("kube-apiserver flag --%s needs Kubernetes 1.%d or newer, the cluster runs %s", name, s.Since, ver.MinorString()).
				At(path).WithHint("raise kubernetesVersion or drop the flag"))
		case s.Deprecated != 0 && minor >= s.Deprecated:
			diags = append(diags, diag.Warningf("kube-apiserver flag --%s is deprecated since Kubernetes 1.%d", name, s.Deprecated).
				At(path).WithHint("use "+s.Replacement+" instead"))
		}
		for i := n; i < len(diags); i++ {
			diags[i] = diags[i].About(f.Plugin)
		}
	}
	return append(diags, exclusive(flags)...)
}

// exclusive reports the flags kube-apiserver refuses together: a file of
// --authentication-config (the apiserver plugin's, limiting anonymous
// requests to the health endpoints) with the --oidc-* flags (the dex
// plugin's, say), which kube-apiserver 1.29 and later exits on.
func exclusive(flags []construct.Flag) diag.List {
	var config, oidc *construct.Flag
	for i, f := range flags {
		switch {
		case f.Name == "authentication-config" && config == nil:
			config = &flags[i]
		case strings.HasPrefix(f.Name, "oidc-") && oidc == nil:
			oidc = &flags[i]
		}
	}
	if config == nil || oidc == nil {
		return nil
	}
	return diag.List{diag.Fatalf("kube-apiserver refuses --authentication-config (set by plugin %s) together with --%s (set by plugin %s): it would not start", config.Plugin, oidc.Name, oidc.Plugin).
		At("constructs.apiServer.flags[authentication-config]").About(config.Plugin).
		WithHint("set plugins.apiserver.values.anonymousAuth: rbac (anonymous requests then reach what RBAC allows them, by default the health endpoints and /version), or configure the OIDC issuer in your own --authentication-config file instead of --oidc-* flags")}
}

// knownNames lists the known flags, for "did you mean".
func knownNames() []string {
	out := make([]string, 0, len(known))
	for n := range known {
		out = append(out, n)
	}
	return out
}
