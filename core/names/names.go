// Package names is the contract between plugins: the names one plugin gives
// a stack, parameter, output or tag and another plugin (or the deploy
// engine) relies on. They are declared here once, so that a plugin refers
// to another plugin's stack by a constant rather than by a string it copied,
// and no plugin imports another to learn a name.
//
// It imports nothing, so every package, core/construct included, can use it.
package names

import (
	"strings"
	"unicode"
)

// CredentialsDir is the folder beside cluster.yaml where kube-aws keeps the
// secrets plugins generate (plugins/host.Credentials); kube-aws init
// git-ignores it. What a plugin keeps there is its own: another plugin or
// command asks it through the protocol instead of opening its files.
const CredentialsDir = "credentials"

// GeneratedSecretFile is where kube-aws keeps a plugin's generated secret
// key, relative to cluster.yaml's folder (credentials/<plugin>/<key>): for
// the plugin to tell the operator where their copy is.
func GeneratedSecretFile(plugin, key string) string {
	return CredentialsDir + "/" + plugin + "/" + key
}

// Stacks the built-in plugins make. A node pool's stack is NodePoolStack.
const (
	// StackNetwork holds the VPC, subnets and the security groups of every
	// role (cloudformation plugin).
	StackNetwork = "network"
	// StackEtcd holds the etcd members (cloudformation plugin).
	StackEtcd = "etcd"
	// StackControlPlane holds the controllers and the API load balancer
	// (cloudformation plugin).
	StackControlPlane = "control-plane"
	// StackIAM holds a role, policy and instance profile per machine role;
	// the iam plugin renders it late, from the merged IAM statements.
	StackIAM = "iam"
)

// NodePoolPrefix starts the names of a node pool's stack and machine role:
// nodepool-<pool>.
const NodePoolPrefix = "nodepool-"

// NodePoolStack is the stack of one node pool: nodepool-<pool>.
func NodePoolStack(pool string) string { return NodePoolPrefix + pool }

// NodePoolRole is the role of one node pool's machines, nodepool-<pool>:
// the name of their userdata, their S3 role folder (roles/<role>/), their
// KMS encryption context and their settings (core/nodeplan.Settings). It
// equals the pool's stack name (UserDataName).
func NodePoolRole(pool string) string { return NodePoolPrefix + pool }

// NodePoolOf is the pool of a node pool's role or stack name, and whether
// name is one (nodepool-<pool> with a pool name).
func NodePoolOf(name string) (pool string, ok bool) {
	pool, ok = strings.CutPrefix(name, NodePoolPrefix)
	return pool, ok && pool != ""
}

// StackName is a rendered stack's CloudFormation name: <cluster>-<stack>.
func StackName(cluster, stack string) string { return cluster + "-" + stack }

// Roles of machines, as file names and userdata names know them.
const (
	RoleController = "controller"
	RoleEtcd       = "etcd"
	RoleWorker     = "worker"
)

// UserDataName is the name of the userdata the machines of a stack boot
// (userdata/<name>.yaml, the S3 role roles/<name>/): controller for the
// control plane, etcd, nodepool-<pool> for a pool's stack; "" for a stack
// without machines of its own.
func UserDataName(stack string) string {
	switch {
	case stack == StackControlPlane:
		return RoleController
	case stack == StackEtcd:
		return RoleEtcd
	case strings.HasPrefix(stack, NodePoolPrefix):
		return stack
	}
	return ""
}

// UserDataFile is the rendered userdata file of a stack's machines
// (userdata/<UserDataName>.yaml), or "".
func UserDataFile(stack string) string {
	if n := UserDataName(stack); n != "" {
		return "userdata/" + n + ".yaml"
	}
	return ""
}

// Parameters the deploy engine fills itself when a template declares them
// (they have no parameter source).
const (
	// ParamAssetsBucket is the bucket of cluster.yaml's s3URI.
	ParamAssetsBucket = "AssetsBucket"
	// ParamUserDataKey is the S3 key of the stack's userdata file
	// (UserDataFile) as deploy uploaded it.
	ParamUserDataKey = "UserDataKey"
	// ParamChartsIndexKey is the S3 key of ChartsIndexFile (control plane
	// only), passed to the controllers as the fact FactAddonsKey. It
	// defaults to "" so that a render without the helm plugin still
	// deploys: deploy leaves the default when the file is missing.
	ParamChartsIndexKey = "ChartsIndexKey"
	// ParamAssetsPrefix is the key prefix of cluster.yaml's s3URI (may be
	// empty): every key the machines read is under it.
	ParamAssetsPrefix = "AssetsPrefix"
	// ParamNodeAgentKeyAMD64 and ParamNodeAgentKeyARM64 are the full S3
	// keys of kube-aws-node for each architecture,
	// <prefix>/assets/<sha256>, as deploy uploaded them.
	ParamNodeAgentKeyAMD64 = "NodeAgentKeyAmd64"
	ParamNodeAgentKeyARM64 = "NodeAgentKeyArm64"
	// ParamInstanceProfile is every machine stack's instance profile,
	// wired to the iam stack's InstanceProfileOutput.
	ParamInstanceProfile = "InstanceProfile"
)

