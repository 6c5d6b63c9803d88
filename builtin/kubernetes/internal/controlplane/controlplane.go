// Package controlplane builds what the controllers run besides the API
// server (whose static pod the apiserver plugin's flags make): the static
// pods of kube-controller-manager and kube-scheduler, both with leader
// election so that any number of controllers may run them, the plans and
// units of kube-aws-node's kubelet serving CSR approver, of its drainer
// (with the drainer's IAM statements) and of its pod identity webhook, and
// the RBAC bindings that let a worker's kubelet join with a bootstrap
// token.
package controlplane

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/kube-aws/kube-aws/builtin/internal/podspec"
	"github.com/kube-aws/kube-aws/builtin/kubernetes/internal/versions"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
)

// Paths and names on the controllers.
const (
	ManifestDir = "/etc/kubernetes/manifests"
	// ApproverUnit runs `kube-aws-node approve-csrs`.
	ApproverUnit = "kube-aws-approve-csrs.service"
	// DrainerUnit runs `kube-aws-node drainer`.
	DrainerUnit = "kube-aws-drainer.service"
	// PodIdentityWebhookUnit runs `kube-aws-node pod-identity-webhook`.
	PodIdentityWebhookUnit = "kube-aws-pod-identity-webhook.service"
	// Health ports of the components (their defaults), probed on loopback.
	ControllerManagerPort = 10257
	SchedulerPort         = 10259
)

var controller = construct.Target{Role: construct.Controller}

// Contribute adds the controllers' static pods, the approver's plan and
// unit, and the node bootstrap RBAC manifest to set.
func Contribute(set *construct.Set, c *config.Cluster, r versions.Release) error {
	kcm, err := controllerManager(c, r)
	if err != nil {
		return err
	}
	sched, err := scheduler(r)
	if err != nil {
		return err
	}
	approver, err := nodeplan.Encode(&nodeplan.ApproverPlan{Kubeconfig: names.KubeconfigAdmin})
	if err != nil {
		return err
	}
	set.Files = append(set.Files, []construct.File{
		{Target: controller, Path: ManifestDir + "/kube-controller-manager.yaml", Mode: "0600", Content: string(kcm)},
		{Target: controller, Path: ManifestDir + "/kube-scheduler.yaml", Mode: "0600", Content: string(sched)},
		{Target: controller, Path: nodeplan.ApproverPath, Mode: "0644", Content: string(approver)},
	}...)
	set.Units = append(set.Units, construct.Unit{Target: controller, Name: ApproverUnit, Content: approverUnit, Enable: true})
	set.Manifests = append(set.Manifests, construct.Manifest{Name: "kube-aws-node-bootstrap.yaml", Content: bootstrapRBAC})
	return nil
}

// Drainer adds the drainer's plan, its unit on every controller (one leads,
// by a Lease), and the controllers' IAM statements it needs. The plan holds
// no drain settings: a termination hook's drain is the one the hook's
// metadata asks for (cluster.yaml's drain, rendered into the hooks), and
// kube-aws's roll names its own in each request, so changing cluster.yaml's
// drain replaces no controller. A fatal means s3URI does not parse (core's
// validation refuses that first).
func Drainer(set *construct.Set, c *config.Cluster) (diag.List, error) {
	plan, err := nodeplan.Encode(&nodeplan.DrainerPlan{Kubeconfig: names.KubeconfigAdmin, Hook: names.DrainLifecycleHook})
	if err != nil {
		return nil, err
	}
	set.Files = append(set.Files, construct.File{Target: controller, Path: nodeplan.DrainerPath, Mode: "0644", Content: string(plan)})
	set.Units = append(set.Units, construct.Unit{Target: controller, Name: DrainerUnit, Content: drainerUnit, Enable: true})
	iam, diags := drainerStatements(c)
	set.IAM = append(set.IAM, iam...)
	return diags, nil
}

// PodIdentityWebhook adds the pod identity webhook's plan and its unit on
// every controller: each serves the API server on its own controller, and
// each keeps the same MutatingWebhookConfiguration. It signs its serving
// certificate with the cluster CA, which every controller holds.
func PodIdentityWebhook(set *construct.Set) error {
	plan, err := nodeplan.Encode(&nodeplan.PodIdentityWebhookPlan{Kubeconfig: names.KubeconfigAdmin, CACert: names.PKICACert, CAKey: names.PKICAKey})
	if err != nil {
		return err
	}
	set.Files = append(set.Files, construct.File{Target: controller, Path: nodeplan.PodIdentityWebhookPath, Mode: "0644", Content: string(plan)})
	set.Units = append(set.Units, construct.Unit{Target: controller, Name: PodIdentityWebhookUnit, Content: podIdentityWebhookUnit, Enable: true})
	return nil
}

