// Package joinsecrets holds the two secrets the kubernetes plugin generates
// once and keeps in the host's store of generated secrets: the key that
// encrypts Secrets at rest in etcd (aescbc), and the bootstrap token workers
// join with. It builds what uses them, with each secret as its marker: the
// API server's encryption configuration (and the flag and volume naming
// it), the bootstrap token's Secret in kube-system (a manifest the
// controllers apply), and the workers' bootstrap kubeconfig.
package joinsecrets

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"regexp"

	"sigs.k8s.io/yaml"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/names"
)

// Store keeps values between runs.
type Store interface {
	Get(name string) ([]byte, bool, error)
	Put(name string, value []byte) error
}

// Keeper keeps what the plugin generates between runs, in the host's store
// of generated secrets: the plugin writes nothing to disk, and everywhere
// else a secret is its marker.
type Keeper interface {
	Store
	// Marker stands for the secret kept under name in rendered files.
	Marker(name string) string
}

// Names of what the plugin keeps. The bootstrap token is <id>.<secret>:
// the id is public (it names the token's Secret) and kept in the plugin's
// ordinary store, the secret part is what authenticates.
const (
	KeepEncryptionKey        = "encryption-key"
	KeepBootstrapTokenSecret = "bootstrap-token-secret"
	StoreBootstrapTokenID    = "bootstrap-token-id"
)

// Paths on the machines.
const (
	EncryptionConfigPath = "/etc/kubernetes/encryption-config.yaml"
)

var (
	tokenIDRe     = regexp.MustCompile(`^[a-z0-9]{6}$`)
	tokenSecretRe = regexp.MustCompile(`^[a-z0-9]{16}$`)
)

// ensure returns the kept value of name, generating and keeping it the
// first time; a kept value that check refuses is an error naming it.
func ensure(k Store, name string, gen func() ([]byte, error), check func([]byte) bool) error {
	v, ok, err := k.Get(name)
	if err != nil {
		return fmt.Errorf("reading the kept %s: %w", name, err)
	}
	if ok {
		if !check(v) {
			return fmt.Errorf("the kept %s is not one kube-aws made (wrong length or characters): delete it to have a new one made", name)
		}
		return nil
	}
	if v, err = gen(); err != nil {
		return err
	}
	return k.Put(name, v)
}

// token makes n characters of [a-z0-9] (the bootstrap token alphabet).
func token(n int) func() ([]byte, error) {
	return func() ([]byte, error) {
		const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"
		b := make([]byte, n)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		for i := range b {
			// 256 is not a multiple of 36: reject the top values so each
			// character is uniform.
			for b[i] >= 252 {
				var one [1]byte
				if _, err := rand.Read(one[:]); err != nil {
					return nil, err
				}
				b[i] = one[0]
			}
			b[i] = alphabet[int(b[i])%len(alphabet)]
		}
		return b, nil
	}
}

// aesKey makes a 32-byte AES key, base64 as EncryptionConfiguration wants.
func aesKey() ([]byte, error) {
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return nil, err
	}
	return []byte(base64.StdEncoding.EncodeToString(raw)), nil
}

func isAESKey(v []byte) bool {
	raw, err := base64.StdEncoding.DecodeString(string(v))
	return err == nil && len(raw) == 32
}

// Contribute adds the encryption configuration (file, API server flag and
// volume), the bootstrap token's Secret and the workers' bootstrap
// kubeconfig, reaching the API server at apiServer, to set. k keeps the
// secrets, public the token's id.
func Contribute(set *construct.Set, k Keeper, public Store, apiServer string) error {
	if err := ensure(k, KeepEncryptionKey, aesKey, isAESKey); err != nil {
		return err
	}
	if err := ensure(public, StoreBootstrapTokenID, token(6), tokenIDRe.Match); err != nil {
		return err
	}
	if err := ensure(k, KeepBootstrapTokenSecret, token(16), tokenSecretRe.Match); err != nil {
		return err
	}
	id, _, err := public.Get(StoreBootstrapTokenID)
	if err != nil {
		return err
	}
	enc, err := yaml.Marshal(map[string]any{
		"apiVersion": "apiserver.config.k8s.io/v1",
		"kind":       "EncryptionConfiguration",
		"resources": []any{map[string]any{
			"resources": []string{"secrets"},
			// aescbc writes; identity still reads what was stored before
			// encryption was on.
			"providers": []any{
				map[string]any{"aescbc": map[string]any{"keys": []any{map[string]string{"name": "key1", "secret": k.Marker(KeepEncryptionKey)}}}},
				map[string]any{"identity": map[string]any{}},
			},
		}},
	})
	if err != nil {
		return err
	}
	secret, err := yaml.Marshal(map[string]any{
		"apiVersion": "v1",
		"kind":       "Secret",
		"metadata":   map[string]string{"name": "bootstrap-token-" + string(id), "namespace": "kube-system"},
		"type":       "bootstrap.kubernetes.io/token",
		"stringData": map[string]string{
			"token-id":                       string(id),
			"token-secret":                   k.Marker(KeepBootstrapTokenSecret),
			"usage-bootstrap-authentication": "true",
			"auth-extra-groups":              "system:bootstrappers:kube-aws:nodes",
		},
	})
	if err != nil {
		return err
	}
	kubeconfig, err := yaml.Marshal(map[string]any{
		"apiVersion": "v1",
		"kind":       "Config",
		"clusters": []any{map[string]any{"name": "kubernetes", "cluster": map[string]string{
			"certificate-authority": names.PKICACert, "server": apiServer}}},
		"users": []any{map[string]any{"name": "kubelet-bootstrap", "user": map[string]string{
			"token": string(id) + "." + k.Marker(KeepBootstrapTokenSecret)}}},
		"contexts":        []any{map[string]any{"name": "bootstrap", "context": map[string]string{"cluster": "kubernetes", "user": "kubelet-bootstrap"}}},
		"current-context": "bootstrap",
	})
	if err != nil {
		return err
	}
	controller, worker := construct.Target{Role: construct.Controller}, construct.Target{Role: construct.Worker}
	set.Files = append(set.Files,
		// YAML: the machine substitutes the markers in the documents'
		// strings, encoded as YAML.
		construct.File{Target: controller, Path: EncryptionConfigPath, Mode: "0600", Content: string(enc), Format: "yaml"},
		construct.File{Target: worker, Path: names.KubeconfigBootstrapKubelet, Mode: "0600", Content: string(kubeconfig), Format: "yaml"},
	)
	set.APIServer.Flags = append(set.APIServer.Flags, construct.Flag{Name: "encryption-provider-config", Value: EncryptionConfigPath})
	set.APIServer.Volumes = append(set.APIServer.Volumes, construct.Volume{Name: "encryption-config", HostPath: EncryptionConfigPath, MountPath: EncryptionConfigPath, ReadOnly: true})
	set.Manifests = append(set.Manifests, construct.Manifest{Name: "kube-aws-bootstrap-token.yaml", Content: string(secret)})
	return nil
}