// FactAPILoadBalancerDNS is the fact (nodeplan) the control-plane stack's
// bootstrap passes to the controllers: the API load balancer's DNS name,
// which the API server certificate names.
const FactAPILoadBalancerDNS = "apiLoadBalancerDNS"

// FactAddonsKey is the fact (nodeplan) the control-plane stack's bootstrap
// passes to the controllers from ParamChartsIndexKey: the S3 key of the
// helm plugin's release list, which their add-ons plan installs.
const FactAddonsKey = "addonsKey"

// AWSEnvConfigMap (in AWSEnvNamespace) is the ConfigMap the controllers'
// add-ons step writes before any release: AWS_REGION and the machine's
// standard AWS SDK endpoint settings (AWS_ENDPOINT_URL*), for add-ons that
// call AWS from a pod (envFrom, optional).
const (
	AWSEnvConfigMap = "kube-aws-aws-env"
	AWSEnvNamespace = "kube-system"
)

// ChartsIndexFile is the helm plugin's list of releases in the render output
// (a nodeplan.ReleaseList).
const ChartsIndexFile = "charts/releases.json"

// MetadataKey is the top-level template Metadata key under which a rendered
// template tells deploy which rendered file's S3 key fills which parameter:
// {"kube-aws": {"parameterFiles": {"UserDataKey": "userdata/controller.yaml"}}}.
const (
	MetadataKey            = "kube-aws"
	MetadataParameterFiles = "parameterFiles"
)

// Outputs of the network stack.
const (
	OutputVpcID                   = "VpcId"
	OutputPublicSubnetIDs         = "PublicSubnetIds"
	OutputPrivateSubnetIDs        = "PrivateSubnetIds"
	OutputControllerSecurityGroup = "ControllerSecurityGroupId"
	OutputEtcdSecurityGroup       = "EtcdSecurityGroupId"
	OutputWorkerSecurityGroup     = "WorkerSecurityGroupId"
)

// Outputs of the machine stacks (etcd, control-plane, nodepool-<pool>).
const (
	OutputAutoScalingGroupName = "AutoScalingGroupName"
	// OutputAPIEndpoint (control-plane) is the URL of the Kubernetes API;
	// deploy lifts it to the cluster outputs.
	OutputAPIEndpoint = "APIEndpoint"
	// OutputLoadBalancerDNS (control-plane) is the API load balancer's name.
	OutputLoadBalancerDNS = "LoadBalancerDNS"
	// OutputKubernetesVersion (control-plane) is the Kubernetes version the
	// stack's controllers run, v1.34.4 (the kubernetes plugin's): what the
	// deploy plugin reads with DescribeStacks to check a version change
	// against the running cluster before it changes anything.
	OutputKubernetesVersion = "KubernetesVersion"
)

// Cluster outputs: the deploy result's outputs (kube-aws up prints them,
// --outputs-file writes them), which deploy lifts from the stacks' outputs
// by ClusterOutput.
const (
	// ClusterOutputAPIEndpoint is the URL of the Kubernetes API, the
	// control-plane stack's OutputAPIEndpoint under its own name; kube-aws
	// kubeconfig reaches the API there by default.
	ClusterOutputAPIEndpoint = OutputAPIEndpoint
	// ClusterOutputAPILoadBalancerDNS is the API load balancer's DNS name
	// (OutputLoadBalancerDNS).
	ClusterOutputAPILoadBalancerDNS = "APILoadBalancerDNS"
	// ClusterOutputVPCID is the VPC's id (OutputVpcID).
	ClusterOutputVPCID = "VPCId"
)

// ClusterOutput is the cluster output that deploy lifts a stack output to,
// or "" for a stack output that stays the stack's. This is the one list of
// the stack output names deploy accepts for each cluster output: the
// cloudformation plugin's, and for the VPC's id also the cluster output's
// own spelling.
func ClusterOutput(stackOutput string) string {
	switch stackOutput {
	case OutputAPIEndpoint:
		return ClusterOutputAPIEndpoint
	case OutputLoadBalancerDNS:
		return ClusterOutputAPILoadBalancerDNS
	case OutputVpcID, ClusterOutputVPCID:
		return ClusterOutputVPCID
	}
	return ""
}

