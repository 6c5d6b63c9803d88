// Package pki is the built-in kube-aws plugin that owns the cluster's PKI:
// the cluster, etcd and front-proxy CAs and the service-account key (and
// the OIDC discovery documents of its public half, rendered), made
// once and kept by kube-aws as generated secrets (credentials/pki/ beside
// cluster.yaml; everywhere else a marker), the operator's admin certificate
// and the API server's etcd client certificate issued once from them, and
// for each role the CA files it holds and the certificates plan whose
// leaves its machines issue themselves (kubeadm's layout, core/names). It
// serves the admin-credential operation, through which kube-aws kubeconfig
// gets the admin certificate, its key and the cluster CA: the files it
// keeps are its own. The logic lives in internal/pki and
// internal/authority.
package pki

import (
	"context"
	"encoding/json"
	"time"

	"github.com/kube-aws/kube-aws/builtin/pki/internal/pki"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/core/version"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

// Plugin is the pki plugin as kube-aws serves it (cmd/kube-aws-builtins).
func Plugin() sdk.Plugin { return sdk.Typed[sdk.NoValues](plugin{}) }

type plugin struct{}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{
		Name:         pki.Plugin,
		Version:      version.Version,
		Description:  "the cluster's CAs and service-account key (made once, kept by kube-aws), and each role's certificates",
		ValuesSchema: json.RawMessage(`{"type":"object","additionalProperties":false}`),
	}
}

func (plugin) Initialise(_ context.Context, in *sdk.Input[sdk.NoValues]) (*stage.Result, error) {
	res := &stage.Result{}
	cr, diags := pki.Load(keeper{in.GeneratedSecrets()}, time.Now(), func(msg string) { in.Log("info", msg) })
	if !diags.HasFatal() {
		ip, err := in.Cluster.Kubernetes.APIServiceIP()
		if err != nil {
			diags = append(diags, diag.Fatalf("pki: the API's service address: %v", err).At("kubernetes.serviceCIDR"))
		} else {
			cl := pki.Cluster{Name: in.Cluster.ClusterName, APIDNSName: in.Cluster.APIEndpoint.DNSName,
				ServiceIP: ip.String(), ClusterDomain: in.Cluster.Kubernetes.ClusterDomain}
			if res.Constructs, err = pki.Constructs(cl, cr); err != nil {
				return nil, err
			}
		}
	}
	res.Diagnostics = diags.WithDefaults(pki.Plugin, string(stage.Initialise))
	return res, nil
}

// Render writes the OIDC discovery document and key set of the cluster's
// service-account issuer, which deploy publishes for AWS STS.
func (plugin) Render(_ context.Context, in *sdk.Input[sdk.NoValues]) (*stage.Result, error) {
	res := &stage.Result{}
	issuer, d := config.ServiceAccountIssuer(in.Cluster)
	if d != nil {
		res.Diagnostics = diag.List{*d}
		return res, nil
	}
	files, diags := pki.Discovery(keeper{in.GeneratedSecrets()}, issuer)
	res.Files = files
	res.Diagnostics = diags.WithDefaults(pki.Plugin, string(stage.Render))
	return res, nil
}

// AdminCredential returns the operator's admin credential as kept, for
// kube-aws kubeconfig. It makes and changes nothing.
func (plugin) AdminCredential(_ context.Context, in *sdk.Input[sdk.NoValues]) (*stage.Result, error) {
	ca, cert, key, diags := pki.Admin(keeper{in.GeneratedSecrets()}, time.Now())
	res := &stage.Result{Diagnostics: diags.WithDefaults(pki.Plugin, string(stage.AdminCredential))}
	if !diags.HasFatal() {
		res.AdminCredential = &stage.Credential{CACert: ca, Cert: cert, Key: key}
	}
	return res, nil
}

// keeper is the host's store of generated secrets, as internal/pki asks
// for it: the SDK's, and where the operator finds each file.
type keeper struct{ sdk.Secrets }

func (keeper) Where(name string) string { return names.GeneratedSecretFile(pki.Plugin, name) }

// Validate warns about kept certificates close to expiry.
func (plugin) Validate(_ context.Context, in *sdk.Input[sdk.NoValues]) (*stage.Result, error) {
	d := pki.Expiring(keeper{in.GeneratedSecrets()}, time.Now())
	return &stage.Result{Diagnostics: d.WithDefaults(pki.Plugin, string(stage.Validate))}, nil
}
