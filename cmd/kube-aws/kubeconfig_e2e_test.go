package main

import (
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-aws/kube-aws/core/names"
)

// kube-aws kubeconfig gets the admin credential from the pki built-in
// through the protocol: before a render it fails saying to render, after
// it writes a kubeconfig whose client certificate the cluster CA verifies
// for client auth, in system:masters. No output holds the key.
func TestKubeconfigCommand(t *testing.T) {
	t.Parallel()
	l := newExampleLayout(t)
	noKey := func(what, out string) {
		t.Helper()
		if strings.Contains(out, "PRIVATE KEY") {
			t.Errorf("%s holds a private key:\n%s", what, out)
		}
	}

	stdout, stderr, code := l.run("kubeconfig")
	if code != 1 || !strings.Contains(stderr, "no admin credential in credentials/pki/ yet: run kube-aws render first") {
		t.Fatalf("before render: exit %d, want 1 and a diagnostic saying to render\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(l.cluster, "credentials", "kubeconfig")); err == nil {
		t.Fatal("a kubeconfig was written before render")
	}
	if stdout, stderr, code = l.run("render"); code != 0 {
		t.Fatalf("render: exit %d\n%s\n%s", code, stdout, stderr)
	}

	tests := []struct {
		name   string
		args   []string
		path   string // relative to the cluster folder
		server string
	}{
		{"default", []string{"kubeconfig", "--verbose"}, "credentials/kubeconfig", "https://k8s.demo.example.com"},
		{"out and server", []string{"kubeconfig", "--out", "admin.conf", "--server", "https://10.0.0.1"}, "admin.conf", "https://10.0.0.1"},
	}
	for _, tc := range tests {
		stdout, stderr, code := l.run(tc.args...)
		if code != 0 || !strings.Contains(stdout, "wrote ") {
			t.Fatalf("%s: exit %d\n%s\n%s", tc.name, code, stdout, stderr)
		}
		noKey(tc.name+"'s output", stdout+stderr)
		path := filepath.Join(l.cluster, tc.path)
		if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %s: %v", tc.name, path, err)
		}
		kc, err := clientcmd.LoadFromFile(path)
		if err != nil {
			t.Fatal(err)
		}
		ctx := kc.Contexts[kc.CurrentContext]
		cl, user := kc.Clusters[ctx.Cluster], kc.AuthInfos[ctx.AuthInfo]
		if cl.Server != tc.server {
			t.Errorf("%s: server %s, want %s", tc.name, cl.Server, tc.server)
		}
		pair, err := tls.X509KeyPair(user.ClientCertificateData, user.ClientKeyData)
		if err != nil {
			t.Fatalf("%s: the client key does not belong to its certificate: %v", tc.name, err)
		}
		leaf, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		roots := x509.NewCertPool()
		if !roots.AppendCertsFromPEM(cl.CertificateAuthorityData) {
			t.Fatalf("%s: no CA certificate in the kubeconfig", tc.name)
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("%s: the cluster CA does not verify the client certificate: %v", tc.name, err)
		}
		if !slices.Contains(leaf.Subject.Organization, names.GroupMasters) {
			t.Errorf("%s: the client certificate's groups are %v", tc.name, leaf.Subject.Organization)
		}
	}
	// Nothing the run keeps holds the key outside the credentials folder.
	for _, dir := range []string{".kube-aws", "rendered"} {
		filepath.WalkDir(filepath.Join(l.cluster, dir), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				b, _ := os.ReadFile(p)
				noKey(p, string(b))
			}
			return nil
		})
	}
}
