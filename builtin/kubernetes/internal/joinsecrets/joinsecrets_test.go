package joinsecrets

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"sigs.k8s.io/yaml"

	"github.com/kube-aws/kube-aws/core/construct"
)

// memory is a Keeper in memory, as the host's store behaves.
type memory map[string][]byte

func (m memory) Get(name string) ([]byte, bool, error) { v, ok := m[name]; return v, ok, nil }
func (m memory) Put(name string, v []byte) error       { m[name] = v; return nil }
func (m memory) Marker(name string) string             { return "((secret:kubernetes/" + name + "))" }

func TestContributeMakesOnceAndKeepsSecretsAsMarkers(t *testing.T) {
	k, public := memory{}, memory{}
	var first construct.Set
	if err := Contribute(&first, k, public, "https://k8s.demo.example.com:443"); err != nil {
		t.Fatal(err)
	}
	if raw, err := base64.StdEncoding.DecodeString(string(k[KeepEncryptionKey])); err != nil || len(raw) != 32 {
		t.Errorf("encryption key %q is not 32 bytes of base64", k[KeepEncryptionKey])
	}
	id := public[StoreBootstrapTokenID]
	if !tokenIDRe.Match(id) || !tokenSecretRe.Match(k[KeepBootstrapTokenSecret]) || len(k) != 2 {
		t.Errorf("bootstrap token %s.%s, secrets %v", id, k[KeepBootstrapTokenSecret], k)
	}
	// A second run reuses what is kept: the same constructs.
	var second construct.Set
	kept := memory{}
	for n, v := range k {
		kept[n] = v
	}
	if err := Contribute(&second, kept, public, "https://k8s.demo.example.com:443"); err != nil {
		t.Fatal(err)
	}
	for n := range k {
		if string(k[n]) != string(kept[n]) {
			t.Errorf("%s was made again", n)
		}
	}
	for _, s := range []*construct.Set{&first, &second} {
		for _, f := range s.Files {
			for _, secret := range []string{KeepEncryptionKey, KeepBootstrapTokenSecret} {
				if strings.Contains(f.Content, string(k[secret])) {
					t.Errorf("%s holds the plain text of %s", f.Path, secret)
				}
			}
		}
	}
	files := map[string]construct.File{}
	for _, f := range first.Files {
		files[f.Path] = f
	}
	// Decoded strictly as the API server's own type.
	var enc apiserverv1.EncryptionConfiguration
	if err := yaml.UnmarshalStrict([]byte(files[EncryptionConfigPath].Content), &enc); err != nil ||
		enc.Kind != "EncryptionConfiguration" || enc.Resources[0].Resources[0] != "secrets" ||
		enc.Resources[0].Providers[0].AESCBC.Keys[0].Secret != "((secret:kubernetes/encryption-key))" ||
		enc.Resources[0].Providers[1].Identity == nil {
		t.Errorf("encryption configuration %+v (%v):\n%s", enc, err, files[EncryptionConfigPath].Content)
	}
	for _, f := range first.Files {
		if f.Format != "yaml" {
			t.Errorf("%s holds a marker and is YAML, but says format %q", f.Path, f.Format)
		}
	}
	kc := files["/etc/kubernetes/bootstrap-kubelet.conf"]
	if kc.Target.Role != construct.Worker || !strings.Contains(kc.Content, "token: "+string(id)+".((secret:kubernetes/bootstrap-token-secret))") ||
		!strings.Contains(kc.Content, "server: https://k8s.demo.example.com:443") {
		t.Errorf("bootstrap kubeconfig for %s:\n%s", kc.Target, kc.Content)
	}
	if len(first.Manifests) != 1 || !strings.Contains(first.Manifests[0].Content, "name: bootstrap-token-"+string(id)) ||
		!strings.Contains(first.Manifests[0].Content, "type: bootstrap.kubernetes.io/token") {
		t.Errorf("token secret %+v", first.Manifests)
	}
	if len(first.APIServer.Flags) != 1 || first.APIServer.Flags[0].Name != "encryption-provider-config" || len(first.APIServer.Volumes) != 1 {
		t.Errorf("API server %+v", first.APIServer)
	}
}

type broken struct{ memory }

func (broken) Get(string) ([]byte, bool, error) { return nil, false, errors.New("store unreadable") }

func TestContributeRefusesWhatKubeAwsDidNotMake(t *testing.T) {
	k := memory{KeepEncryptionKey: []byte("short")}
	if err := Contribute(&construct.Set{}, k, memory{}, "https://x"); err == nil || !strings.Contains(err.Error(), "encryption-key") {
		t.Errorf("a bad kept key: %v", err)
	}
	if err := Contribute(&construct.Set{}, broken{memory{}}, memory{}, "https://x"); err == nil || !strings.Contains(err.Error(), "store unreadable") {
		t.Errorf("an unreadable store: %v", err)
	}
}
