package cosign_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/plugins/oci/cosign"
	"github.com/kube-aws/kube-aws/plugins/oci/helper"
	"github.com/kube-aws/kube-aws/test/registrytest"
)

// A private key, or a file that is no key, is refused with what to give
// instead.
func TestLoadKeyErrors(t *testing.T) {
	cli := registrytest.NewCosign(t)
	dir := t.TempDir()
	priv, _ := cli.GenerateKeyPair(t, dir)
	if _, err := cosign.LoadKey(priv); err == nil || !strings.Contains(err.Error(), "is a private key: give the public key (cosign.pub") {
		t.Errorf("private key: %v", err)
	}
	junk := filepath.Join(dir, "junk.pub")
	if err := os.WriteFile(junk, []byte("not a key"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := cosign.LoadKey(junk); err == nil || !strings.Contains(err.Error(), "is not a PEM public key") {
		t.Errorf("junk: %v", err)
	}
	if _, err := cosign.LoadKey(filepath.Join(dir, "missing.pub")); err == nil || !strings.Contains(err.Error(), "reading the signing key") {
		t.Errorf("missing: %v", err)
	}
	pub := filepath.Join(dir, "cosign.pub")
	k, err := cosign.LoadKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	// The fingerprint ignores how the PEM text is wrapped.
	b, _ := os.ReadFile(pub)
	fp, err := helper.KeyFingerprint([]byte("\n\n" + string(b) + "\n"))
	if err != nil || fp != k.Fingerprint || !strings.HasPrefix(fp, "sha256:") {
		t.Errorf("fingerprints %s and %s (%v)", fp, k.Fingerprint, err)
	}
}
