// Package leafcert issues leaf certificates from a CA and judges whether one
// issued earlier may stay. It is the one implementation of both that the pki
// built-in (the certificates it keeps beside cluster.yaml) and kube-aws-node
// (the certificates each machine issues itself) share, so that a certificate
// is current by the same rules wherever it was made.
package leafcert

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"
)

// ClockSkew is how far before now a certificate starts: machines' clocks
// differ a little.
const ClockSkew = 5 * time.Minute

// Leaf is a leaf certificate to issue, or to hold a certificate to.
type Leaf struct {
	CommonName    string
	Organizations []string
	// Usages are extended key usages (server auth, client auth).
	Usages      []x509.ExtKeyUsage
	DNSNames    []string
	IPAddresses []net.IP
	// NotAfter is when an issued certificate expires.
	NotAfter time.Time
	// RSA makes the key RSA 2048; ECDSA P-256 otherwise.
	RSA bool
}

// Issue signs l with a new key from ca and returns the certificate and the
// key (PKCS#8) as PEM.
func Issue(ca *x509.Certificate, caKey crypto.Signer, l Leaf, now time.Time) (certPEM, keyPEM []byte, err error) {
	var key crypto.Signer
	if l.RSA {
		key, err = rsa.GenerateKey(rand.Reader, 2048)
	} else {
		key, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	}
	if err != nil {
		return nil, nil, err
	}
	// Random, 127 bits: positive and unique without a counter.
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	tpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: l.CommonName, Organization: l.Organizations},
		NotBefore:             now.Add(-ClockSkew).UTC(),
		NotAfter:              l.NotAfter.UTC(),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:           l.Usages,
		BasicConstraintsValid: true,
		DNSNames:              l.DNSNames,
		IPAddresses:           l.IPAddresses,
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, ca, key.Public(), caKey)
	if err != nil {
		return nil, nil, fmt.Errorf("signing %s: %w", l.CommonName, err)
	}
	pk, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), nil
}

// Keep says whether c, with key, can stay for l: ca signed it, key belongs
// to it, more than a third of its validity is left at now, and its subject,
// usages and names are l's. Otherwise it says why not, for the log.
func Keep(c *x509.Certificate, key crypto.Signer, ca *x509.Certificate, l Leaf, now time.Time) (bool, string) {
	if err := c.CheckSignatureFrom(ca); err != nil || string(c.RawIssuer) != string(ca.RawSubject) {
		return false, "signed by another CA"
	}
	if !SamePublicKey(key.Public(), c.PublicKey) {
		return false, "the key does not belong to the certificate"
	}
	if left, total := c.NotAfter.Sub(now), c.NotAfter.Sub(c.NotBefore); left < total/3 {
		return false, fmt.Sprintf("expires on %s: less than a third of its validity is left", c.NotAfter.UTC().Format(time.RFC3339))
	}
	if c.Subject.CommonName != l.CommonName || !sameSet(c.Subject.Organization, l.Organizations) {
		return false, "its subject changed"
	}
	if !sameSet(c.ExtKeyUsage, l.Usages) {
		return false, "its usages changed"
	}
	if !sameSet(c.DNSNames, l.DNSNames) || !sameSet(ipStrings(c.IPAddresses), ipStrings(l.IPAddresses)) {
		return false, "its names changed"
	}
	return true, ""
}

// SamePublicKey says whether two public keys are the same key.
func SamePublicKey(a, b crypto.PublicKey) bool {
	type equaler interface{ Equal(crypto.PublicKey) bool }
	ea, ok := a.(equaler)
	return ok && ea.Equal(b)
}

func sameSet[T interface{ ~int | ~string }](a, b []T) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func ipStrings(ips []net.IP) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	return out
}
