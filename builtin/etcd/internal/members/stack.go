package members

import (
	"encoding/json"
	"fmt"

	"github.com/awslabs/goformation/v4/cloudformation"
	"github.com/awslabs/goformation/v4/cloudformation/autoscaling"
	"github.com/awslabs/goformation/v4/cloudformation/ec2"
	"github.com/awslabs/goformation/v4/cloudformation/iam"
	"github.com/awslabs/goformation/v4/cloudformation/policies"
	"github.com/awslabs/goformation/v4/cloudformation/route53"
	"github.com/awslabs/goformation/v4/cloudformation/tags"

	"github.com/kube-aws/kube-aws/builtin/internal/cfn"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/names"
)

// Stack is the etcd plugin's contribution to the etcd stack, whose launch
// template (the bootstrap every member boots with) the cloudformation
// plugin makes: per member a data volume tagged with the member's name and
// an auto scaling group of one machine in the volume's zone, the private
// zone of the members' names in the cluster's VPC, and the etcd role's
// policy on that zone's records (RecordsPolicy).
//
// One launch template serves every member: a machine learns which member
// it is from the volume it attaches, so the groups differ only in their
// subnet. The groups are updated one after another (each depends on the
// one before), so a change to the launch template replaces one member at a
// time and the others keep the quorum.
func Stack(c *config.Cluster, ms []Member, volumeSize int) construct.Stack {
	s := construct.Stack{
		Name:             names.StackEtcd,
		Resources:        map[string]json.RawMessage{},
		Parameters:       map[string]json.RawMessage{},
		ParameterSources: map[string]names.Source{},
	}
	wiredFrom := func(stack, id, typ, output string) {
		s.Parameters[id] = cfn.MustRaw(cloudformation.Parameter{Type: typ, Description: "From " + stack + "." + output})
		s.ParameterSources[id] = names.From(stack, output)
	}
	wired := func(id, typ, output string) { wiredFrom(names.StackNetwork, id, typ, output) }
	wired(paramVpcID, "AWS::EC2::VPC::Id", names.OutputVpcID)
	wiredFrom(names.StackIAM, paramRoleName, "String", paramRoleName)
	s.Resources[PrivateZone] = cfn.MustRaw(&route53.HostedZone{
		Name: names.EtcdZone(c.ClusterName),
		HostedZoneConfig: &route53.HostedZone_HostedZoneConfig{
			Comment: fmt.Sprintf("kube-aws %s: the etcd members' names", c.ClusterName)},
		VPCs: []route53.HostedZone_VPC{{VPCId: cfn.Ref(paramVpcID), VPCRegion: cfn.Ref("AWS::Region")}},
	})
	s.Resources[RecordsPolicy] = cfn.MustRaw(recordsPolicy())
	previous := ""
	for i, m := range ms {
		subnet := names.SubnetOutput(m.Subnet.Name)
		if _, done := s.Parameters[subnet]; !done {
			wired(subnet, "AWS::EC2::Subnet::Id", subnet)
		}
		name := c.ClusterName + "-" + m.Name
		s.Resources[DataVolume(i)] = cfn.MustRaw(&ec2.Volume{
			AvailabilityZone: m.Subnet.AvailabilityZone,
			Size:             volumeSize,
			VolumeType:       "gp3",
			Encrypted:        true,
			Tags: []tags.Tag{
				{Key: "Name", Value: name},
				{Key: names.TagCluster, Value: c.ClusterName},
				{Key: names.TagRole, Value: DataVolumeTag},
				{Key: names.TagEtcdMember, Value: m.Name},
				{Key: names.TagEtcdZoneID, Value: cfn.Ref(PrivateZone)},
			},
			// A member's data outlives a mistaken replacement or the
			// stack's deletion as an EBS snapshot.
			AWSCloudFormationDeletionPolicy:      policies.DeletionPolicy("Snapshot"),
			AWSCloudFormationUpdateReplacePolicy: policies.UpdateReplacePolicy("Snapshot"),
		})
		// A member's machine attaches its volume and upserts its record
		// as it boots.
		deps := []string{DataVolume(i), PrivateZone, RecordsPolicy}
		if previous != "" {
			deps = append(deps, previous)
		}
		s.Resources[MemberGroup(i)] = cfn.MustRaw(&autoscaling.AutoScalingGroup{
			MinSize:           "1",
			MaxSize:           "1",
			DesiredCapacity:   "1",
			VPCZoneIdentifier: []string{cfn.Ref(subnet)},
			LaunchTemplate: &autoscaling.AutoScalingGroup_LaunchTemplateSpecification{
				LaunchTemplateId: cfn.Ref(names.LaunchTemplate),
				Version:          cfn.GetAtt(names.LaunchTemplate, "LatestVersionNumber"),
			},
			Tags: []autoscaling.AutoScalingGroup_TagProperty{
				{Key: "Name", Value: name, PropagateAtLaunch: true},
				{Key: names.KubernetesClusterTag(c.ClusterName), Value: "owned", PropagateAtLaunch: true},
				{Key: names.TagEtcdMember, Value: m.Name, PropagateAtLaunch: true},
			},
			// No UpdatePolicy: kube-aws's roll replaces a member whose
			// launch template changed, the old machine first (it must let
			// go of the volume the new one attaches), one member at a time,
			// each back and healthy before the next (docs/etcd.md).
			AWSCloudFormationDependsOn: deps,
		})
		previous = MemberGroup(i)
	}
	s.Outputs = map[string]json.RawMessage{
		OutputPrivateZone: cfn.MustRaw(cloudformation.Output{Value: cfn.Ref(PrivateZone), Description: "Private hosted zone of the etcd members' names"}),
	}
	return s
}

// recordsPolicy is what the dns step of a member calls, on the members'
// zone and no other: read the member's record, upsert it, and wait for
// the change to be in sync (a change's id is Route 53's, known only once
// made). The iam stack holds the etcd role's other statements (IAM
// constructs); this one names the zone, which only this stack has, so it
// is attached to the role from here.
func recordsPolicy() *iam.Policy {
	return &iam.Policy{
		PolicyName: "kube-aws-etcd-records",
		Roles:      []string{cfn.Ref(paramRoleName)},
		PolicyDocument: map[string]any{
			"Version": "2012-10-17",
			"Statement": []any{
				map[string]any{
					"Sid":      "KubeAwsEtcdRecord",
					"Effect":   "Allow",
					"Action":   []any{"route53:ChangeResourceRecordSets", "route53:ListResourceRecordSets"},
					"Resource": []any{map[string]any{"Fn::Sub": "arn:${AWS::Partition}:route53:::hostedzone/${" + PrivateZone + "}"}},
				},
				map[string]any{
					"Sid":      "KubeAwsEtcdRecordSync",
					"Effect":   "Allow",
					"Action":   []any{"route53:GetChange"},
					"Resource": []any{map[string]any{"Fn::Sub": "arn:${AWS::Partition}:route53:::change/*"}},
				},
			},
		},
	}
}

// OutputPrivateZone is the etcd stack's output of the members' zone.
const (
	OutputPrivateZone = "EtcdPrivateZoneId"
)
