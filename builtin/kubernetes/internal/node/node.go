// Package node builds what every Kubernetes node of a kube-aws cluster runs,
// controllers and workers alike: containerd's configuration, the kubelet's
// unit, configuration file and flags, and the role's goal (the node Ready).
// Workers join by TLS bootstrapping; controllers hold a kubelet kubeconfig
// the pki plugin issues on the machine.
//
// Every setting that departs from a default is explained where it is made
// and in docs/design.md ("Settings of the nodes"), which says why it is safe
// on AWS as well as on the local machines the end-to-end harness boots.
package node

import (
	"bytes"
	"fmt"

	"github.com/BurntSushi/toml"
	"sigs.k8s.io/yaml"

	"github.com/kube-aws/kube-aws/builtin/kubernetes/internal/versions"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
)

// Paths on the machines.
const (
	ContainerdConfigPath = "/etc/containerd/config.toml"
	ContainerdSocket     = "/run/containerd/containerd.sock"
	// KubeletBinary is where the kubelet artifact is installed.
	KubeletBinary     = "/usr/local/bin/kubelet"
	KubeletConfigPath = "/var/lib/kubelet/config.yaml"
	KubeletUnit       = "kubelet.service"
	// KubeletEnvPath is the userdata plugin's file of the kubelet's flags
	// (KUBELET_ARGS), built from every plugin's kubelet flags, labels and
	// taints.
	KubeletEnvPath = "/etc/kubernetes/kubelet.env"
	// StaticPodDir is where the controllers' kubelet reads static pods.
	StaticPodDir = "/etc/kubernetes/manifests"
	// CNIBinDir and CNIConfDir are where the CNI plugins' binaries are
	// installed and where the CNI add-on writes its configuration.
	CNIBinDir  = "/opt/cni/bin"
	CNIConfDir = "/etc/cni/net.d"
)

// Settings are the cluster-wide values the nodes need.
type Settings struct {
	Release       versions.Release
	ClusterDNS    string
	ClusterDomain string
}

// SettingsOf reads them from the cluster.
func SettingsOf(c *config.Cluster, r versions.Release) (Settings, error) {
	dns, err := c.Kubernetes.DNSServiceIP()
	if err != nil {
		return Settings{}, err
	}
	return Settings{Release: r, ClusterDNS: dns.String(), ClusterDomain: c.Kubernetes.ClusterDomain}, nil
}

var (
	controller = construct.Target{Role: construct.Controller}
	worker     = construct.Target{Role: construct.Worker}
)

// Contribute adds the nodes' files, units and kubelet flags to set (Goals
// their goal plans).
func Contribute(set *construct.Set, s Settings) error {
	containerd, err := ContainerdConfig(s.Release)
	if err != nil {
		return err
	}
	for _, t := range []construct.Target{controller, worker} {
		set.Files = append(set.Files, construct.File{Target: t, Path: ContainerdConfigPath, Mode: "0644", Content: containerd})
		kc, err := KubeletConfig(s, t.Role == construct.Controller)
		if err != nil {
			return err
		}
		// Readable by root only, as the CIS Benchmark asks (4.1.9): it
		// says how the kubelet authenticates its callers.
		set.Files = append(set.Files, construct.File{Target: t, Path: KubeletConfigPath, Mode: "0600", Content: kc})
		set.Units = append(set.Units,
			construct.Unit{Target: t, Name: KubeletUnit, Content: kubeletUnit, Enable: true},
			// containerd comes with the machine image and is running when
			// the userdata is applied: a drop-in makes the userdata
			// restart it, so it reads the configuration above.
			construct.Unit{Target: t, Name: "containerd.service", DropIns: []construct.DropIn{{Name: "10-kube-aws", Content: containerdDropIn}}},
		)
	}
	flag := func(t construct.Target, name, value string) {
		set.KubeletFlags = append(set.KubeletFlags, construct.TargetedFlag{Target: t, Flag: construct.Flag{Name: name, Value: value}})
	}
	for _, t := range []construct.Target{controller, worker} {
		flag(t, "config", KubeletConfigPath)
		// The AWS cloud controller manager initialises the nodes (their
		// addresses, zone labels, and the removal of terminated ones).
		flag(t, "cloud-provider", "external")
		flag(t, "kubeconfig", names.KubeconfigKubelet)
	}
	// A worker has no client certificate of its own until the API server
	// signs the one its kubelet asks for with the bootstrap token.
	flag(worker, "bootstrap-kubeconfig", names.KubeconfigBootstrapKubelet)
	set.Units = append(set.Units, construct.Unit{Target: worker, Name: KubeletUnit, DropIns: []construct.DropIn{{Name: "10-wait-api", Content: waitAPIDropIn}}})
	return nil
}

