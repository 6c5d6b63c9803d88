package pki

import (
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/kube-aws/kube-aws/builtin/pki/internal/authority"
)

// A token signed with the kept service-account key, with the key id
// kube-apiserver gives it, verifies against the published key set, and the
// discovery document points at that key set under the issuer.
func TestDiscoveryVerifiesTheAPIServersTokens(t *testing.T) {
	const issuer = "https://assets.s3.eu-west-1.amazonaws.com/demo/oidc"
	k := newKeeper()
	if _, diags := Load(k, time.Now(), func(string) {}); diags.HasFatal() {
		t.Fatal(diags)
	}
	files, diags := Discovery(k, issuer)
	if diags.HasFatal() || len(files) != 2 {
		t.Fatalf("files %d, %v", len(files), diags)
	}
	if files[0].Path != "oidc/.well-known/openid-configuration" || files[1].Path != "oidc/keys.json" {
		t.Fatalf("paths %s, %s", files[0].Path, files[1].Path)
	}
	var doc struct {
		Issuer  string   `json:"issuer"`
		JWKSURI string   `json:"jwks_uri"`
		Algs    []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := json.Unmarshal(files[0].Content, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Issuer != issuer || doc.JWKSURI != issuer+"/keys.json" || len(doc.Algs) != 1 || doc.Algs[0] != "RS256" {
		t.Errorf("discovery document %+v", doc)
	}
	var set jose.JSONWebKeySet
	if err := json.Unmarshal(files[1].Content, &set); err != nil {
		t.Fatal(err)
	}

	keyPEM, _, _ := k.Get(KeepServiceAccountKey)
	key, err := authority.ParseKey(keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(der)
	kid := base64.RawURLEncoding.EncodeToString(sum[:])
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key.(*rsa.PrivateKey)}, (&jose.SignerOptions{}).WithHeader("kid", kid))
	if err != nil {
		t.Fatal(err)
	}
	token, err := jwt.Signed(signer).Claims(jwt.Claims{Issuer: issuer, Subject: "system:serviceaccount:kube-system:ca", Audience: jwt.Audience{"sts.amazonaws.com"}}).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := jwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.RS256})
	if err != nil {
		t.Fatal(err)
	}
	found := set.Key(parsed.Headers[0].KeyID)
	if len(found) != 1 {
		t.Fatalf("the key set has no key %q: %s", kid, files[1].Content)
	}
	var claims jwt.Claims
	if err := parsed.Claims(found[0].Key, &claims); err != nil {
		t.Fatalf("the token does not verify with the published key: %v", err)
	}
	if claims.Issuer != issuer {
		t.Errorf("issuer %q", claims.Issuer)
	}

	// Deterministic: a second render writes the same bytes.
	again, _ := Discovery(k, issuer)
	for i := range files {
		if string(again[i].Content) != string(files[i].Content) {
			t.Errorf("%s differs between two renders", files[i].Path)
		}
	}
}

func TestDiscoveryWithoutKey(t *testing.T) {
	_, diags := Discovery(newKeeper(), "https://x/oidc")
	if !diags.HasFatal() || !strings.Contains(diags.Error(), "is not kept") {
		t.Fatalf("diagnostics %v", diags)
	}
}
