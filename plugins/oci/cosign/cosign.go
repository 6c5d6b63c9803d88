// Package cosign checks, offline and with a public key, that an artifact in
// an OCI registry carries a signature that `cosign sign --key` made over
// its digest. It finds both formats cosign writes:
//
//   - cosign 3's default, a Sigstore bundle (a DSSE envelope over an in-toto
//     statement naming the digest, predicate https://sigstore.dev/cosign/sign/v1),
//     attached as an OCI referrer of the artifact (through the referrers API,
//     or the referrers tag schema on registries without it);
//   - cosign 2's (and cosign 3's --new-bundle-format=false), a simple-signing
//     payload naming the digest, in a manifest tagged sha256-<hex>.sig, with
//     the signature in the layer's dev.cosignproject.cosign/signature
//     annotation.
//
// Signatures are checked with sigstore's own packages (sigstore-go for
// bundles, sigstore/sigstore for the simple-signing format); nothing here
// contacts a transparency log or any service but the registry.
package cosign

import (
	"bytes"
	"context"
	"crypto"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore-go/pkg/bundle"
	"github.com/sigstore/sigstore-go/pkg/root"
	"github.com/sigstore/sigstore-go/pkg/verify"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"

	"github.com/kube-aws/kube-aws/plugins/oci/helper"
	"oras.land/oras-go/v2/content"
	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
)

const (
	// BundleArtifactType is the artifact type of cosign 3's signature
	// referrers (sigstore bundle 0.3).
	BundleArtifactType = "application/vnd.dev.sigstore.bundle.v0.3+json"
	// SignPredicateType is the in-toto predicate of `cosign sign`, as
	// opposed to an attestation (`cosign attest`) made with the same key.
	SignPredicateType = "https://sigstore.dev/cosign/sign/v1"
	// SimpleSigningMediaType is the layer of cosign 2's signatures.
	SimpleSigningMediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	// SignatureAnnotation holds a simple-signing layer's signature, base64.
	SignatureAnnotation = "dev.cosignproject.cosign/signature"
)

// maxSignatureBytes bounds what is read of one signature object.
const maxSignatureBytes = 1 << 20

// Key is a public key that signatures must verify with.
type Key struct {
	// Path is where it was read from, for messages.
	Path     string
	verifier signature.Verifier
	// Fingerprint is "sha256:" and the hex sha256 of the key's DER form.
	Fingerprint string
}

