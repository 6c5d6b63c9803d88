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
	"math/big"
	"net"
	"strings"
	"testing"
	"time"
)

func newCA(t *testing.T, name string, now time.Time) (*x509.Certificate, crypto.Signer) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(10 * 365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	c, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return c, key
}

func parse(t *testing.T, certPEM, keyPEM []byte) (*x509.Certificate, crypto.Signer) {
	t.Helper()
	b, _ := pem.Decode(certPEM)
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := pem.Decode(keyPEM)
	key, err := x509.ParsePKCS8PrivateKey(k.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c, key.(crypto.Signer)
}

func TestIssueAndKeep(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	ca, caKey := newCA(t, "kubernetes", now)
	other, otherKey := newCA(t, "other", now)
	base := Leaf{CommonName: "kube-apiserver", Organizations: []string{"a"}, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"kubernetes", "k8s.example.com"}, IPAddresses: []net.IP{net.ParseIP("10.3.0.1")}, NotAfter: now.Add(365 * 24 * time.Hour)}
	certPEM, keyPEM, err := Issue(ca, caKey, base, now)
	if err != nil {
		t.Fatal(err)
	}
	c, key := parse(t, certPEM, keyPEM)
	if !c.NotBefore.Equal(now.Add(-ClockSkew)) || !c.NotAfter.Equal(base.NotAfter) {
		t.Errorf("validity %s to %s", c.NotBefore, c.NotAfter)
	}
	otherPEM, otherKeyPEM, err := Issue(other, otherKey, base, now)
	if err != nil {
		t.Fatal(err)
	}
	otherCert, _ := parse(t, otherPEM, otherKeyPEM)
	_, strayKey := parse(t, otherPEM, otherKeyPEM)
	tests := []struct {
		name string
		c    *x509.Certificate
		key  crypto.Signer
		l    func(Leaf) Leaf
		now  time.Time
		want string // "" keeps
	}{
		{name: "as issued", c: c, key: key},
		{name: "names in another order", c: c, key: key, l: func(l Leaf) Leaf { l.DNSNames = []string{"k8s.example.com", "kubernetes"}; return l }},
		{name: "another CA", c: otherCert, key: key, want: "signed by another CA"},
		{name: "another key", c: c, key: strayKey, want: "the key does not belong"},
		{name: "two thirds gone", c: c, key: key, now: now.Add(250 * 24 * time.Hour), want: "less than a third of its validity is left"},
		{name: "subject", c: c, key: key, l: func(l Leaf) Leaf { l.Organizations = []string{"b"}; return l }, want: "its subject changed"},
		{name: "usages", c: c, key: key, l: func(l Leaf) Leaf { l.Usages = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}; return l }, want: "its usages changed"},
		{name: "a name more", c: c, key: key, l: func(l Leaf) Leaf { l.IPAddresses = append(l.IPAddresses, net.ParseIP("10.0.0.5")); return l }, want: "its names changed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, at := base, now
			if tt.l != nil {
				l = tt.l(base)
			}
			if !tt.now.IsZero() {
				at = tt.now
			}
			keep, why := Keep(tt.c, tt.key, ca, l, at)
			if keep != (tt.want == "") || !strings.Contains(why, tt.want) {
				t.Errorf("Keep = %v, %q; want kept %v (%q)", keep, why, tt.want == "", tt.want)
			}
		})
	}

	// An RSA key when asked.
	rl := base
	rl.RSA = true
	_, rsaKeyPEM, err := Issue(ca, caKey, rl, now)
	if err != nil {
		t.Fatal(err)
	}
	if _, k := parse(t, certPEM, rsaKeyPEM); k.Public().(*rsa.PublicKey).N.BitLen() != 2048 {
		t.Fatal("not an RSA 2048 key")
	}
}
