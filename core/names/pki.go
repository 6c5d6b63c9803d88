package names

// Files of the cluster's PKI on the machines, in kubeadm's layout, so that
// an operator who knows kubeadm finds everything where they expect it. The
// pki plugin puts them there (the CAs' certificates and keys as files, the
// leaves through the certificates plan); the plugins that run Kubernetes
// and etcd name them in flags and kubeconfigs.
//
// Which role holds which file is the pki plugin's contract: controllers
// hold the cluster CA and front-proxy CA with their keys, the
// service-account key pair, the etcd CA's certificate and the API server's
// etcd client certificate; etcd members hold the etcd CA with its key;
// workers hold the cluster CA's certificate only.
const (
	// PKIDir holds every PKI file.
	PKIDir = "/etc/kubernetes/pki"

	// The cluster CA: signs the API server's serving certificate and every
	// client certificate the API server trusts (--client-ca-file).
	PKICACert = PKIDir + "/ca.crt"
	PKICAKey  = PKIDir + "/ca.key"

	// The front-proxy CA: signs the API server's client certificate for
	// aggregated API servers (--requestheader-client-ca-file).
	PKIFrontProxyCACert = PKIDir + "/front-proxy-ca.crt"
	PKIFrontProxyCAKey  = PKIDir + "/front-proxy-ca.key"

	// The service-account key pair: the API server signs tokens with the
	// key and checks them with the public key.
	PKIServiceAccountPub = PKIDir + "/sa.pub"
	PKIServiceAccountKey = PKIDir + "/sa.key"

	// The etcd CA: signs etcd's serving, peer and client certificates.
	PKIEtcdCACert = PKIDir + "/etcd/ca.crt"
	PKIEtcdCAKey  = PKIDir + "/etcd/ca.key"

	// Leaves on the controllers.
	PKIAPIServerCert              = PKIDir + "/apiserver.crt"
	PKIAPIServerKey               = PKIDir + "/apiserver.key"
	PKIAPIServerKubeletClientCert = PKIDir + "/apiserver-kubelet-client.crt"
	PKIAPIServerKubeletClientKey  = PKIDir + "/apiserver-kubelet-client.key"
	PKIAPIServerEtcdClientCert    = PKIDir + "/apiserver-etcd-client.crt"
	PKIAPIServerEtcdClientKey     = PKIDir + "/apiserver-etcd-client.key"
	PKIFrontProxyClientCert       = PKIDir + "/front-proxy-client.crt"
	PKIFrontProxyClientKey        = PKIDir + "/front-proxy-client.key"

	// Leaves on the etcd members.
	PKIEtcdServerCert            = PKIDir + "/etcd/server.crt"
	PKIEtcdServerKey             = PKIDir + "/etcd/server.key"
	PKIEtcdPeerCert              = PKIDir + "/etcd/peer.crt"
	PKIEtcdPeerKey               = PKIDir + "/etcd/peer.key"
	PKIEtcdHealthcheckClientCert = PKIDir + "/etcd/healthcheck-client.crt"
	PKIEtcdHealthcheckClientKey  = PKIDir + "/etcd/healthcheck-client.key"
)

// The API server's address as the machines and the operator know it.
const (
	// APIServerPort is the port the API server and its load balancer
	// listen on.
	APIServerPort = 443
	// APIServerLocalURL is how the controllers' own clients (kubelet,
	// controller-manager, scheduler, kube-aws-node) reach the API server
	// on the same machine: the loopback address is in its certificate.
	APIServerLocalURL = "https://127.0.0.1:443"
)

// Kubeconfigs on the machines. The controllers' name their client
// certificate and key by path (PKIControllerManagerCert...: the
// certificates step writes them beside the other leaves) and reach the API
// server on the machine itself.
const (
	KubeconfigDir               = "/etc/kubernetes"
	KubeconfigControllerManager = KubeconfigDir + "/controller-manager.conf"
	KubeconfigScheduler         = KubeconfigDir + "/scheduler.conf"
	// KubeconfigKubelet is the controllers' kubelet's (workers' kubelets
	// get theirs by TLS bootstrapping, from KubeconfigBootstrapKubelet).
	KubeconfigKubelet = KubeconfigDir + "/kubelet.conf"
	// KubeconfigAdmin is kube-aws-node's on the controllers (add-ons, the
	// kubelet serving CSR approver): cluster-admin.
	KubeconfigAdmin = KubeconfigDir + "/admin.conf"
	// KubeconfigBootstrapKubelet is the workers' bootstrap kubeconfig
	// (a bootstrap token), with which the kubelet asks for its client
	// certificate.
	KubeconfigBootstrapKubelet = KubeconfigDir + "/bootstrap-kubelet.conf"
)

// Client certificates of the kubeconfigs, beside the other leaves.
const (
	PKIControllerManagerCert = PKIDir + "/controller-manager.crt"
	PKIControllerManagerKey  = PKIDir + "/controller-manager.key"
	PKISchedulerCert         = PKIDir + "/scheduler.crt"
	PKISchedulerKey          = PKIDir + "/scheduler.key"
	PKIKubeletClientCert     = PKIDir + "/kubelet-client.crt"
	PKIKubeletClientKey      = PKIDir + "/kubelet-client.key"
	PKIAdminCert             = PKIDir + "/admin.crt"
	PKIAdminKey              = PKIDir + "/admin.key"
)

// Subjects Kubernetes gives meaning to (RBAC's default bindings, the node
// authorizer), and the front proxy's name the API server admits
// (--requestheader-allowed-names).
const (
	GroupMasters               = "system:masters"
	GroupNodes                 = "system:nodes"
	UserControllerManager      = "system:kube-controller-manager"
	UserScheduler              = "system:kube-scheduler"
	NodeUserPrefix             = "system:node:"
	UserFrontProxyClient       = "front-proxy-client"
	UserAPIServerKubeletClient = "kube-apiserver-kubelet-client"
	UserAPIServerEtcdClient    = "kube-apiserver-etcd-client"
)

// TLSCipherSuites are the TLS 1.2 cipher suites the API server and the
// kubelets offer (TLS 1.3 has its own, which Go does not let one choose):
// forward secrecy and authenticated encryption only, the suites the CIS
// Kubernetes Benchmark accepts for both (1.2.29, 4.2.12). AWS's load
// balancer health checks and every Kubernetes client speak them; the API
// server, a kubelet's one caller, does. One list, because the two plugins
// that set them must agree.
func TLSCipherSuites() []string {
	return []string{
		"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
		"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
		"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
		"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
		"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
		"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
	}
}
