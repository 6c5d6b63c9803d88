// Package certificates is the `certificates` step: it issues the leaf
// certificates of the certificates plan on the machine, signed by a CA
// whose certificate and key are files there, with subject alternative names
// that may name the machine's facts, and writes each with its key (and a
// kubeconfig using them when asked). A certificate already in place that
// this CA signed for the same names, with more than a third of its
// validity left, is current: Check finds nothing to issue for it.
package certificates

import (
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"flag"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/keyutil"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/step"
	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
	"github.com/kube-aws/kube-aws/plugins/sdk/leafcert"
)

// DefaultValidity is a certificate's validity when the plan gives none.
const DefaultValidity = 365 * 24 * time.Hour

// Step is the step.
type Step struct {
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// New is the step as kube-aws-node runs it.
func New() *Step { return &Step{} }

func (*Step) Name() string { return nodeplan.StepCertificates }

func (*Step) Flags(*flag.FlagSet) {}

// Check resolves every certificate of the plan and compares it with what
// is in place: a change for each certificate to issue or kubeconfig to
// write.
func (s *Step) Check(_ context.Context, e *agent.Env) (step.Changes, error) {
	var plan nodeplan.CertificatesPlan
	if found, err := e.OptionalPlan(nodeplan.CertificatesPath, &plan); err != nil || !found {
		return nil, err
	}
	now := time.Now()
	if s.Now != nil {
		now = s.Now()
	}
	var changes step.Changes
	for i, c := range plan.Certificates {
		field := fmt.Sprintf("certificates[%d] (%s)", i, c.Name)
		spec, err := Resolve(e, field, c)
		if err != nil {
			return nil, err
		}
		w, err := check(e.Root, spec, now)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		switch {
		case w.issue:
			changes = append(changes, step.Change{Action: "issue", Target: c.Cert, Data: w,
				Detail: fmt.Sprintf("%s: CN %s, DNS %v, IP %v, until %s", c.Name, spec.CommonName, spec.DNSNames, spec.IPs, spec.notAfter.UTC().Format(time.RFC3339))})
		case w.kubeconfig != nil:
			changes = append(changes, step.Change{Action: "write", Target: c.Kubeconfig.Path, Detail: c.Name + ": a kubeconfig with " + c.Cert, Data: w})
		default:
			e.Logf("%s: %s is current, kept", c.Name, c.Cert)
		}
	}
	return changes, nil
}

// Apply issues and writes what Check found.
func (*Step) Apply(_ context.Context, e *agent.Env, changes step.Changes) error {
	for _, c := range changes {
		w := c.Data.(*work)
		if err := w.apply(e.Root); err != nil {
			return fmt.Errorf("%s: %w", w.spec.Name, err)
		}
		if w.issue {
			e.Logf("%s: issued %s (CN %s, DNS %v, IP %v, until %s)", w.spec.Name, w.spec.Cert, w.spec.CommonName, w.spec.DNSNames, w.spec.IPs, w.spec.notAfter.UTC().Format(time.RFC3339))
		} else {
			e.Logf("%s: wrote %s", w.spec.Name, w.spec.Kubeconfig.Path)
		}
	}
	return nil
}

// Spec is a certificate with the facts expanded.
type Spec struct {
	nodeplan.Certificate
	CommonName string
	DNSNames   []string
	IPs        []net.IP
	Server     string
	Validity   time.Duration
	notAfter   time.Time
}

// Resolve expands the facts a certificate names.
func Resolve(e *agent.Env, field string, c nodeplan.Certificate) (*Spec, error) {
	s := &Spec{Certificate: c, Validity: nodeplan.DurationOr(c.Validity, DefaultValidity)}
	var err error
	if s.CommonName, err = e.Expand(field+".subject.commonName", c.Subject.CommonName); err != nil {
		return nil, err
	}
	for _, n := range c.DNSNames {
		v, err := e.Expand(field+".dnsNames", n)
		if err != nil {
			return nil, err
		}
		s.DNSNames = append(s.DNSNames, v)
	}
	for _, n := range c.IPAddresses {
		v, err := e.Expand(field+".ipAddresses", n)
		if err != nil {
			return nil, err
		}
		ip := net.ParseIP(v)
		if ip == nil {
			return nil, agent.BadInput(fmt.Errorf("%s.ipAddresses: %q became %q, which is not an IP address", field, n, v))
		}
		s.IPs = append(s.IPs, ip)
	}
	if c.Kubeconfig != nil {
		if s.Server, err = e.Expand(field+".kubeconfig.server", c.Kubeconfig.Server); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Ensure makes the certificate, key and kubeconfig of s exist under root,
// issuing only when what is there is not current; it reports whether it
// issued.
func Ensure(root string, s *Spec, now time.Time) (issued bool, err error) {
	w, err := check(root, s, now)
	if err != nil {
		return false, err
	}
	return w.issue, w.apply(root)
}

// work is what a certificate needs: issuing, its kubeconfig written, or
// both.
type work struct {
	spec     *Spec
	ca       *x509.Certificate
	caKey    crypto.Signer
	uid, gid int
	now      time.Time
	issue    bool
	// kubeconfig is the kubeconfig to write; nil when current or none.
	kubeconfig []byte
}

// check compares what is under root with what s asks for.
func check(root string, s *Spec, now time.Time) (*work, error) {
	path := func(p string) string { return filepath.Join(root, p) }
	ca, caKey, err := LoadCA(path(s.CACert), path(s.CAKey))
	if err != nil {
		return nil, err
	}
	uid, gid, err := owner(s.Owner)
	if err != nil {
		return nil, err
	}
	s.notAfter = now.Add(s.Validity)
	if ca.NotAfter.Before(s.notAfter) {
		s.notAfter = ca.NotAfter
	}
	if !now.Before(ca.NotAfter) {
		return nil, agent.BadInput(fmt.Errorf("CA %s expired at %s: renew it and deploy again", s.CACert, ca.NotAfter.UTC().Format(time.RFC3339)))
	}
	w := &work{spec: s, ca: ca, caKey: caKey, uid: uid, gid: gid, now: now}
	if cur, ok := current(path(s.Cert), path(s.Key), ca, s, now); ok {
		s.notAfter = cur.NotAfter
	} else {
		w.issue = true
	}
	if k := s.Kubeconfig; k != nil {
		b, err := kubeconfig(s)
		if err != nil {
			return nil, err
		}
		if old, err := os.ReadFile(path(k.Path)); err != nil || !bytes.Equal(old, b) {
			w.kubeconfig = b
		}
	}
	return w, nil
}

// apply issues and writes what check found.
func (w *work) apply(root string) error {
	path := func(p string) string { return filepath.Join(root, p) }
	s := w.spec
	if w.issue {
		certPEM, keyPEM, err := leafcert.Issue(w.ca, w.caKey, leaf(s), w.now)
		if err != nil {
			return err
		}
		// The key first: a reader that finds the new certificate finds its key.
		if err := writeOwned(path(s.Key), keyPEM, 0o600, w.uid, w.gid); err != nil {
			return err
		}
		if err := writeOwned(path(s.Cert), certPEM, 0o644, w.uid, w.gid); err != nil {
			return err
		}
	}
	if w.kubeconfig != nil {
		return writeOwned(path(s.Kubeconfig.Path), w.kubeconfig, 0o600, w.uid, w.gid)
	}
	return nil
}

// LoadCA reads a CA certificate and its key (PEM), refusing a certificate
// that is no CA, a key still holding a secret marker and a key that is not
// the certificate's. The pod identity webhook signs its serving
// certificate with the cluster CA it so reads.
func LoadCA(certPath, keyPath string) (*x509.Certificate, crypto.Signer, error) {
	b, err := os.ReadFile(certPath)
	if err != nil {
		return nil, nil, fmt.Errorf("CA certificate: %w", err)
	}
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, nil, agent.BadInput(fmt.Errorf("CA certificate %s is not a PEM certificate", certPath))
	}
	ca, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, nil, agent.BadInput(fmt.Errorf("CA certificate %s: %v", certPath, err))
	}
	if !ca.IsCA {
		return nil, nil, agent.BadInput(fmt.Errorf("%s is not a CA certificate (basic constraints)", certPath))
	}
	kb, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, nil, fmt.Errorf("CA key: %w", err)
	}
	if nodeplan.MarkerPattern.Match(kb) {
		return nil, nil, agent.BadInput(fmt.Errorf("CA key %s still holds a secret marker: run the secrets step first, with the key in the secrets plan", keyPath))
	}
	key, err := keyutil.ParsePrivateKeyPEM(kb)
	if err != nil {
		return nil, nil, agent.BadInput(fmt.Errorf("CA key %s: %v", keyPath, err))
	}
	signer, ok := key.(crypto.Signer)
	if !ok || !leafcert.SamePublicKey(signer.Public(), ca.PublicKey) {
		return nil, nil, agent.BadInput(fmt.Errorf("CA key %s does not belong to CA certificate %s", keyPath, certPath))
	}
	return ca, signer, nil
}

