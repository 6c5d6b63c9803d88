package authority

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// selfSigned makes a certificate the way an operator's tool might, with
// the knobs the checks look at.
func selfSigned(t *testing.T, isCA bool, usage x509.KeyUsage, notBefore, notAfter time.Time, rsaKey bool) (certPEM, keyPEM []byte) {
	t.Helper()
	var der []byte
	var err error
	tpl := &x509.Certificate{
		SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "operator-ca"},
		NotBefore: notBefore, NotAfter: notAfter, IsCA: isCA, BasicConstraintsValid: true, KeyUsage: usage,
	}
	if rsaKey {
		k, _ := rsa.GenerateKey(rand.Reader, 2048)
		der, err = x509.CreateCertificate(rand.Reader, tpl, tpl, k.Public(), k)
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)})
	} else {
		k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		der, err = x509.CreateCertificate(rand.Reader, tpl, tpl, k.Public(), k)
		b, _ := x509.MarshalECPrivateKey(k)
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: b})
	}
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM
}

func TestLoad(t *testing.T) {
	good, goodKey := selfSigned(t, true, x509.KeyUsageCertSign, now.Add(-time.Hour), now.Add(time.Hour), false)
	rsaCA, rsaKey := selfSigned(t, true, 0, now.Add(-time.Hour), now.Add(time.Hour), true)
	notCA, notCAKey := selfSigned(t, false, x509.KeyUsageDigitalSignature, now.Add(-time.Hour), now.Add(time.Hour), false)
	noSign, noSignKey := selfSigned(t, true, x509.KeyUsageDigitalSignature, now.Add(-time.Hour), now.Add(time.Hour), false)
	_, otherKey := selfSigned(t, true, x509.KeyUsageCertSign, now.Add(-time.Hour), now.Add(time.Hour), false)
	tests := []struct {
		name      string
		cert, key []byte
		part      Part
		want      string // in the error; "" for none
	}{
		{"a CA and its key", good, goodKey, "", ""},
		{"an RSA CA, PKCS#1 key, no key usage", rsaCA, rsaKey, "", ""},
		{"key and certificate in one bundle", append(append([]byte{}, goodKey...), good...), append(append([]byte{}, good...), goodKey...), "", ""},
		{"not a CA", notCA, notCAKey, PartCert, "is not a CA certificate"},
		{"a CA that may not sign", noSign, noSignKey, PartCert, "lacks certificate signing"},
		{"a key of another CA", good, otherKey, PartKey, "does not belong to the CA certificate"},
		{"no certificate", []byte("hello"), goodKey, PartCert, "holds no PEM certificate"},
		{"a key where the certificate goes", goodKey, goodKey, PartCert, "holds no PEM certificate"},
		{"no key", good, good, PartKey, "holds no PEM private key"},
		{"a broken key", good, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: []byte{1, 2}}), PartKey, "does not parse"},
		{"a broken certificate", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2}}), goodKey, PartCert, "does not parse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ca, err := Load(tt.cert, tt.key)
			if tt.want == "" {
				if err != nil || ca == nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			var p *Problem
			if !errors.As(err, &p) || p.Part != tt.part || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load: %v (%T), want a problem with the %s saying %q", err, err, tt.part, tt.want)
			}
		})
	}
}

func TestCurrent(t *testing.T) {
	tests := []struct {
		name                string
		notBefore, notAfter time.Time
		want                string
	}{
		{"valid", now.Add(-time.Hour), now.Add(time.Hour), ""},
		{"expired", now.Add(-48 * time.Hour), now.Add(-24 * time.Hour), "expired on 2026-02-28T12:00:00Z"},
		{"expires this instant", now.Add(-48 * time.Hour), now, "expired on"},
		{"not yet valid", now.Add(time.Hour), now.Add(48 * time.Hour), "is not valid before 2026-03-01T13:00:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, k := selfSigned(t, true, x509.KeyUsageCertSign, tt.notBefore, tt.notAfter, false)
			ca, err := Load(c, k)
			if err != nil {
				t.Fatal(err)
			}
			err = ca.Current(now)
			if (err == nil) != (tt.want == "") || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("Current: %v, want %q", err, tt.want)
			}
		})
	}
}

