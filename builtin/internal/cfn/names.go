package cfn

import (
	"strings"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
)

// Stack names. Deploy and other plugins refer to stacks by these names, and
// ParameterSources refer to outputs as "<stack>.<output>".
const (
	StackIAM          = "iam"
	StackNetwork      = "network"
	StackEtcd         = "etcd"
	StackControlPlane = "control-plane"
	nodePoolPrefix    = "nodepool-"
)

// NodePoolStack is the stack of one node pool.
func NodePoolStack(pool string) string { return nodePoolPrefix + pool }

// Parameters that the deploy stage fills itself (they have no
// ParameterSources): where the machine's full userdata was uploaded.
const (
	// ParamAssetsBucket is the S3 bucket of cluster.yaml's s3URI.
	ParamAssetsBucket = "AssetsBucket"
	// ParamUserDataKey is the S3 key the deploy stage uploaded the stack's
	// userdata file (UserDataFile) to.
	ParamUserDataKey = "UserDataKey"
	// ParamSecretsPrefix is the S3 key prefix under which deploy uploads
	// the KMS ciphertext of each sensitive value (<prefix>/secrets).
	ParamSecretsPrefix = "SecretsPrefix"
	// ParamChartsIndexKey is the S3 key deploy uploaded ChartsIndexFile
	// to (control-plane only): the controllers' helm install unit fetches
	// it, and every chart it lists from the same folder by its sha256. It
	// defaults to "" so that a render without the helm plugin still
	// deploys: deploy leaves it at the default when the file is missing.
	ParamChartsIndexKey = "ChartsIndexKey"
	// ChartsIndexFile is the helm plugin's list of releases in the render
	// output.
	ChartsIndexFile = "charts/releases.json"
)

// ParamInstanceProfile is the instance profile parameter of every machine
// stack, wired to the iam stack's InstanceProfileOutput.
const ParamInstanceProfile = "InstanceProfile"

// MetadataKey is the top-level template Metadata key under which rendered
// templates tell deploy which rendered file's S3 key fills which parameter:
// {"kube-aws": {"parameterFiles": {"UserDataKey": "userdata/controller.yaml"}}}.
const MetadataKey = "kube-aws"

// Outputs of the network stack.
const (
	OutputVpcID                   = "VpcId"
	OutputPublicSubnetIDs         = "PublicSubnetIds"
	OutputPrivateSubnetIDs        = "PrivateSubnetIds"
	OutputControllerSecurityGroup = "ControllerSecurityGroupId"
	OutputEtcdSecurityGroup       = "EtcdSecurityGroupId"
	OutputWorkerSecurityGroup     = "WorkerSecurityGroupId"
)

// SubnetOutput is the network stack output holding the ID of one subnet.
func SubnetOutput(subnet string) string { return "Subnet" + config.LogicalName(subnet) + "Id" }

// RolePrefix names a machine role in logical IDs and outputs: Controller,
// Etcd, or NodePool<Camel> for one node pool.
func RolePrefix(role construct.Role, pool string) string {
	switch role {
	case construct.Controller:
		return "Controller"
	case construct.Etcd:
		return "Etcd"
	default:
		return "NodePool" + config.LogicalName(pool)
	}
}

// InstanceProfileOutput is the iam stack output with the name of the
// instance profile of a role (a node pool's when role is Worker).
func InstanceProfileOutput(role construct.Role, pool string) string {
	return RolePrefix(role, pool) + "InstanceProfile"
}

// RoleArnOutput is the iam stack output with the ARN of a role.
func RoleArnOutput(role construct.Role, pool string) string {
	return RolePrefix(role, pool) + "RoleArn"
}

// UserDataFile is the rendered userdata file of the machines of a stack, or
// "" for a stack without machines of its own: the userdata plugin writes
// userdata/<controller|etcd|nodepool-NAME>.yaml.
func UserDataFile(stack string) string {
	switch {
	case stack == StackControlPlane:
		return "userdata/controller.yaml"
	case stack == StackEtcd:
		return "userdata/etcd.yaml"
	case strings.HasPrefix(stack, nodePoolPrefix):
		return "userdata/" + stack + ".yaml"
	}
	return ""
}
