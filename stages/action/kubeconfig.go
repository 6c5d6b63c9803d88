package action

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
	"github.com/kube-aws/kube-aws/stages"
)

// Kubeconfig writes the operator's admin kubeconfig: the pki plugin's admin
// certificate and key and the cluster CA, kept beside cluster.yaml
// (credentials/pki/), embedded in one file of mode 0600, reaching the API
// at Server.
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

// Run writes the kubeconfig and returns its path.
func (a *Kubeconfig) Run() (string, error) {
	plan, err := stages.NewPlan(a.Options)
	if err != nil {
		return "", err
	}
	c := plan.Config.Cluster
	server := a.Server
	if server == "" && c.APIEndpoint.DNSName != "" {
		server = "https://" + c.APIEndpoint.DNSName
	}
	if server == "" {
		if server, err = deployedEndpoint(plan.Options.StateDir); err != nil {
			return "", err
		}
	}
	pemOf := func(name string) ([]byte, error) {
		rel := filepath.Join(names.CredentialsDir, names.PKIPlugin, name)
		b, err := os.ReadFile(filepath.Join(plan.ClusterDir, rel))
		if errors.Is(err, fs.ErrNotExist) {
			return nil, stages.ConfigError("%s not found: run kube-aws render first (the pki plugin issues the admin certificate), or restore credentials/ from your copy", rel)
		}
		return b, err
	}
	ca, err := pemOf(names.PKIKeptCACert)
	if err != nil {
		return "", err
	}
	cert, err := pemOf(names.PKIKeptAdminCert)
	if err != nil {
		return "", err
	}
	key, err := pemOf(names.PKIKeptAdminKey)
	if err != nil {
		return "", err
	}
	b, err := AdminKubeconfig(c.ClusterName, server, ca, cert, key)
	if err != nil {
		return "", err
	}
	out := a.Out
	if out == "" {
		out = filepath.Join(plan.ClusterDir, DefaultKubeconfig)
		if err := os.MkdirAll(filepath.Dir(out), 0o700); err != nil {
			return "", err
		}
	}
	if err := fileutil.WriteAtomic(out, b, 0o600); err != nil {
		return "", fmt.Errorf("writing the kubeconfig: %w", err)
	}
	return out, nil
}

// AdminKubeconfig is a kubeconfig of one cluster, user and context, all
// named after the cluster, with the CA, certificate and key embedded.
func AdminKubeconfig(cluster, server string, caPEM, certPEM, keyPEM []byte) ([]byte, error) {
	if !strings.HasPrefix(server, "https://") {
		return nil, stages.ConfigError("the API server URL %q is not https://...", server)
	}
	cfg := clientcmdapi.NewConfig()
	user := cluster + "-admin"
	cfg.Clusters[cluster] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
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
	if st.Result.Deploy == nil || st.Result.Deploy.Outputs[names.OutputAPIEndpoint] == "" {
		return "", stages.ConfigError("the last deploy recorded no %s output; pass --server", names.OutputAPIEndpoint)
	}
	return st.Result.Deploy.Outputs[names.OutputAPIEndpoint], nil
}
