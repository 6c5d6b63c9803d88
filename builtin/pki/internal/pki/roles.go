package pki

import (
	"fmt"
	"net"
	"strings"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
)

// Cluster is what of cluster.yaml the machines' certificates depend on.
type Cluster struct {
	// Name is clusterName: the etcd members' DNS names end in
	// names.EtcdZone(Name).
	Name string
	// APIDNSName is apiEndpoint.dnsName, the name clients reach the API
	// by; empty when they use the load balancer's own name.
	APIDNSName string
	// ServiceIP is the first address of the service CIDR: the kubernetes
	// service's, which pods reach the API server by.
	ServiceIP string
	// ClusterDomain is the cluster's DNS domain (cluster.local).
	ClusterDomain string
}

// file is one file of a role: a kept credential by its marker, or
// content computed from them (the service-account public key).
type file struct {
	role construct.Role
	path string
	// kept names the credential (Keep*) whose marker is the content.
	kept    string
	content []byte
}

// Constructs are what each role's machines get from the pki plugin: the
// files of the CAs the role holds and the role's certificates plan, whose
// leaves the machine issues itself with facts only it knows (its address,
// its hostname, the etcd member whose volume it attached). Workers get the
// cluster CA's certificate only: their kubelets join by TLS bootstrapping.
//
// Every kept credential, certificates included, reaches the machines as
// its marker in a sensitive file (kube-aws scrubs the plain text of every
// generated secret from its output, and the secrets step substitutes it
// whole on the machine): one rule for all of them, and an operator's CA
// certificate is never written anywhere but credentials/.
func Constructs(cl Cluster, cr *Credentials) (*construct.Set, error) {
	files := []file{
		{construct.Controller, names.PKICACert, KeepCACert, nil},
		{construct.Controller, names.PKICAKey, KeepCAKey, nil},
		{construct.Controller, names.PKIFrontProxyCACert, KeepFrontProxyCACert, nil},
		{construct.Controller, names.PKIFrontProxyCAKey, KeepFrontProxyCAKey, nil},
		{construct.Controller, names.PKIServiceAccountPub, "", cr.ServiceAccountPub},
		{construct.Controller, names.PKIServiceAccountKey, KeepServiceAccountKey, nil},
		{construct.Controller, names.PKIEtcdCACert, KeepEtcdCACert, nil},
		{construct.Controller, names.PKIAPIServerEtcdClientCert, KeepAPIServerEtcdClientCert, nil},
		{construct.Controller, names.PKIAPIServerEtcdClientKey, KeepAPIServerEtcdClientKey, nil},
		{construct.Etcd, names.PKIEtcdCACert, KeepEtcdCACert, nil},
		{construct.Etcd, names.PKIEtcdCAKey, KeepEtcdCAKey, nil},
		{construct.Worker, names.PKICACert, KeepCACert, nil},
	}
	set := &construct.Set{}
	for _, f := range files {
		cf := construct.File{Target: construct.Target{Role: f.role}, Path: f.path, Mode: "0644", Content: string(f.content)}
		if f.kept != "" {
			m, ok := cr.Markers[f.kept]
			if !ok {
				return nil, fmt.Errorf("no marker for %s", f.kept)
			}
			cf.Content, cf.Sensitive, cf.Format = m, true, string(nodeplan.FormatWhole)
			if strings.HasSuffix(f.path, ".key") {
				cf.Mode = "0600"
			}
		}
		set.Files = append(set.Files, cf)
	}
	for _, p := range []struct {
		role construct.Role
		plan *nodeplan.CertificatesPlan
	}{
		{construct.Controller, ControllerCertificates(cl)},
		{construct.Etcd, EtcdCertificates(cl)},
	} {
		b, err := nodeplan.Encode(p.plan)
		if err != nil {
			return nil, fmt.Errorf("the %s certificates plan: %w", p.role, err)
		}
		set.Files = append(set.Files, construct.File{Target: construct.Target{Role: p.role}, Path: nodeplan.CertificatesPath,
			Mode: "0644", Content: string(b)})
	}
	for _, role := range []construct.Role{construct.Controller, construct.Etcd} {
		set.Units = append(set.Units, renewalUnits(role)...)
	}
	return set, nil
}

// Units that issue the machine's leaves again before they expire.
const (
	RenewUnit  = "kube-aws-certificates.service"
	RenewTimer = "kube-aws-certificates.timer"
)

// renewalUnits run the certificates step once a day, so that a machine
// that runs for longer than its leaves' year gets new ones: the step
// issues only a leaf with less than a third of its validity left, from the
// CA key the machine holds. etcd and the API server read their serving
// certificates from the files on every new connection; clients that read
// theirs only at start pick the new one up when they restart.
func renewalUnits(role construct.Role) []construct.Unit {
	t := construct.Target{Role: role}
	return []construct.Unit{
		{Target: t, Name: RenewUnit, Content: `[Unit]
Description=issue this machine's certificates again when a third of their validity is left (kube-aws)

[Service]
Type=oneshot
ExecStart=` + nodeplan.BinaryPath + ` ` + nodeplan.StepCertificates + `
`},
		{Target: t, Name: RenewTimer, Enable: true, Content: `[Unit]
Description=check this machine's certificates daily (kube-aws)

[Timer]
OnCalendar=daily
RandomizedDelaySec=1h
Persistent=true

[Install]
WantedBy=timers.target
`},
	}
}

var (
	server = []nodeplan.Usage{nodeplan.UsageServerAuth}
	client = []nodeplan.Usage{nodeplan.UsageClientAuth}
	both   = []nodeplan.Usage{nodeplan.UsageServerAuth, nodeplan.UsageClientAuth}
)

func fact(name string) string { return "{" + name + "}" }