// LoadKey reads a PEM public key such as the cosign.pub that `cosign
// generate-key-pair` writes (ECDSA P-256; RSA and Ed25519 work too).
func LoadKey(path string) (*Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the signing key: %w", err)
	}
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(b)
	if err != nil {
		if bytes.Contains(b, []byte("PRIVATE KEY")) {
			return nil, fmt.Errorf("%s is a private key: give the public key (cosign.pub, not cosign.key); the private key must not be shared", path)
		}
		return nil, fmt.Errorf("%s is not a PEM public key (as cosign generate-key-pair writes to cosign.pub): %v", path, err)
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	fp, err := helper.KeyFingerprint(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	return &Key{Path: path, verifier: v, Fingerprint: fp}, nil
}

// Storage is what Verify reads from: a repository in a registry.
type Storage interface {
	content.ReadOnlyGraphStorage
	content.Resolver
}

// NoSignatureError is an artifact without any cosign signature.
type NoSignatureError struct {
	Subject string
}

func (e *NoSignatureError) Error() string {
	return e.Reason() + ": sign it with `" + helper.SignCommand("cosign.key", "REGISTRY/REPOSITORY@"+e.Subject) + "`"
}

// Reason says what is missing, without what the plugin's author does
// about it.
func (e *NoSignatureError) Reason() string {
	h := strings.TrimPrefix(e.Subject, "sha256:")
	return fmt.Sprintf("it has no cosign signature (looked for referrers of type %s and for the tag sha256-%s.sig)", BundleArtifactType, h)
}

// BadSignatureError is an artifact whose signatures do not verify with the key.
type BadSignatureError struct {
	Subject, Key string
	Reasons      []string
}

func (e *BadSignatureError) Error() string {
	return fmt.Sprintf("none of its %d cosign signature(s) verifies with the key %s: %s; it was signed with another key, or the signature was tampered with",
		len(e.Reasons), e.Key, strings.Join(e.Reasons, "; "))
}

// Verify succeeds when at least one signature of subject, in either of
// cosign's formats, verifies with key and names subject's digest.
func Verify(ctx context.Context, store Storage, subject ocispec.Descriptor, key *Key) error {
	var reasons []string
	found := 0
	bundles, err := registry.Referrers(ctx, store, subject, BundleArtifactType)
	if err != nil && !errors.Is(err, errdef.ErrNotFound) {
		return fmt.Errorf("listing the signatures of %s: %w", subject.Digest, err)
	}
	for _, r := range bundles {
		found++
		err := verifyBundleManifest(ctx, store, r, subject, key)
		if err == nil {
			return nil
		}
		reasons = append(reasons, fmt.Sprintf("bundle %s: %v", r.Digest, err))
	}
	sigTag := strings.Replace(subject.Digest.String(), ":", "-", 1) + ".sig"
	desc, err := store.Resolve(ctx, sigTag)
	switch {
	case errors.Is(err, errdef.ErrNotFound):
	case err != nil:
		return fmt.Errorf("looking up the signature tag %s: %w", sigTag, err)
	default:
		n, err := verifySimpleSigning(ctx, store, desc, subject, key)
		if err == nil {
			return nil
		}
		found += n
		reasons = append(reasons, fmt.Sprintf("%s: %v", sigTag, err))
	}
	if found == 0 {
		return &NoSignatureError{Subject: subject.Digest.String()}
	}
	return &BadSignatureError{Subject: subject.Digest.String(), Key: key.Path, Reasons: reasons}
}

func fetchJSON(ctx context.Context, store Storage, desc ocispec.Descriptor, v any) error {
	if desc.Size > maxSignatureBytes {
		return fmt.Errorf("%s is %d bytes, too large for a signature", desc.Digest, desc.Size)
	}
	b, err := content.FetchAll(ctx, store, desc)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func verifyBundleManifest(ctx context.Context, store Storage, desc ocispec.Descriptor, subject ocispec.Descriptor, key *Key) error {
	var m ocispec.Manifest
	if err := fetchJSON(ctx, store, desc, &m); err != nil {
		return err
	}
	if len(m.Layers) != 1 {
		return fmt.Errorf("a bundle manifest has %d layers, want 1", len(m.Layers))
	}
	if m.Layers[0].Size > maxSignatureBytes {
		return fmt.Errorf("bundle too large (%d bytes)", m.Layers[0].Size)
	}
	raw, err := content.FetchAll(ctx, store, m.Layers[0])
	if err != nil {
		return err
	}
	var b bundle.Bundle
	if err := b.UnmarshalJSON(raw); err != nil {
		return fmt.Errorf("not a sigstore bundle: %v", err)
	}
	return verifyBundle(&b, subject, key)
}

// verifyBundle checks a bundle with the key alone: no transparency log or
// timestamp authority is consulted, as `cosign verify --key
// --insecure-ignore-tlog` does, since a key pair has no certificate whose
// validity period a timestamp would prove.
func verifyBundle(b *bundle.Bundle, subject ocispec.Descriptor, key *Key) error {
	ek := root.NewExpiringKey(key.verifier, time.Time{}, time.Time{})
	tm := root.NewTrustedPublicKeyMaterial(func(string) (root.TimeConstrainedVerifier, error) { return ek, nil })
	v, err := verify.NewVerifier(tm, verify.WithNoObserverTimestamps())
	if err != nil {
		return err
	}
	sum, err := hex.DecodeString(subject.Digest.Encoded())
	if err != nil {
		return err
	}
	res, err := v.Verify(b, verify.NewPolicy(verify.WithArtifactDigest(subject.Digest.Algorithm().String(), sum), verify.WithKey()))
	if err != nil {
		return err
	}
	if res.Statement == nil || res.Statement.PredicateType != SignPredicateType {
		got := "none"
		if res.Statement != nil {
			got = res.Statement.PredicateType
		}
		return fmt.Errorf("it is an attestation (predicate %s), not a signature made by cosign sign (%s)", got, SignPredicateType)
	}
	return nil
}

// verifySimpleSigning checks every layer of a cosign 2 signature manifest
// and returns how many signatures it held.
func verifySimpleSigning(ctx context.Context, store Storage, desc ocispec.Descriptor, subject ocispec.Descriptor, key *Key) (int, error) {
	var m ocispec.Manifest
	if err := fetchJSON(ctx, store, desc, &m); err != nil {
		return 0, err
	}
	var reasons []string
	n := 0
	for _, l := range m.Layers {
		if l.MediaType != SimpleSigningMediaType {
			continue
		}
		n++
		err := verifySimpleLayer(ctx, store, l, subject, key)
		if err == nil {
			return n, nil
		}
		reasons = append(reasons, err.Error())
	}
	if n == 0 {
		return 0, fmt.Errorf("the manifest holds no %s layer", SimpleSigningMediaType)
	}
	return n, errors.New(strings.Join(reasons, "; "))
}

func verifySimpleLayer(ctx context.Context, store Storage, l ocispec.Descriptor, subject ocispec.Descriptor, key *Key) error {
	sig, err := base64.StdEncoding.DecodeString(l.Annotations[SignatureAnnotation])
	if err != nil || len(sig) == 0 {
		return fmt.Errorf("layer %s has no base64 %s annotation", l.Digest, SignatureAnnotation)
	}
	if l.Size > maxSignatureBytes {
		return fmt.Errorf("payload too large (%d bytes)", l.Size)
	}
	body, err := content.FetchAll(ctx, store, l)
	if err != nil {
		return err
	}
	if err := key.verifier.VerifySignature(bytes.NewReader(sig), bytes.NewReader(body)); err != nil {
		return fmt.Errorf("the signature does not verify: %v", err)
	}
	var p payload.SimpleContainerImage
	if err := json.Unmarshal(body, &p); err != nil {
		return fmt.Errorf("the signed payload is not a simple-signing document: %v", err)
	}
	if p.Critical.Type != payload.CosignSignatureType {
		return fmt.Errorf("the signed payload has type %q, not %q", p.Critical.Type, payload.CosignSignatureType)
	}
	if p.Critical.Image.DockerManifestDigest != subject.Digest.String() {
		return fmt.Errorf("the signature is valid but for %s, not %s", p.Critical.Image.DockerManifestDigest, subject.Digest)
	}
	return nil
}
