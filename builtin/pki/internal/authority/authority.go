// Package authority is the certificate logic of the pki plugin, as plain
// functions of PEM bytes and a clock: making a CA, checking one an operator
// brings (a CA, valid now, whose key belongs to it), issuing a leaf
// certificate, deciding whether a leaf issued earlier can be kept, and
// making the service-account key pair. It knows nothing of the plugin SDK,
// the host's store or cluster.yaml, so that every rule is tested with a
// table and a fixed clock.
package authority

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/kube-aws/kube-aws/plugins/sdk/leafcert"
)

// Validities kube-aws gives what it makes.
const (
	// CAValidity is ten years: a CA outlives many clusters' upgrades;
	// replacing one means replacing every machine.
	CAValidity = 10 * 365 * 24 * time.Hour
	// LeafValidity is a year, as kubeadm gives its leaves.
	LeafValidity = 365 * 24 * time.Hour
	// ExpiryWarning is how long before a certificate expires kube-aws
	// warns about it.
	ExpiryWarning = 90 * 24 * time.Hour
)

// CA is a certificate authority: its certificate and key, parsed and as PEM.
type CA struct {
	Cert    *x509.Certificate
	Key     crypto.Signer
	CertPEM []byte
	KeyPEM  []byte
}

// New makes a self-signed CA with a new ECDSA P-256 key, valid from now
// (less the clock skew) for validity.
func New(commonName string, now time.Time, validity time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := serialNumber()
	if err != nil {
		return nil, err
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, err
	}
	ski := sha256.Sum256(pub)
	tpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-leafcert.ClockSkew).UTC(),
		NotAfter:              now.Add(validity).UTC(),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		SubjectKeyId:          ski[:20],
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return nil, err
	}
	return Load(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM)
}

// Load parses a CA's certificate and key (PKCS#1, PKCS#8 or SEC 1) and
// checks that the certificate is a CA that may sign certificates and that
// the key is its key. It does not look at the clock: see Current.
func Load(certPEM, keyPEM []byte) (*CA, error) {
	cert, err := ParseCertificate(certPEM)
	if err != nil {
		return nil, &Problem{Part: PartCert, Err: err}
	}
	if !cert.BasicConstraintsValid || !cert.IsCA {
		return nil, &Problem{Part: PartCert, Err: fmt.Errorf("is not a CA certificate: its basic constraints do not say CA:TRUE (subject %q)", cert.Subject.String())}
	}
	if cert.KeyUsage != 0 && cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, &Problem{Part: PartCert, Err: errors.New("is not allowed to sign certificates: its key usage lacks certificate signing")}
	}
	key, err := ParseKey(keyPEM)
	if err != nil {
		return nil, &Problem{Part: PartKey, Err: err}
	}
	if !leafcert.SamePublicKey(key.Public(), cert.PublicKey) {
		return nil, &Problem{Part: PartKey, Err: errors.New("does not belong to the CA certificate: their public keys differ")}
	}
	return &CA{Cert: cert, Key: key, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// Current says why the CA cannot sign at now (expired, not yet valid), or
// nil.
func (ca *CA) Current(now time.Time) error {
	if !now.Before(ca.Cert.NotAfter) {
		return &Problem{Part: PartCert, Err: fmt.Errorf("expired on %s", ca.Cert.NotAfter.UTC().Format(time.RFC3339))}
	}
	if now.Before(ca.Cert.NotBefore) {
		return &Problem{Part: PartCert, Err: fmt.Errorf("is not valid before %s", ca.Cert.NotBefore.UTC().Format(time.RFC3339))}
	}
	return nil
}

// Part says which half of a CA a Problem is about.
type Part string

const (
	PartCert Part = "certificate"
	PartKey  Part = "key"
)

// Problem is what is wrong with a CA's certificate or key; the caller names
// the file (or value) the part came from.
type Problem struct {
	Part Part
	Err  error
}

func (p *Problem) Error() string { return p.Err.Error() }
func (p *Problem) Unwrap() error { return p.Err }

// Leaf is a leaf certificate to issue: its subject, usages and names. Issue
// sets its expiry and key type.
type Leaf = leafcert.Leaf

// Issue signs a new leaf with a new ECDSA P-256 key and returns both as PEM.
func (ca *CA) Issue(l Leaf, now time.Time) (certPEM, keyPEM []byte, err error) {
	if err := ca.Current(now); err != nil {
		return nil, nil, err
	}
	l.NotAfter, l.RSA = now.Add(LeafValidity), false
	if l.NotAfter.After(ca.Cert.NotAfter) {
		l.NotAfter = ca.Cert.NotAfter
	}
	return leafcert.Issue(ca.Cert, ca.Key, l, now)
}

// Keep says whether a leaf issued earlier can stay: it parses, this CA
// signed it, its key belongs to it, it is what l asks for (subject, usages,
// names), and more than a third of its validity is left at now. Otherwise
// it returns why not, for the log.
func (ca *CA) Keep(certPEM, keyPEM []byte, l Leaf, now time.Time) (bool, string) {
	c, err := ParseCertificate(certPEM)
	if err != nil {
		return false, err.Error()
	}
	key, err := ParseKey(keyPEM)
	if err != nil {
		return false, "key: " + err.Error()
	}
	return leafcert.Keep(c, key, ca.Cert, l, now)
}

// NewServiceAccountKey makes the key pair the API server signs
// service-account tokens with: RSA 2048, which every consumer of the
// cluster's OIDC discovery document (RS256) understands. It returns the
// key (PKCS#8) and its public key (PKIX), as PEM.
func NewServiceAccountKey() (keyPEM, pubPEM []byte, err error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, nil, err
	}
	if keyPEM, err = encodeKey(key); err != nil {
		return nil, nil, err
	}
	pubPEM, err = PublicKeyPEM(keyPEM)
	return keyPEM, pubPEM, err
}

// PublicKeyPEM is the PKIX public key of a PEM private key.
func PublicKeyPEM(keyPEM []byte) ([]byte, error) {
	key, err := ParseKey(keyPEM)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}

// ParseCertificate parses the first PEM certificate of b.
func ParseCertificate(b []byte) (*x509.Certificate, error) {
	for rest := b; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, errors.New("holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("holds a certificate that does not parse: %v", err)
		}
		return c, nil
	}
}

// ParseKey parses the first PEM private key of b: PKCS#1 (RSA PRIVATE
// KEY), SEC 1 (EC PRIVATE KEY) or PKCS#8 (PRIVATE KEY).
func ParseKey(b []byte) (crypto.Signer, error) {
	for rest := b; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, errors.New("holds no PEM private key (-----BEGIN ... PRIVATE KEY-----)")
		}
		var key any
		var err error
		switch block.Type {
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		default:
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("holds a %s that does not parse: %v", block.Type, err)
		}
		s, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("holds a %T, which cannot sign", key)
		}
		return s, nil
	}
}

// NotAfter is when the first certificate of certPEM expires.
func NotAfter(certPEM []byte) (time.Time, error) {
	c, err := ParseCertificate(certPEM)
	if err != nil {
		return time.Time{}, err
	}
	return c.NotAfter, nil
}

func encodeKey(key crypto.Signer) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// serialNumber is random, 127 bits: positive and unique without a counter.
func serialNumber() (*big.Int, error) {
	return rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
}
