package stacks

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/awslabs/goformation/v4/cloudformation/autoscaling"
	"github.com/awslabs/goformation/v4/cloudformation/ec2"
	"github.com/awslabs/goformation/v4/cloudformation/policies"

	"github.com/kube-aws/kube-aws/builtin/internal/cfn"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/names"
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

// graviton matches instance families with a "g" after the generation
// (m6g, c7gn, t4g, x2gd): Arm machines need the arm64 image.
var graviton = regexp.MustCompile(`^[a-z]+[0-9]+[a-z]*g[a-z]*$`)

// bootstrap is the whole EC2 userdata of every machine. The real userdata is
// rendered by the userdata plugin, can be larger than EC2's 16 KB limit, and
// changes without touching the templates; so the launch template only
// fetches it from S3 (parameters filled by deploy) and hands it to
// cloud-init. Before that it installs decrypt-secrets, which the userdata's
// runcmd calls with /etc/kube-aws/secrets.list to replace each
// ((secret:...)) marker in the listed files by its plain text: deploy
// uploads each value's KMS ciphertext to <SecretsPrefix>/<sha256 of the
// marker>. Fn::Sub fills ${AWS::Region}, ${AssetsBucket}, ${SecretsPrefix}
// and ${UserDataKey} (and, on controllers, ${ChartsIndexKey}); nothing else
// in here may be written ${...}. The second %s is controllerAssets on
// controllers and empty elsewhere.
const bootstrap = `#!/bin/bash
# kube-aws bootstrap (%s): fetch this machine's cloud-init userdata from S3 and run it.
set -euo pipefail
mkdir -p /var/lib/kube-aws /opt/kube-aws/bin
%scat > /opt/kube-aws/bin/decrypt-secrets <<'KUBE_AWS_EOF'
#!/usr/bin/env python3
"""Replace every ((secret:...)) marker in the files listed in argv[1] by its plain text."""
import base64, hashlib, re, subprocess, sys
BUCKET, PREFIX, REGION = "${AssetsBucket}", "${SecretsPrefix}", "${AWS::Region}"
MARKER = re.compile(r"\(\(secret:[^()\s]+\)\)")
cache = {}
def plain(marker):
    if marker not in cache:
        key = PREFIX + "/" + hashlib.sha256(marker.encode()).hexdigest()
        blob = subprocess.run(["aws", "s3", "cp", "--region", REGION, "s3://" + BUCKET + "/" + key, "-"],
                              check=True, capture_output=True).stdout
        out = subprocess.run(["aws", "kms", "decrypt", "--region", REGION, "--ciphertext-blob", "fileb:///dev/stdin",
                              "--query", "Plaintext", "--output", "text"], input=blob, check=True, capture_output=True).stdout
        cache[marker] = base64.b64decode(out).decode()
    return cache[marker]
for path in open(sys.argv[1]).read().split():
    with open(path) as f:
        text = f.read()
    new = MARKER.sub(lambda m: plain(m.group(0)), text)
    if new != text:
        with open(path, "w") as f:
            f.write(new)
KUBE_AWS_EOF
chmod 0755 /opt/kube-aws/bin/decrypt-secrets
for attempt in 1 2 3 4 5 6; do
  if aws s3 cp --region "${AWS::Region}" "s3://${AssetsBucket}/${UserDataKey}" /var/lib/kube-aws/userdata.yaml; then
    break
  fi
  sleep $((attempt * 5))
done
test -s /var/lib/kube-aws/userdata.yaml
cloud-init --file /var/lib/kube-aws/userdata.yaml init
cloud-init --file /var/lib/kube-aws/userdata.yaml modules --mode config
cloud-init --file /var/lib/kube-aws/userdata.yaml modules --mode final
`

// controllerAssets tells the helm plugin's install unit on the controllers
// where the charts are: the S3 key of charts/releases.json (empty without
// the helm plugin) and the bucket. Deploy uploads every rendered file to
// <prefix>/assets/<sha256>, so the charts it lists are in the same folder
// under their sha256, and need no parameter each. Written before cloud-init
// runs, so the unit finds it whenever it starts.
const controllerAssets = `mkdir -p /etc/kube-aws
cat > /etc/kube-aws/assets.env <<'KUBE_AWS_ASSETS_EOF'
KUBE_AWS_REGION='${AWS::Region}'
KUBE_AWS_ASSETS_BUCKET='${AssetsBucket}'
KUBE_AWS_CHARTS_INDEX_KEY='${ChartsIndexKey}'
KUBE_AWS_ASSETS_EOF
`

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
}