// current returns the certificate at certPath when it can stay by
// leafcert.Keep's rules, its key at keyPath.
func current(certPath, keyPath string, ca *x509.Certificate, s *Spec, now time.Time) (*x509.Certificate, bool) {
	b, err := os.ReadFile(certPath)
	if err != nil {
		return nil, false
	}
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, false
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, false
	}
	kb, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, false
	}
	key, err := keyutil.ParsePrivateKeyPEM(kb)
	if err != nil {
		return nil, false
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, false
	}
	if keep, _ := leafcert.Keep(c, signer, ca, leaf(s), now); !keep {
		return nil, false
	}
	return c, true
}

// leaf is the certificate s asks for.
func leaf(s *Spec) leafcert.Leaf {
	l := leafcert.Leaf{CommonName: s.CommonName, Organizations: s.Subject.Organizations, DNSNames: s.DNSNames, IPAddresses: s.IPs,
		NotAfter: s.notAfter, RSA: s.KeyAlgorithm == nodeplan.KeyRSA2048}
	for _, u := range s.Usages {
		switch u {
		case nodeplan.UsageServerAuth:
			l.Usages = append(l.Usages, x509.ExtKeyUsageServerAuth)
		case nodeplan.UsageClientAuth:
			l.Usages = append(l.Usages, x509.ExtKeyUsageClientAuth)
		}
	}
	return l
}