// ControllerCertificates are the leaves a controller issues from the
// cluster CA and the front-proxy CA, whose keys it holds. The API server's
// names are every name a client reaches it by: the kubernetes service (by
// name and first service IP), the endpoint's DNS name, the load balancer's
// own name (a fact the bootstrap has from the control-plane stack), the
// machine's hostname and address, and the loopback address its
// neighbours on the machine use (names.APIServerLocalURL).
func ControllerCertificates(cl Cluster) *nodeplan.CertificatesPlan {
	dns := []string{"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc." + cl.ClusterDomain,
		fact(names.FactAPILoadBalancerDNS), fact(nodeplan.FactHostname)}
	if cl.APIDNSName != "" {
		dns = append(dns, cl.APIDNSName)
	}
	ips := []string{fact(nodeplan.FactPrivateIPv4), "127.0.0.1"}
	if net.ParseIP(cl.ServiceIP) != nil {
		ips = append(ips, cl.ServiceIP)
	}
	ca := func(c nodeplan.Certificate) nodeplan.Certificate {
		c.CACert, c.CAKey = names.PKICACert, names.PKICAKey
		return c
	}
	kubeconfig := func(path, user string) *nodeplan.Kubeconfig {
		return &nodeplan.Kubeconfig{Path: path, Server: names.APIServerLocalURL, User: user}
	}
	return &nodeplan.CertificatesPlan{Certificates: []nodeplan.Certificate{
		ca(nodeplan.Certificate{Name: "apiserver", Subject: nodeplan.Subject{CommonName: "kube-apiserver"}, Usages: server,
			DNSNames: dns, IPAddresses: ips, Cert: names.PKIAPIServerCert, Key: names.PKIAPIServerKey}),
		ca(nodeplan.Certificate{Name: "apiserver-kubelet-client",
			Subject: nodeplan.Subject{CommonName: names.UserAPIServerKubeletClient, Organizations: []string{names.GroupMasters}},
			Usages:  client, Cert: names.PKIAPIServerKubeletClientCert, Key: names.PKIAPIServerKubeletClientKey}),
		{Name: "front-proxy-client", CACert: names.PKIFrontProxyCACert, CAKey: names.PKIFrontProxyCAKey,
			Subject: nodeplan.Subject{CommonName: names.UserFrontProxyClient}, Usages: client,
			Cert: names.PKIFrontProxyClientCert, Key: names.PKIFrontProxyClientKey},
		ca(nodeplan.Certificate{Name: "controller-manager", Subject: nodeplan.Subject{CommonName: names.UserControllerManager},
			Usages: client, Cert: names.PKIControllerManagerCert, Key: names.PKIControllerManagerKey,
			Kubeconfig: kubeconfig(names.KubeconfigControllerManager, "controller-manager")}),
		ca(nodeplan.Certificate{Name: "scheduler", Subject: nodeplan.Subject{CommonName: names.UserScheduler},
			Usages: client, Cert: names.PKISchedulerCert, Key: names.PKISchedulerKey,
			Kubeconfig: kubeconfig(names.KubeconfigScheduler, "scheduler")}),
		ca(nodeplan.Certificate{Name: "kubelet-client",
			Subject: nodeplan.Subject{CommonName: names.NodeUserPrefix + fact(nodeplan.FactHostname), Organizations: []string{names.GroupNodes}},
			Usages:  client, Cert: names.PKIKubeletClientCert, Key: names.PKIKubeletClientKey,
			Kubeconfig: kubeconfig(names.KubeconfigKubelet, "kubelet")}),
		ca(nodeplan.Certificate{Name: "admin", Subject: nodeplan.Subject{CommonName: AdminLeaf().CommonName, Organizations: AdminLeaf().Organizations},
			Usages: client, Cert: names.PKIAdminCert, Key: names.PKIAdminKey,
			Kubeconfig: kubeconfig(names.KubeconfigAdmin, "admin")}),
	}}
}

// EtcdCertificates are the leaves an etcd member issues from the etcd CA:
// its serving and peer certificates name the member (a fact the volumes
// step takes from the data volume's tag, so they follow the member to a
// replacement instance) as well as the machine; the healthcheck client is
// what kube-aws-node's goal and snapshot steps reach the member with.
func EtcdCertificates(cl Cluster) *nodeplan.CertificatesPlan {
	member := fact(names.FactEtcdMember)
	dns := []string{names.EtcdMemberHost(cl.Name, member), fact(nodeplan.FactHostname), "localhost"}
	ips := []string{fact(nodeplan.FactPrivateIPv4), "127.0.0.1"}
	ca := func(c nodeplan.Certificate) nodeplan.Certificate {
		c.CACert, c.CAKey = names.PKIEtcdCACert, names.PKIEtcdCAKey
		return c
	}
	return &nodeplan.CertificatesPlan{Certificates: []nodeplan.Certificate{
		ca(nodeplan.Certificate{Name: "etcd-server", Subject: nodeplan.Subject{CommonName: member}, Usages: both,
			DNSNames: dns, IPAddresses: ips, Cert: names.PKIEtcdServerCert, Key: names.PKIEtcdServerKey}),
		ca(nodeplan.Certificate{Name: "etcd-peer", Subject: nodeplan.Subject{CommonName: member}, Usages: both,
			DNSNames: dns, IPAddresses: ips, Cert: names.PKIEtcdPeerCert, Key: names.PKIEtcdPeerKey}),
		ca(nodeplan.Certificate{Name: "etcd-healthcheck-client", Subject: nodeplan.Subject{CommonName: "kube-etcd-healthcheck-client"},
			Usages: client, Cert: names.PKIEtcdHealthcheckClientCert, Key: names.PKIEtcdHealthcheckClientKey}),
	}}
}