// drainerStatements let the controllers' drainer find the instances to
// drain (Auto Scaling and EC2 describe calls, which take no resource-level
// permissions), answer the termination hook of the cluster's own groups
// only (those tagged kubernetes.io/cluster/<cluster>=owned), and write its
// drain statuses under the cluster's prefix.
func drainerStatements(c *config.Cluster) ([]construct.IAMStatement, diag.List) {
	owned, err := json.Marshal(map[string]any{"StringEquals": map[string]string{
		"autoscaling:ResourceTag/" + names.KubernetesClusterTag(c.ClusterName): "owned"}})
	if err != nil {
		return nil, diag.List{diag.Fatalf("the drainer's IAM condition: %v", err)}
	}
	partition := config.Partition(c.Region)
	out := []construct.IAMStatement{
		{Target: controller, Sid: "KubeAwsDrainerFind", Effect: "Allow",
			Actions: []string{"autoscaling:DescribeAutoScalingGroups", "autoscaling:DescribeLifecycleHooks", "ec2:DescribeInstances"}, Resources: []string{"*"}},
		{Target: controller, Sid: "KubeAwsDrainerHook", Effect: "Allow",
			Actions:   []string{"autoscaling:CompleteLifecycleAction", "autoscaling:RecordLifecycleActionHeartbeat"},
			Resources: []string{fmt.Sprintf("arn:%s:autoscaling:%s:*:autoScalingGroup:*:autoScalingGroupName/*", partition, c.Region)},
			Condition: owned},
	}
	bucket, prefix, err := config.ParseS3URI(c.S3URI)
	if err != nil {
		return out, diag.List{diag.Fatalf("%v", err).At("s3URI").WithHint("write it as s3://bucket/prefix")}
	}
	out = append(out, construct.IAMStatement{Target: controller, Sid: "KubeAwsDrainerStatus", Effect: "Allow",
		Actions:   []string{"s3:PutObject"},
		Resources: []string{fmt.Sprintf("arn:%s:s3:::%s/%s/*", partition, bucket, nodeplan.Key(prefix, nodeplan.DrainStatusPrefix))}})
	return out, nil
}

// flags renders name -> value as --name=value, sorted, refusing an empty
// value (the component would refuse it at start).
func flags(component string, m map[string]string) ([]string, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := []string{component}
	for _, k := range keys {
		if m[k] == "" {
			return nil, fmt.Errorf("%s flag --%s has an empty value", component, k)
		}
		out = append(out, "--"+k+"="+m[k])
	}
	return out, nil
}

var pkiVolume = construct.Volume{Name: "k8s-certs", HostPath: names.PKIDir, MountPath: names.PKIDir, ReadOnly: true}
var caCertsVolume = construct.Volume{Name: "ca-certs", HostPath: "/etc/ssl/certs", MountPath: "/etc/ssl/certs", ReadOnly: true}

func kubeconfigVolume(path string) construct.Volume {
	return construct.Volume{Name: "kubeconfig", HostPath: path, MountPath: path, ReadOnly: true}
}

// component builds the static pod of a component that reaches the API
// server with the kubeconfig kc, serves its health endpoint on loopback and
// elects a leader among the controllers; flags are its own on top.
func component(r versions.Release, name, kc string, own map[string]string, volumes []construct.Volume, port int, health, cpu string) ([]byte, error) {
	all := map[string]string{
		"authentication-kubeconfig": kc,
		"authorization-kubeconfig":  kc,
		"kubeconfig":                kc,
		"bind-address":              "127.0.0.1",
		"leader-elect":              "true",
		"profiling":                 "false",
	}
	for k, v := range own {
		all[k] = v
	}
	command, err := flags(name, all)
	if err != nil {
		return nil, err
	}
	// The kubeconfig names its client certificate by path, in PKIDir.
	volumes = append([]construct.Volume{pkiVolume, kubeconfigVolume(kc)}, volumes...)
	return podspec.ComponentPod(podspec.Component{Name: name, Image: r.Image(name), Command: command,
		Volumes: volumes, HealthPort: port, HealthPath: health, CPU: cpu})
}

