package action

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
	"github.com/kube-aws/kube-aws/stages"
)

// Kubeconfig writes the operator's admin kubeconfig: the admin credential
// (the cluster CA, a client certificate with cluster-admin rights and its
// key), which the plugin that provides it (the pki built-in) returns through
// the admin-credential operation, embedded in one file of mode 0600,
// reaching the API at Server.
type Kubeconfig struct {
	Config
	// Server is the API's URL; empty means https://<apiEndpoint.dnsName>,
	// else the endpoint the last up deployed.
	Server string
	// Out is where it is written; empty means DefaultKubeconfig beside
	// cluster.yaml (git-ignored with the rest of credentials/).
	Out string
}

// DefaultKubeconfig is where Kubeconfig writes by default, relative to
// cluster.yaml's folder.
const DefaultKubeconfig = names.CredentialsDir + "/kubeconfig"

// Run writes the kubeconfig and returns its path, and the warnings of the
// plugins' registration and of the operation.
func (a *Kubeconfig) Run(ctx context.Context) (string, diag.List, error) {
	plan, err := stages.NewPlanContext(ctx, a.Options)
	if err != nil {
		return "", nil, err
	}
	c := plan.Config.Cluster
	server := a.Server
	if server == "" && c.APIEndpoint.DNSName != "" {
		server = "https://" + c.APIEndpoint.DNSName
	}
	if server == "" {
		if server, err = deployedEndpoint(plan.Options.StateDir); err != nil {
			return "", nil, err
		}
	}
	if err := checkServer(server); err != nil {
		return "", nil, err
	}
	s, err := plan.Launch(ctx)
	if s != nil {
		defer s.Close()
	}
	if err != nil {
		return "", nil, err
	}
	cred, warnings, err := s.AdminCredential(ctx)
	if err != nil {
		return "", nil, err
	}
	b, err := AdminKubeconfig(c.ClusterName, server, cred)
	if err != nil {
		return "", nil, err
	}
	out := a.Out
	if out == "" {
		out = filepath.Join(plan.ClusterDir, DefaultKubeconfig)
		if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
			return "", nil, err
		}
	}
	if err := fileutil.WriteAtomic(out, b, 0o600); err != nil {
		return "", nil, fmt.Errorf("writing the kubeconfig: %w", err)
	}
	return out, warnings, nil
}

// checkServer refuses an API server URL a kubeconfig cannot use with a
// client certificate.
func checkServer(server string) error {
	if !strings.HasPrefix(server, "https://") {
		return stages.ConfigError("the API server URL %q is not https://...", server)
	}
	return nil
}

// AdminKubeconfig is a kubeconfig of one cluster, user and context, all
// named after the cluster, with the credential's CA, certificate and key
// embedded.
func AdminKubeconfig(cluster, server string, cred *stage.Credential) ([]byte, error) {
	if err := checkServer(server); err != nil {
		return nil, err
	}
	cfg := clientcmdapi.NewConfig()
	user := cluster + "-admin"
	cfg.Clusters[cluster] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: cred.CACert}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cred.Cert, ClientKeyData: cred.Key}
	cfg.Contexts[cluster] = &clientcmdapi.Context{Cluster: cluster, AuthInfo: user}
	cfg.CurrentContext = cluster
	return clientcmd.Write(*cfg)
}

// deployedEndpoint reads the API endpoint the last up recorded.
func deployedEndpoint(stateDir string) (string, error) {
	b, err := os.ReadFile(filepath.Join(stateDir, string(stage.Deploy)+".json"))
	if errors.Is(err, fs.ErrNotExist) {
		return "", stages.ConfigError("the API endpoint is not known: cluster.yaml has no apiEndpoint.dnsName and the cluster was not deployed from here; run kube-aws up, or pass --server")
	}
	if err != nil {
		return "", err
	}
	var st stages.State
	if err := json.Unmarshal(b, &st); err != nil {
		return "", fmt.Errorf("reading the deploy state: %w", err)
	}
	if st.Result.Deploy == nil || st.Result.Deploy.Outputs[names.ClusterOutputAPIEndpoint] == "" {
		return "", stages.ConfigError("the last deploy recorded no %s output; pass --server", names.ClusterOutputAPIEndpoint)
	}
	return st.Result.Deploy.Outputs[names.ClusterOutputAPIEndpoint], nil
}