// Goals adds the goal plans of the controllers and the workers to set;
// daemonSets are the DaemonSets bound to the controllers (Goal).
func Goals(set *construct.Set, daemonSets []nodeplan.NodeDaemonSet) error {
	for _, t := range []construct.Target{controller, worker} {
		goal, err := nodeplan.Encode(Goal(t.Role, daemonSets))
		if err != nil {
			return err
		}
		set.Files = append(set.Files, construct.File{Target: t, Path: nodeplan.GoalPath, Mode: "0644", Content: string(goal)})
	}
	return nil
}

// Goal is the role's goal plan: its node Ready. A controller also waits
// until its own API server answers /readyz ok, and until its pods of
// daemonSets (bound to the nodes that run them, which its addons step
// upgrades after its kubelet registered) are of its own release, asked with the admin's credentials: the gate of a
// controller's replacement in kube-aws's roll. A worker boots once the
// controllers upgraded those releases (the roll replaces them first), and
// its kubelet's credentials could not read a DaemonSet.
func Goal(role construct.Role, daemonSets []nodeplan.NodeDaemonSet) *nodeplan.GoalPlan {
	if role != construct.Controller {
		return &nodeplan.GoalPlan{Node: &nodeplan.NodeGoal{Kubeconfig: names.KubeconfigKubelet}}
	}
	// Not the API through the load balancer: on AWS a network load
	// balancer that preserves client addresses does not route a target's
	// connection back to the target itself, so a lone controller would
	// never pass. That its API server answers through the load balancer is
	// the roll's gate, read from the load balancer's own health of the
	// instance.
	return &nodeplan.GoalPlan{Node: &nodeplan.NodeGoal{Kubeconfig: names.KubeconfigAdmin, APIReadyz: []string{
		names.APIServerLocalURL + "/readyz",
	}, DaemonSets: daemonSets}}
}

// waitAPIDropIn holds a worker's kubelet until the API server answers its
// bootstrap token: started before the control plane (a cluster booting all
// at once), the kubelet backs off its certificate request and its watches
// and joined about half a minute after the API could take it. Once the
// kubelet has its own kubeconfig it never waits; "-": a wait that gives up
// still starts the kubelet, which then retries as it would have.
var waitAPIDropIn = fmt.Sprintf(`[Service]
ExecStartPre=-%s %s --kubeconfig %s --unless-exists %s --timeout 15m
TimeoutStartSec=16min
`, nodeplan.BinaryPath, nodeplan.StepWaitAPI, names.KubeconfigBootstrapKubelet, names.KubeconfigKubelet)

// kubeletUnit runs the kubelet. The node's name, address and provider ID
// come from the machine's facts (kube-aws-node writes them to facts.env
// before any unit starts): the node is named by EC2's private DNS name and
// carries the instance's provider ID, which is how the AWS cloud controller
// manager finds the instance behind a node. --node-ip, the instance's
// private address (one the cloud controller manager gives the node too),
// lets the kubelet give its node its addresses when it registers: with an
// external cloud provider and no --node-ip it waits for the cloud
// controller manager's, and learns them only at its next status report (up
// to 5 minutes), and its serving certificate, which names those addresses,
// waits as long: until then the API server cannot reach it (logs, exec).
// Every other flag is in KUBELET_ARGS.
var kubeletUnit = fmt.Sprintf(`[Unit]
Description=Kubernetes kubelet (kube-aws)
Documentation=https://kubernetes.io/docs/reference/command-line-tools-reference/kubelet/
Wants=containerd.service
After=containerd.service network-online.target

[Service]
EnvironmentFile=%s
EnvironmentFile=%s
ExecStart=%s --hostname-override=${%s} --node-ip=${%s} --provider-id=aws:///${%s}/${%s} $KUBELET_ARGS
Restart=always
RestartSec=2

[Install]
WantedBy=multi-user.target
`, nodeplan.FactsEnvPath, KubeletEnvPath, KubeletBinary,
	nodeplan.FactEnvName(nodeplan.FactHostname), nodeplan.FactEnvName(nodeplan.FactPrivateIPv4),
	nodeplan.FactEnvName(nodeplan.FactAvailabilityZone), nodeplan.FactEnvName(nodeplan.FactInstanceID))

// containerdDropIn loads the kernel modules containerd's overlay snapshotter
// and the pods' bridge need ("-": a kernel with them built in, or a machine
// that may not load modules, is fine).
const containerdDropIn = `[Service]
ExecStartPre=-/sbin/modprobe overlay
ExecStartPre=-/sbin/modprobe br_netfilter
`

