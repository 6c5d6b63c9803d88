package podidentitywebhook

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/kube-aws/kube-aws/plugins/sdk/leafcert"
)

// CertLifetime is how long a serving certificate is valid. The webhook
// issues it in memory (nothing on disk to protect or clean up) and issues
// a new one when less than a third of that is left, so a webhook that runs
// for months never serves an expired one; a restart issues a new one too.
const CertLifetime = 7 * 24 * time.Hour

// Serving is the webhook's serving certificate for 127.0.0.1, signed by
// the cluster CA the API server trusts it by.
type Serving struct {
	CA    *x509.Certificate
	CAKey crypto.Signer
	// Now is the clock (time.Now when nil).
	Now func() time.Time

	mu       sync.Mutex
	cert     *tls.Certificate
	notAfter time.Time
}

// GetCertificate is tls.Config's: the current certificate, issuing a new
// one first when there is none or it is in the last third of its life.
func (s *Serving) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	t := now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cert != nil && s.notAfter.Sub(t) > CertLifetime/3 {
		return s.cert, nil
	}
	notAfter := t.Add(CertLifetime)
	certPEM, keyPEM, err := leafcert.Issue(s.CA, s.CAKey, leafcert.Leaf{
		CommonName:  "kube-aws-pod-identity-webhook",
		Usages:      []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotAfter:    notAfter,
	}, t)
	if err != nil {
		return nil, fmt.Errorf("issuing the webhook's serving certificate: %w", err)
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("the webhook's serving certificate: %w", err)
	}
	s.cert, s.notAfter = &c, notAfter
	return s.cert, nil
}