// Logical IDs in the network stack other plugins patch or refer to.
const (
	ControllerSecurityGroup = "ControllerSecurityGroup"
	EtcdSecurityGroup       = "EtcdSecurityGroup"
	WorkerSecurityGroup     = "WorkerSecurityGroup"
	// ControllerIngressAPI admits clients to the API port.
	ControllerIngressAPI = "ControllerIngressAPI"
)

// Logical IDs in every machine stack, and the control plane's load balancer.
const (
	LaunchTemplate   = "LaunchTemplate"
	AutoScalingGroup = "AutoScalingGroup"
	APILoadBalancer  = "LoadBalancer"
)

// SubnetOutput is the network stack output holding the ID of one subnet:
// Subnet<LogicalName>Id (public-us-east-1a gives SubnetPublicUsEast1aId).
func SubnetOutput(subnet string) string { return "Subnet" + LogicalName(subnet) + "Id" }

// RolePrefix names a machine role in logical IDs and outputs: Controller,
// Etcd, or NodePool<LogicalName(pool)> for a worker role's pool.
func RolePrefix(role, pool string) string {
	switch role {
	case RoleController:
		return "Controller"
	case RoleEtcd:
		return "Etcd"
	default:
		return "NodePool" + LogicalName(pool)
	}
}

// InstanceProfileOutput is the iam stack output with the name of a role's
// instance profile (a node pool's when role is worker).
func InstanceProfileOutput(role, pool string) string {
	return RolePrefix(role, pool) + "InstanceProfile"
}

// RoleArnOutput is the iam stack output with the ARN of a role (controller
// and etcd; a pool's role is reached from its instance profile).
func RoleArnOutput(role, pool string) string { return RolePrefix(role, pool) + "RoleArn" }

// RoleNameOutput is the iam stack output with the name of a role
// (controller and etcd).
func RoleNameOutput(role, pool string) string { return RolePrefix(role, pool) + "RoleName" }

// Tags.
const (
	// TagCluster tags every stack with the cluster it belongs to; deploy
	// finds a cluster's stacks (and those no longer rendered) by it.
	TagCluster = "kube-aws:cluster"
	// TagStack tags every stack with its rendered name.
	TagStack = "kube-aws:stack"
	// TagRole tags a resource with what it serves (the etcd members'
	// data volumes: etcd-data).
	TagRole = "kube-aws:role"
	// ReservedTagPrefix is kube-aws's own tag namespace.
	ReservedTagPrefix = "kube-aws:"
)

// StackTags are the tags every stack of a cluster carries.
func StackTags(cluster, stack string) map[string]string {
	return map[string]string{TagCluster: cluster, TagStack: stack}
}

// DrainLifecycleHook is the termination lifecycle hook of every group of
// Kubernetes nodes (controllers, node pools): Auto Scaling holds a leaving
// instance until the controllers' drainer has drained its node.
const DrainLifecycleHook = "kube-aws-drain"

// Node labels and taints that several plugins agree on.
const (
	// LabelRole marks a node with its machine role (RoleController on the
	// controllers): a label the kubelet may set itself, which
	// node-role.kubernetes.io/* is not (reserved). The kubernetes plugin
	// puts it on the controllers, whose add-ons (the cloud controller
	// manager) select it; a plugin that runs something there selects it
	// too.
	LabelRole = "node.kube-aws.io/role"
	// TaintControlPlane (NoSchedule) keeps workloads off the controllers,
	// as on kubeadm's control-plane nodes; what belongs there tolerates it.
	TaintControlPlane = "node-role.kubernetes.io/control-plane"
)

// AnnotationReleaseDigest is the pod template annotation of a DaemonSet
// bound to the nodes that run it (a node keeps its pod until it is
// replaced): the sha256 of the release the template comes from, which the
// nodes' userdata names too, so that a new node can tell a pod made from
// the release before its own from one of its own.
const AnnotationReleaseDigest = "kube-aws.io/release-digest"

// KubernetesClusterTag is the tag Kubernetes' AWS cloud provider finds the
// cluster's resources by (value "owned").
func KubernetesClusterTag(cluster string) string { return "kubernetes.io/cluster/" + cluster }

// LogicalName is how a name (a node pool's, a subnet's, an availability
// zone's) appears in CloudFormation logical IDs and output names, which allow
// only letters and digits: every other character is dropped and starts a new
// capitalised word, so spot-pool -> SpotPool and eu-west-1a -> EuWest1a.
// core/config's validation refuses two pools whose names differ only in '-'
// (spot-pool, spotpool), so the names it produces for pools are
// collision-free.
func LogicalName(name string) string {
	var b strings.Builder
	upper := true
	for _, r := range name {
		if !(r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r))) {
			upper = true
			continue
		}
		if upper {
			r = unicode.ToUpper(r)
			upper = false
		}
		b.WriteRune(r)
	}
	return b.String()
}
