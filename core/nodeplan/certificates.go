package nodeplan

import (
	"fmt"
	"net/url"
	"strings"
)

// CertificatesPlan (CertificatesPath) lists the leaf certificates the
// `certificates` step issues on the machine, signed by a CA whose
// certificate and key are files there (the key a secret the `secrets` step
// decrypted first). Issuing on the machine is what gives a replaced
// machine valid certificates for its own address without a re-render.
// A certificate already at Cert that this CA signed for the same subject,
// usages and names, with more than a third of its validity left, is kept.
type CertificatesPlan struct {
	Certificates []Certificate `json:"certificates"`
}

// Certificate is one leaf certificate and its key.
type Certificate struct {
	// Name says what it is in messages ("apiserver", "etcd-peer").
	Name string `json:"name"`
	// CACert and CAKey are the signing CA's PEM certificate and key
	// (PKCS#1, PKCS#8 or SEC 1).
	CACert string `json:"caCert"`
	CAKey  string `json:"caKey"`
	// Subject is the certificate's subject.
	Subject Subject `json:"subject"`
	// Usages are extended key usages: "server auth", "client auth" (both
	// for an etcd peer). Digital signature and key encipherment are always
	// set.
	Usages []Usage `json:"usages"`
	// Validity is how long it is valid, a Go duration ("8760h" is a year);
	// "8760h" when empty. Never past the CA's own expiry.
	Validity string `json:"validity,omitempty"`
	// DNSNames and IPAddresses are the subject alternative names; they may
	// name facts ("{hostname}", "{privateIPv4}", "{member}.demo.internal").
	DNSNames    []string `json:"dnsNames,omitempty"`
	IPAddresses []string `json:"ipAddresses,omitempty"`
	// KeyAlgorithm is "ecdsa-p256" (the default) or "rsa-2048".
	KeyAlgorithm string `json:"keyAlgorithm,omitempty"`
	// Cert and Key are where the PEM certificate (leaf only) and its
	// private key (PKCS#8, mode 0600) are written.
	Cert string `json:"cert"`
	Key  string `json:"key"`
	// Owner of the written files: "user" (with the user's own group) or
	// "user:group"; root:root when empty. They must exist when the step
	// runs.
	Owner string `json:"owner,omitempty"`
	// Kubeconfig, when set, also writes a kubeconfig that uses this
	// certificate (by file path) to reach Server, trusting CACert.
	Kubeconfig *Kubeconfig `json:"kubeconfig,omitempty"`
}

// Subject is a certificate's subject.
type Subject struct {
	// CommonName may name facts ("system:node:{hostname}").
	CommonName string `json:"commonName"`
	// Organizations become O= (Kubernetes reads them as groups).
	Organizations []string `json:"organizations,omitempty"`
}

// Usage is an extended key usage.
type Usage string

const (
	UsageServerAuth Usage = "server auth"
	UsageClientAuth Usage = "client auth"
)

// Key algorithms.
const (
	KeyECDSAP256 = "ecdsa-p256"
	KeyRSA2048   = "rsa-2048"
)

// Kubeconfig is a kubeconfig written beside a certificate.
type Kubeconfig struct {
	// Path is where it is written (mode 0600).
	Path string `json:"path"`
	// Server is the API server's URL; it may name facts
	// ("https://{privateIPv4}:6443").
	Server string `json:"server"`
	// User is the user entry's name ("kubelet"); "default" when empty.
	User string `json:"user,omitempty"`
}

// Validate implements Plan.
func (p *CertificatesPlan) Validate() error {
	var c checker
	outs := map[string]string{}
	claim := func(field, path string) {
		if path == "" {
			return
		}
		if prev, dup := outs[path]; dup {
			c.add(field, "%s is written by %s too", path, prev)
		}
		outs[path] = field
	}
	for i, crt := range p.Certificates {
		field := fmt.Sprintf("certificates[%d]", i)
		if crt.Name == "" {
			c.add(field+".name", "missing")
		}
		c.absPath(field+".caCert", crt.CACert)
		c.absPath(field+".caKey", crt.CAKey)
		c.absPath(field+".cert", crt.Cert)
		c.absPath(field+".key", crt.Key)
		claim(field+".cert", crt.Cert)
		claim(field+".key", crt.Key)
		if crt.Subject.CommonName == "" {
			c.add(field+".subject.commonName", "missing")
		}
		c.facts(field+".subject.commonName", crt.Subject.CommonName)
		if len(crt.Usages) == 0 {
			c.add(field+".usages", "missing: want %q, %q or both", UsageServerAuth, UsageClientAuth)
		}
		for j, u := range crt.Usages {
			if u != UsageServerAuth && u != UsageClientAuth {
				c.add(fmt.Sprintf("%s.usages[%d]", field, j), "%q: want %q or %q", u, UsageServerAuth, UsageClientAuth)
			}
		}
		c.duration(field+".validity", crt.Validity)
		for j, n := range crt.DNSNames {
			c.dnsName(fmt.Sprintf("%s.dnsNames[%d]", field, j), n)
		}
		for j, ip := range crt.IPAddresses {
			c.ipAddress(fmt.Sprintf("%s.ipAddresses[%d]", field, j), ip)
		}
		switch crt.KeyAlgorithm {
		case "", KeyECDSAP256, KeyRSA2048:
		default:
			c.add(field+".keyAlgorithm", "%q: want %q or %q", crt.KeyAlgorithm, KeyECDSAP256, KeyRSA2048)
		}
		c.owner(field+".owner", crt.Owner)
		if k := crt.Kubeconfig; k != nil {
			c.absPath(field+".kubeconfig.path", k.Path)
			claim(field+".kubeconfig.path", k.Path)
			c.facts(field+".kubeconfig.server", k.Server)
			if u, err := url.Parse(placeholder.ReplaceAllString(k.Server, "x")); err != nil || u.Scheme != "https" || u.Host == "" {
				c.add(field+".kubeconfig.server", "%q is not an https URL", k.Server)
			}
			if strings.ContainsAny(k.User, " \t\n") {
				c.add(field+".kubeconfig.user", "%q has white space", k.User)
			}
		}
	}
	return c.err()
}