func controllerManager(c *config.Cluster, r versions.Release) ([]byte, error) {
	return component(r, "kube-controller-manager", names.KubeconfigControllerManager, map[string]string{
		// Node IPAM gives every node a /24 of the pod network
		// (node.spec.podCIDR), which the CNI (flannel) takes its subnet from.
		"allocate-node-cidrs":              "true",
		"cluster-cidr":                     c.Kubernetes.PodCIDR,
		"node-cidr-mask-size":              "24",
		"service-cluster-ip-range":         c.Kubernetes.ServiceCIDR,
		"client-ca-file":                   names.PKICACert,
		"requestheader-client-ca-file":     names.PKIFrontProxyCACert,
		"root-ca-file":                     names.PKICACert,
		"service-account-private-key-file": names.PKIServiceAccountKey,
		// The CSR signer signs kubelets' client certificates (TLS
		// bootstrapping) and serving certificates with the cluster CA.
		"cluster-signing-cert-file": names.PKICACert,
		"cluster-signing-key-file":  names.PKICAKey,
		"cluster-name":              c.ClusterName,
		// bootstrapsigner and tokencleaner are off by default; the
		// bootstrap token workers join with needs the latter to expire.
		"controllers":                     "*,bootstrapsigner,tokencleaner",
		"use-service-account-credentials": "true",
	}, []construct.Volume{caCertsVolume}, ControllerManagerPort, "/healthz", "200m")
}

func scheduler(r versions.Release) ([]byte, error) {
	return component(r, "kube-scheduler", names.KubeconfigScheduler, nil, nil, SchedulerPort, "/livez", "100m")
}

// approverUnit runs the kubelet serving CSR approver on every controller
// (each decides a request at most once; a second one finds it decided).
var approverUnit = agentUnit("kube-aws: approve kubelet serving certificate requests that match their EC2 instance", nodeplan.StepApproveCSRs)

// drainerUnit runs the drainer on every controller: one at a time drains
// (the one holding the Lease), the others stand by to take over. On
// SIGTERM it stops its drains and lets go of the Lease.
var drainerUnit = agentUnit("kube-aws: drain a node before its instance goes (termination hook, or kube-aws's roll)", nodeplan.StepDrainer)

// podIdentityWebhookUnit runs the pod identity webhook on every
// controller; the API server on the same controller calls it.
var podIdentityWebhookUnit = agentUnit("kube-aws: give pods the IAM role their service account names (admission webhook)", nodeplan.StepPodIdentityWebhook)

// agentUnit is a unit that runs a long-lived kube-aws-node step on the
// controller, restarted whenever it stops.
func agentUnit(description, step string) string {
	return strings.Join([]string{
		"[Unit]",
		"Description=" + description,
		"After=network-online.target",
		"Wants=network-online.target",
		"",
		"[Service]",
		"EnvironmentFile=" + nodeplan.SettingsEnvPath,
		"ExecStart=" + nodeplan.BinaryPath + " " + step,
		"Restart=always",
		"RestartSec=5",
		"",
		"[Install]",
		"WantedBy=multi-user.target",
		"",
	}, "\n")
}

// bootstrapRBAC lets a kubelet holding a bootstrap token (group
// system:bootstrappers) ask for its client certificate, has the controller
// manager's csrapproving controller approve that request and the renewals of
// nodes' own certificates (what kubeadm sets up), and nothing else.
const bootstrapRBAC = `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: kube-aws:kubelet-bootstrap
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:node-bootstrapper
subjects:
  - apiGroup: rbac.authorization.k8s.io
    kind: Group
    name: system:bootstrappers
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: kube-aws:node-autoapprove-bootstrap
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:certificates.k8s.io:certificatesigningrequests:nodeclient
subjects:
  - apiGroup: rbac.authorization.k8s.io
    kind: Group
    name: system:bootstrappers
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: kube-aws:node-autoapprove-certificate-rotation
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: system:certificates.k8s.io:certificatesigningrequests:selfnodeclient
subjects:
  - apiGroup: rbac.authorization.k8s.io
    kind: Group
    name: system:nodes
`
