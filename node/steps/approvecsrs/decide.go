// Package approvecsrs is the `approve-csrs` step, the long-running approver of
// kubelet serving certificate requests on the controllers. The kubelet asks
// for its serving certificate with a CSR for signer
// kubernetes.io/kubelet-serving naming its addresses and DNS names; nothing
// in Kubernetes approves those, and approving them blindly would let any
// node credential get a certificate for any address. This approver
// approves one only when the node asks for names and addresses that its own
// EC2 instance (of this cluster) has, denies it when they are not, and
// leaves every other request (a kubelet client CSR, say) to others.
package approvecsrs

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"

	certv1 "k8s.io/api/certificates/v1"
)

// Verdict is what to do with a request.
type Verdict int

const (
	// Skip: not this approver's business, or decided already.
	Skip Verdict = iota
	Approve
	Deny
	// Retry: the instance could not be looked up now; try again later.
	Retry
)

func (v Verdict) String() string {
	return [...]string{"skip", "approve", "deny", "retry"}[v]
}

// Instance is what EC2 says about a node's instance.
type Instance struct {
	ID string
	// DNSNames are its private and public DNS names.
	DNSNames []string
	// IPs are every private and public address of its interfaces.
	IPs []net.IP
}

// ErrNoInstance is a lookup that found no running instance of the cluster.
var ErrNoInstance = errors.New("no such instance")

// Lookup finds the instance of a node by its name.
type Lookup func(nodeName string) (*Instance, error)

var allowedUsages = []certv1.KeyUsage{certv1.UsageDigitalSignature, certv1.UsageKeyEncipherment, certv1.UsageServerAuth}

// Decide says what to do with a request, and why.
func Decide(csr *certv1.CertificateSigningRequest, lookup Lookup) (Verdict, string) {
	if csr.Spec.SignerName != certv1.KubeletServingSignerName {
		return Skip, "signer " + csr.Spec.SignerName + " is not " + certv1.KubeletServingSignerName
	}
	for _, c := range csr.Status.Conditions {
		if c.Type == certv1.CertificateApproved || c.Type == certv1.CertificateDenied || c.Type == certv1.CertificateFailed {
			return Skip, "already " + string(c.Type)
		}
	}
	node, ok := strings.CutPrefix(csr.Spec.Username, "system:node:")
	if !ok || node == "" || !slices.Contains(csr.Spec.Groups, "system:nodes") {
		return Deny, fmt.Sprintf("requested by %q, not by a node (system:node:<name> in group system:nodes)", csr.Spec.Username)
	}
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return Deny, "the request is not a PEM certificate request"
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return Deny, fmt.Sprintf("the request does not parse: %v", err)
	}
	if err := req.CheckSignature(); err != nil {
		return Deny, fmt.Sprintf("the request's signature is wrong: %v", err)
	}
	if req.Subject.CommonName != csr.Spec.Username || !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
		return Deny, fmt.Sprintf("subject CN=%q O=%v, want CN=%q O=[system:nodes]", req.Subject.CommonName, req.Subject.Organization, csr.Spec.Username)
	}
	if !slices.Contains(csr.Spec.Usages, certv1.UsageServerAuth) {
		return Deny, "usages lack server auth"
	}
	for _, u := range csr.Spec.Usages {
		if !slices.Contains(allowedUsages, u) {
			return Deny, fmt.Sprintf("usage %q is not one a serving certificate has", u)
		}
	}
	if len(req.EmailAddresses) > 0 || len(req.URIs) > 0 {
		return Deny, "a serving certificate names no e-mail address or URI"
	}
	if len(req.DNSNames)+len(req.IPAddresses) == 0 {
		return Deny, "the request names no DNS name or IP address"
	}
	inst, err := lookup(node)
	if errors.Is(err, ErrNoInstance) {
		return Deny, fmt.Sprintf("no running EC2 instance of this cluster is node %s", node)
	}
	if err != nil {
		return Retry, fmt.Sprintf("looking up node %s's instance: %v", node, err)
	}
	var wrong []string
	for _, ip := range req.IPAddresses {
		if !slices.ContainsFunc(inst.IPs, ip.Equal) {
			wrong = append(wrong, ip.String())
		}
	}
	for _, n := range req.DNSNames {
		if !slices.Contains(inst.DNSNames, strings.ToLower(n)) {
			wrong = append(wrong, n)
		}
	}
	if len(wrong) > 0 {
		return Deny, fmt.Sprintf("%s not of instance %s (node %s)", strings.Join(wrong, ", "), inst.ID, node)
	}
	return Approve, fmt.Sprintf("names and addresses are instance %s's (node %s)", inst.ID, node)
}