// ContainerdConfig is /etc/containerd/config.toml (format version 2, which
// containerd 1.6 to 2.x read).
func ContainerdConfig(r versions.Release) (string, error) {
	cfg := map[string]any{
		"version": 2,
		"plugins": map[string]any{
			"io.containerd.grpc.v1.cri": map[string]any{
				// The pause image the machines import (air-gapped) or
				// pull, rather than containerd's built-in default, which
				// differs between containerd releases.
				"sandbox_image": r.PauseImage(),
				// Containers never get an oom_score_adj below containerd's
				// own (-999 from its unit): the kubelet asks for -997 at
				// most, so nothing changes on a normal host, and a machine
				// without CAP_SYS_RESOURCE can still start sandboxes.
				"restrict_oom_score_adj": true,
				"containerd": map[string]any{
					"default_runtime_name": "runc",
					"runtimes": map[string]any{
						"runc": map[string]any{
							"runtime_type": "io.containerd.runc.v2",
							// The cgroupfs driver, as the kubelet's
							// cgroupDriver: the two must agree.
							"options": map[string]any{"SystemdCgroup": false},
						},
					},
				},
				"cni": map[string]any{"bin_dir": CNIBinDir, "conf_dir": CNIConfDir},
			},
		},
	}
	var b bytes.Buffer
	b.WriteString("# containerd's configuration, written by kube-aws (kubernetes plugin).\n")
	if err := toml.NewEncoder(&b).Encode(cfg); err != nil {
		return "", fmt.Errorf("encoding containerd's configuration: %w", err)
	}
	return b.String(), nil
}

// kubeletConfiguration is the part of kubelet.config.k8s.io/v1beta1
// KubeletConfiguration kube-aws sets. It is data marshalled with
// sigs.k8s.io/yaml rather than k8s.io/kubelet's type, whose package init
// every render would pay for a dozen fields.
type kubeletConfiguration struct {
	APIVersion               string         `json:"apiVersion"`
	Kind                     string         `json:"kind"`
	Authentication           authentication `json:"authentication"`
	Authorization            authorization  `json:"authorization"`
	CgroupDriver             string         `json:"cgroupDriver"`
	ClusterDNS               []string       `json:"clusterDNS"`
	ClusterDomain            string         `json:"clusterDomain"`
	ContainerRuntimeEndpoint string         `json:"containerRuntimeEndpoint"`
	ReadOnlyPort             int            `json:"readOnlyPort"`
	RotateCertificates       bool           `json:"rotateCertificates"`
	ServerTLSBootstrap       bool           `json:"serverTLSBootstrap"`
	StaticPodPath            string         `json:"staticPodPath,omitempty"`
	TLSCipherSuites          []string       `json:"tlsCipherSuites"`
	TLSMinVersion            string         `json:"tlsMinVersion"`
}

type authentication struct {
	Anonymous enabled `json:"anonymous"`
	Webhook   enabled `json:"webhook"`
	X509      x509    `json:"x509"`
}

type enabled struct {
	Enabled bool `json:"enabled"`
}

type x509 struct {
	ClientCAFile string `json:"clientCAFile"`
}

type authorization struct {
	Mode string `json:"mode"`
}

// KubeletConfig is the kubelet's configuration file; controllers also read
// static pods.
func KubeletConfig(s Settings, controlPlane bool) (string, error) {
	kc := kubeletConfiguration{
		APIVersion: "kubelet.config.k8s.io/v1beta1",
		Kind:       "KubeletConfiguration",
		// Only the API server (a client certificate of the cluster CA)
		// and callers the API server authorises reach the kubelet's API.
		Authentication: authentication{Webhook: enabled{true}, X509: x509{ClientCAFile: names.PKICACert}},
		Authorization:  authorization{Mode: "Webhook"},
		// containerd's runc runtime uses cgroupfs (ContainerdConfig).
		CgroupDriver:             "cgroupfs",
		ClusterDNS:               []string{s.ClusterDNS},
		ClusterDomain:            s.ClusterDomain,
		ContainerRuntimeEndpoint: "unix://" + ContainerdSocket,
		// No unauthenticated read-only port.
		ReadOnlyPort: 0,
		// The client certificate is renewed by the kubelet; its serving
		// certificate is signed by the cluster CA after kube-aws-node's
		// approver checked the names against the EC2 instance.
		RotateCertificates: true,
		ServerTLSBootstrap: true,
		TLSCipherSuites:    names.TLSCipherSuites(),
		TLSMinVersion:      "VersionTLS12",
	}
	if controlPlane {
		kc.StaticPodPath = StaticPodDir
	}
	out, err := yaml.Marshal(kc)
	if err != nil {
		return "", fmt.Errorf("encoding the kubelet's configuration: %w", err)
	}
	return string(out), nil
}