// kubeconfig is a kubeconfig naming the certificate, key and CA by path.
func kubeconfig(s *Spec) ([]byte, error) {
	user := s.Kubeconfig.User
	if user == "" {
		user = "default"
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kubernetes"] = &clientcmdapi.Cluster{Server: s.Server, CertificateAuthority: s.CACert}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificate: s.Cert, ClientKey: s.Key}
	cfg.Contexts["default"] = &clientcmdapi.Context{Cluster: "kubernetes", AuthInfo: user}
	cfg.CurrentContext = "default"
	return clientcmd.Write(*cfg)
}

func writeOwned(p string, b []byte, mode os.FileMode, uid, gid int) error {
	if err := fileutil.WriteAtomic(p, b, mode); err != nil {
		return err
	}
	if uid != -1 || gid != -1 {
		return os.Lchown(p, uid, gid)
	}
	return nil
}

// owner resolves "user[:group]"; -1 leaves an id as it is (root's).
func owner(s string) (uid, gid int, err error) {
	uid, gid = -1, -1
	if s == "" {
		return uid, gid, nil
	}
	un, gn, _ := strings.Cut(s, ":")
	u, err := user.Lookup(un)
	if err != nil {
		return 0, 0, agent.BadInput(fmt.Errorf("owner: no user %q on this machine", un))
	}
	uid, _ = strconv.Atoi(u.Uid)
	if gn == "" {
		gid, _ = strconv.Atoi(u.Gid)
		return uid, gid, nil
	}
	g, err := user.LookupGroup(gn)
	if err != nil {
		return 0, 0, agent.BadInput(fmt.Errorf("owner: no group %q on this machine", gn))
	}
	gid, _ = strconv.Atoi(g.Gid)
	return uid, gid, nil
}
