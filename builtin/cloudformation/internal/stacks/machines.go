package stacks

import (
	"sort"
	"strconv"

	"github.com/awslabs/goformation/v4/cloudformation/autoscaling"
	"github.com/awslabs/goformation/v4/cloudformation/ec2"

	"github.com/kube-aws/kube-aws/builtin/internal/bootstrap"
	"github.com/kube-aws/kube-aws/builtin/internal/cfn"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
)

// Parameters of machine stacks besides names.ParamAssetsBucket,
// names.ParamUserDataKey and names.ParamInstanceProfile.
const (
	paramImageID       = "ImageId"
	paramSecurityGroup = "SecurityGroupId"
	paramVpcID         = "VpcId"
)

// defaultImage is the SSM parameter of the image machines boot when
// cluster.yaml names no AMI: Amazon Linux 2023 ships cloud-init and the AWS
// CLI, which the bootstrap needs, and AWS keeps the parameter current.
const defaultImageX86 = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
const defaultImageArm = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-arm64"

// machines describes the machines of one stack.
type machines struct {
	role         construct.Role
	pool         string // node pools only
	name         string // for Name tags: controller, etcd, nodepool-<name>
	instanceType string
	rootVolume   int
	min, max     int
	desired      int
	subnets      []config.Subnet
	spot         *config.Spot
	sgOutput     string
	asgTags      []autoscaling.AutoScalingGroup_TagProperty
	targetGroups []string
	// loadBalancers are classic load balancer names the group registers with.
	loadBalancers []string
	// facts are passed to the machines by their bootstrap.
	facts []bootstrap.Fact
	// noGroup leaves the auto scaling group to another plugin: the etcd
	// plugin makes one group of one machine per member, in the zone of the
	// member's data volume, from this stack's launch template.
	noGroup bool
}

// machineStack adds to s the parameters, launch template and auto scaling
// group of a set of machines, and returns the protected paths of the launch
// template: its bootstrap userdata and instance profile.
//
// The launch template's user data is builtin/internal/bootstrap's: it
// fetches kube-aws-node and runs `kube-aws-node boot`, which fetches the
// role's userdata (rendered by the userdata plugin, larger than EC2's 16 KB
// limit, changing without touching the templates) from the key deploy
// fills in.
func machineStack(s *stack, c *config.Cluster, m machines) ([]construct.Protected, error) {
	for _, p := range bootstrap.Parameters {
		s.param(p.Name, "String", p.Description, nil)
	}
	role := string(m.role)
	if m.pool != "" {
		role = names.NodePoolRole(m.pool)
	}
	userData, err := bootstrap.UserData(c.ClusterName, role, m.facts)
	if err != nil {
		return nil, err
	}
	if c.AMI != "" {
		s.param(paramImageID, "AWS::EC2::Image::Id", "Image every machine boots", c.AMI)
	} else {
		img := defaultImageX86
		// Arm machines (a1 and the Graviton families) need the arm64 image.
		if config.Architecture(m.instanceType) == "arm64" {
			img = defaultImageArm
		}
		s.param(paramImageID, "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>", "SSM parameter naming the image every machine boots", img)
	}
	s.wired(names.ParamInstanceProfile, "String", names.StackIAM, names.InstanceProfileOutput(string(m.role), m.pool))
	s.wired(paramSecurityGroup, "AWS::EC2::SecurityGroup::Id", names.StackNetwork, m.sgOutput)

	name := c.ClusterName + "-" + m.name
	data := &ec2.LaunchTemplate_LaunchTemplateData{
		ImageId:            cfn.Ref(paramImageID),
		InstanceType:       m.instanceType,
		KeyName:            c.KeyName,
		IamInstanceProfile: &ec2.LaunchTemplate_IamInstanceProfile{Name: cfn.Ref(names.ParamInstanceProfile)},
		SecurityGroupIds:   []string{cfn.Ref(paramSecurityGroup)},
		UserData:           userData,
		// IMDSv2 only, and its token reaches the node alone: a pod behind
		// the node's bridge is a routed hop away, and the token's reply
		// dies there, so pods cannot take the role's credentials. Render
		// raises the limit where a plugin asks (podMetadata).
		MetadataOptions: &ec2.LaunchTemplate_MetadataOptions{HttpTokens: "required", HttpPutResponseHopLimit: construct.NodeMetadataHopLimit, HttpEndpoint: "enabled"},
		TagSpecifications: []ec2.LaunchTemplate_TagSpecification{
			{ResourceType: "instance", Tags: tagList(c.ClusterName, name)},
			{ResourceType: "volume", Tags: tagList(c.ClusterName, name)},
		},
	}
	if m.rootVolume > 0 {
		data.BlockDeviceMappings = []ec2.LaunchTemplate_BlockDeviceMapping{{
			DeviceName: "/dev/xvda",
			Ebs:        &ec2.LaunchTemplate_Ebs{VolumeSize: m.rootVolume, VolumeType: "gp3", Encrypted: true, DeleteOnTermination: true},
		}}
	}
	if m.spot != nil {
		data.InstanceMarketOptions = &ec2.LaunchTemplate_InstanceMarketOptions{
			MarketType:  "spot",
			SpotOptions: &ec2.LaunchTemplate_SpotOptions{MaxPrice: m.spot.MaxPrice, SpotInstanceType: "one-time"},
		}
	}
	s.resource(names.LaunchTemplate, &ec2.LaunchTemplate{LaunchTemplateData: data})

	if !m.noGroup {
		machineGroup(s, c, m, name)
	}

	reason := "the bootstrap userdata and instance profile are kube-aws's: change the userdata through units and files, the role through IAM statements"
	return []construct.Protected{
		{Stack: s.c.Name, LogicalID: names.LaunchTemplate, Pointer: "/Properties/LaunchTemplateData/UserData", Reason: reason},
		{Stack: s.c.Name, LogicalID: names.LaunchTemplate, Pointer: "/Properties/LaunchTemplateData/IamInstanceProfile", Reason: reason},
		{Stack: s.c.Name, LogicalID: names.LaunchTemplate, Pointer: metadataOptionsPointer,
			Reason: "who may reach the metadata service is kube-aws's: ask that pods may through a podMetadata construct"},
	}, nil
}

