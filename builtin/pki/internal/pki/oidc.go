package pki

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"path"

	"github.com/go-jose/go-jose/v4"

	"github.com/kube-aws/kube-aws/builtin/pki/internal/authority"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
)

// Discovery renders the OIDC discovery document and key set of the
// cluster's service-account issuer (names.ServiceAccountIssuer), which
// deploy publishes where AWS STS reads them: the documents the API server
// serves itself at /.well-known/openid-configuration and
// /openid/v1/jwks, but readable without credentials from outside the
// cluster. The key set holds the public half of the kept service-account
// key; its key id is the one kube-apiserver puts in every token it signs
// (base64url of the SHA-256 of the PKIX public key), so a verifier finds
// the key by the token's "kid".
func Discovery(k Keeper, issuer string) ([]stage.File, diag.List) {
	key, ok, err := k.Get(KeepServiceAccountKey)
	if err != nil || !ok {
		return nil, diag.List{diag.Fatalf("pki: the service-account key %s is not kept (%v): the initialise stage makes it", k.Where(KeepServiceAccountKey), err).
			WithHint("run kube-aws render again; it runs initialise first")}
	}
	pubPEM, err := authority.PublicKeyPEM(key)
	if err != nil {
		return nil, diag.List{diag.Fatalf("pki: the service-account key %s is not a usable key: %v", k.Where(KeepServiceAccountKey), err).
			WithHint("restore it from your copy; a new key invalidates every service-account token issued")}
	}
	block, _ := pem.Decode(pubPEM)
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return nil, diag.List{diag.Fatalf("pki: the service-account public key: %v", err)}
	}
	sum := sha256.Sum256(block.Bytes)
	jwks := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{
		Key: pub, KeyID: base64.RawURLEncoding.EncodeToString(sum[:]), Algorithm: string(jose.RS256), Use: "sig",
	}}}
	keys, err := json.MarshalIndent(jwks, "", "  ")
	if err != nil {
		return nil, diag.List{diag.Fatalf("pki: encoding the key set: %v", err)}
	}
	doc, err := json.MarshalIndent(map[string]any{
		"issuer":                                issuer,
		"jwks_uri":                              issuer + "/" + names.OIDCKeysPath,
		"response_types_supported":              []string{"id_token"},
		"subject_types_supported":               []string{"public"},
		"id_token_signing_alg_values_supported": []string{string(jose.RS256)},
	}, "", "  ")
	if err != nil {
		return nil, diag.List{diag.Fatalf("pki: encoding the discovery document: %v", err)}
	}
	return []stage.File{
		{Path: path.Join(names.OIDCPrefix, names.OIDCDiscoveryPath), Content: append(doc, '\n'), Mode: "0644"},
		{Path: path.Join(names.OIDCPrefix, names.OIDCKeysPath), Content: append(keys, '\n'), Mode: "0644"},
	}, nil
}