func TestNewAndIssue(t *testing.T) {
	ca, err := New("kubernetes", now, CAValidity)
	if err != nil {
		t.Fatal(err)
	}
	if !ca.Cert.IsCA || ca.Cert.NotAfter != now.Add(CAValidity) || ca.Cert.Subject.CommonName != "kubernetes" {
		t.Errorf("CA %v until %s", ca.Cert.Subject, ca.Cert.NotAfter)
	}
	leaf := Leaf{
		CommonName: "kube-apiserver", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames: []string{"k8s.demo.example.com"}, IPAddresses: []net.IP{net.ParseIP("10.3.0.1")},
	}
	certPEM, keyPEM, err := ca.Issue(leaf, now)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := ParseCertificate(certPEM)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	if _, err := c.Verify(x509.VerifyOptions{Roots: pool, DNSName: "k8s.demo.example.com", CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("the leaf does not verify against its CA: %v", err)
	}
	if c.NotAfter != now.Add(LeafValidity) {
		t.Errorf("leaf valid until %s, want a year", c.NotAfter)
	}
	if ok, why := ca.Keep(certPEM, keyPEM, leaf, now); !ok {
		t.Errorf("a fresh leaf is not kept: %s", why)
	}

	// A leaf never outlives its CA.
	short, _ := New("short", now, 48*time.Hour)
	certPEM, _, _ = short.Issue(leaf, now)
	if c, _ := ParseCertificate(certPEM); !c.NotAfter.Equal(short.Cert.NotAfter) {
		t.Errorf("leaf until %s, CA until %s", c.NotAfter, short.Cert.NotAfter)
	}
	if _, _, err := short.Issue(leaf, now.Add(72*time.Hour)); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("an expired CA issued: %v", err)
	}
}

func TestKeep(t *testing.T) {
	ca, _ := New("etcd-ca", now, CAValidity)
	other, _ := New("etcd-ca", now, CAValidity)
	leaf := Leaf{CommonName: "kube-apiserver-etcd-client", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	certPEM, keyPEM, _ := ca.Issue(leaf, now)
	_, otherKey, _ := ca.Issue(leaf, now)
	otherCert, otherCertKey, _ := other.Issue(leaf, now)
	tests := []struct {
		name      string
		cert, key []byte
		leaf      Leaf
		at        time.Time
		want      string // why not; "" keeps it
	}{
		{"same", certPEM, keyPEM, leaf, now, ""},
		{"eight months on", certPEM, keyPEM, leaf, now.Add(240 * 24 * time.Hour), ""},
		{"ten months on", certPEM, keyPEM, leaf, now.Add(300 * 24 * time.Hour), "less than a third"},
		{"another CA (same name)", otherCert, otherCertKey, leaf, now, "signed by another CA"},
		{"another key", certPEM, otherKey, leaf, now, "does not belong"},
		{"new name", certPEM, keyPEM, Leaf{CommonName: "x", Usages: leaf.Usages}, now, "subject changed"},
		{"new group", certPEM, keyPEM, Leaf{CommonName: leaf.CommonName, Organizations: []string{"system:masters"}, Usages: leaf.Usages}, now, "subject changed"},
		{"new usage", certPEM, keyPEM, Leaf{CommonName: leaf.CommonName, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, now, "usages changed"},
		{"new SAN", certPEM, keyPEM, Leaf{CommonName: leaf.CommonName, Usages: leaf.Usages, DNSNames: []string{"a"}}, now, "names changed"},
		{"garbage", []byte("x"), keyPEM, leaf, now, "no PEM certificate"},
		{"no key", certPEM, nil, leaf, now, "key:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, why := ca.Keep(tt.cert, tt.key, tt.leaf, tt.at)
			if ok != (tt.want == "") || !strings.Contains(why, tt.want) {
				t.Fatalf("Keep = %v %q, want %q", ok, why, tt.want)
			}
		})
	}
}

func TestServiceAccountKey(t *testing.T) {
	key, pub, err := NewServiceAccountKey()
	if err != nil {
		t.Fatal(err)
	}
	k, err := ParseKey(key)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := k.(*rsa.PrivateKey); !ok {
		t.Errorf("service-account key is a %T, want RSA", k)
	}
	again, err := PublicKeyPEM(key)
	if err != nil || string(again) != string(pub) {
		t.Errorf("public key of the key differs: %v", err)
	}
	block, _ := pem.Decode(pub)
	if block == nil || block.Type != "PUBLIC KEY" {
		t.Errorf("public key PEM: %q", pub)
	}
}