// machineStack adds to s the parameters, launch template and auto scaling
// group of a set of machines, and returns the protected paths of the launch
// template: its bootstrap userdata and instance profile.
func machineStack(s *stack, c *config.Cluster, m machines) []construct.Protected {
	s.param(names.ParamAssetsBucket, "String", "S3 bucket holding the cluster's assets (filled by deploy)", nil)
	s.param(names.ParamUserDataKey, "String", "S3 key of this stack's userdata (filled by deploy)", nil)
	s.param(names.ParamSecretsPrefix, "String", "S3 key prefix of the encrypted sensitive values (filled by deploy)", nil)
	assets := ""
	if m.role == construct.Controller {
		s.param(names.ParamChartsIndexKey, "String", "S3 key of charts/releases.json, the Helm releases the controllers install (filled by deploy; empty without the helm plugin)", "")
		assets = controllerAssets
	}
	if c.AMI != "" {
		s.param(paramImageID, "AWS::EC2::Image::Id", "Image every machine boots", c.AMI)
	} else {
		img := defaultImageX86
		if graviton.MatchString(strings.SplitN(m.instanceType, ".", 2)[0]) {
			img = defaultImageArm
		}
		s.param(paramImageID, "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>", "SSM parameter naming the image every machine boots", img)
	}
	s.wired(names.ParamInstanceProfile, "String", names.StackIAM, names.InstanceProfileOutput(string(m.role), m.pool))
	s.wired(paramSecurityGroup, "AWS::EC2::SecurityGroup::Id", names.StackNetwork, m.sgOutput)
	zone := subnetParams(s, m.subnets)

	name := c.ClusterName + "-" + m.name
	data := &ec2.LaunchTemplate_LaunchTemplateData{
		ImageId:            cfn.Ref(paramImageID),
		InstanceType:       m.instanceType,
		KeyName:            c.KeyName,
		IamInstanceProfile: &ec2.LaunchTemplate_IamInstanceProfile{Name: cfn.Ref(names.ParamInstanceProfile)},
		SecurityGroupIds:   []string{cfn.Ref(paramSecurityGroup)},
		UserData:           cfn.Base64(cfn.Sub(fmt.Sprintf(bootstrap, m.name, assets))),
		// IMDSv2 only; a hop limit of 2 lets containers reach it.
		MetadataOptions: &ec2.LaunchTemplate_MetadataOptions{HttpTokens: "required", HttpPutResponseHopLimit: 2, HttpEndpoint: "enabled"},
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
		TargetGroupARNs:               m.targetGroups,
		LoadBalancerNames:             m.loadBalancers,
		Tags:                          asgTags,
		AWSCloudFormationUpdatePolicy: rollingUpdate(m),
	})
	s.output(names.OutputAutoScalingGroupName, cfn.Ref(names.AutoScalingGroup), "Auto scaling group of the "+m.name+" machines")

	reason := "the bootstrap userdata and instance profile are kube-aws's: change the userdata through units and files, the role through IAM statements"
	return []construct.Protected{
		{Stack: s.c.Name, LogicalID: names.LaunchTemplate, Pointer: "/Properties/LaunchTemplateData/UserData", Reason: reason},
		{Stack: s.c.Name, LogicalID: names.LaunchTemplate, Pointer: "/Properties/LaunchTemplateData/IamInstanceProfile", Reason: reason},
	}
}

// rollingUpdate replaces machines one at a time when their launch template
// changes (without it a new template only reaches machines started later),
// keeping the desired count in service when the group may grow past it.
// Scaling processes pause meanwhile, so the autoscaler does not fight it.
func rollingUpdate(m machines) *policies.UpdatePolicy {
	inService := m.desired
	if inService >= m.max {
		inService = m.max - 1
	}
	if inService < 0 {
		inService = 0
	}
	return &policies.UpdatePolicy{AutoScalingRollingUpdate: &policies.AutoScalingRollingUpdate{
		MaxBatchSize:          1,
		MinInstancesInService: float64(inService),
		PauseTime:             "PT1M",
		SuspendProcesses:      []string{"AlarmNotification", "AZRebalance", "HealthCheck", "ReplaceUnhealthy", "ScheduledActions"},
	}}
}

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