// machineGroup adds the auto scaling group of the machines, in their
// subnets, and its name as an output.
func machineGroup(s *stack, c *config.Cluster, m machines, name string) {
	zone := subnetParams(s, m.subnets)
	asgTags := []autoscaling.AutoScalingGroup_TagProperty{
		{Key: "Name", Value: name, PropagateAtLaunch: true},
		{Key: "kubernetes.io/cluster/" + c.ClusterName, Value: "owned", PropagateAtLaunch: true},
	}
	asgTags = append(asgTags, m.asgTags...)
	s.resource(names.AutoScalingGroup, &autoscaling.AutoScalingGroup{
		MinSize:           strconv.Itoa(m.min),
		MaxSize:           strconv.Itoa(m.max),
		DesiredCapacity:   strconv.Itoa(m.desired),
		VPCZoneIdentifier: zone,
		LaunchTemplate: &autoscaling.AutoScalingGroup_LaunchTemplateSpecification{
			LaunchTemplateId: cfn.Ref(names.LaunchTemplate),
			Version:          cfn.GetAtt(names.LaunchTemplate, "LatestVersionNumber"),
		},
		TargetGroupARNs:   m.targetGroups,
		LoadBalancerNames: m.loadBalancers,
		Tags:              asgTags,
		// No UpdatePolicy: a new launch template version replaces no
		// machine here; kube-aws's roll replaces them afterwards, drained
		// and gated (docs/design.md, "Changing a running cluster").
		LifecycleHookSpecificationList: drainHook(c),
	})
	s.output(names.OutputAutoScalingGroupName, cfn.Ref(names.AutoScalingGroup), "Auto scaling group of the "+m.name+" machines")
}

// drainHook is the termination lifecycle hook of a group whose machines
// are Kubernetes nodes: whoever ends an instance (a scale-in, a spot
// interruption, a replaced unhealthy instance, kube-aws's roll), Auto
// Scaling holds it in Terminating:Wait until the controllers' drainer has
// drained its node and completed the action. The drainer heartbeats while
// it drains; the timeout is a margin above the drain's own, after which the
// instance goes anyway (CONTINUE), for a hook can only delay a termination.
// The hook's metadata is the drain it asks for (cluster.yaml's drain, as a
// nodeplan.DrainRequest): the drainer reads it there, so a change of the
// drain settings changes the hooks, and no machine's userdata.
func drainHook(c *config.Cluster) []autoscaling.AutoScalingGroup_LifecycleHookSpecification {
	req := nodeplan.DrainRequest{ID: names.DrainLifecycleHook, Timeout: c.Drain.TimeoutDuration(), Force: c.Drain.Force}
	return []autoscaling.AutoScalingGroup_LifecycleHookSpecification{{
		LifecycleHookName:    names.DrainLifecycleHook,
		LifecycleTransition:  "autoscaling:EC2_INSTANCE_TERMINATING",
		HeartbeatTimeout:     int(req.Timeout.Seconds()) + drainHookMargin,
		DefaultResult:        "CONTINUE",
		NotificationMetadata: req.String(),
	}}
}

// drainHookMargin is the seconds a termination hook waits beyond the drain
// timeout: the drainer's own reads and writes around the drain.
const drainHookMargin = 120

// subnetParams declares one parameter per subnet, wired to the network
// stack's output of that subnet, and returns Refs to them in order.
func subnetParams(s *stack, subnets []config.Subnet) []string {
	refs := make([]string, 0, len(subnets))
	for _, sn := range subnets {
		p := names.SubnetOutput(sn.Name)
		if _, done := s.c.Parameters[p]; !done {
			s.wired(p, "AWS::EC2::Subnet::Id", names.StackNetwork, p)
		}
		refs = append(refs, cfn.Ref(p))
	}
	return refs
}

// poolTags are the auto scaling group tags of a node pool: a cluster
// autoscaler builds nodes for an empty pool from the labels and taints. The
// discovery tags (k8s.io/cluster-autoscaler/enabled) are not set here: the
// cluster-autoscaler plugin adds them to the pools it manages, so a pool can
// opt out. They do not propagate to instances: the kubelet registers labels
// and taints itself.
func poolTags(c *config.Cluster, p config.NodePool) []autoscaling.AutoScalingGroup_TagProperty {
	var out []autoscaling.AutoScalingGroup_TagProperty
	keys := make([]string, 0, len(p.Labels))
	for k := range p.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, autoscaling.AutoScalingGroup_TagProperty{Key: "k8s.io/cluster-autoscaler/node-template/label/" + k, Value: p.Labels[k]})
	}
	for _, t := range p.Taints {
		out = append(out, autoscaling.AutoScalingGroup_TagProperty{Key: "k8s.io/cluster-autoscaler/node-template/taint/" + t.Key, Value: t.Value + ":" + t.Effect})
	}
	return out
}
