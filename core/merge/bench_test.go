package merge

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/names"
)

// benchContributions builds what 30 plugins contribute to a cluster with
// nodePools node pools: a base plugin (as the cloudformation, userdata and
// apiserver built-ins together) with the network, etcd and control-plane
// stacks and one stack per pool with a protected bootstrap userdata, and 29
// plugins that each add a stack, resources in the control plane, units,
// drop-ins, files, flags, labels, IAM, a Helm release, a manifest and patches
// to a handful of pools.
func benchContributions(nodePools, plugins int) []Contribution {
	j := func(v any) json.RawMessage {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		return b
	}
	base := &construct.Set{}
	network := construct.Stack{Name: "network", Description: "network", Resources: map[string]json.RawMessage{}, Outputs: map[string]json.RawMessage{}}
	network.Resources["VPC"] = j(map[string]any{"Type": "AWS::EC2::VPC", "Properties": map[string]any{"CidrBlock": "10.0.0.0/16", "EnableDnsSupport": true, "EnableDnsHostnames": true,
		"Tags": []any{map[string]any{"Key": "Name", "Value": "c-vpc"}}}})
	for i := 0; i < 6; i++ {
		id := fmt.Sprintf("Subnet%d", i)
		network.Resources[id] = j(map[string]any{"Type": "AWS::EC2::Subnet", "Properties": map[string]any{
			"VpcId": map[string]any{"Ref": "VPC"}, "CidrBlock": fmt.Sprintf("10.0.%d.0/24", i),
			"AvailabilityZone": fmt.Sprintf("eu-west-1%c", 'a'+i%3), "Tags": []any{map[string]any{"Key": "Name", "Value": id}}}})
		network.Outputs[id] = j(map[string]any{"Value": map[string]any{"Ref": id}, "Export": map[string]any{"Name": "c-" + id}})
	}
	base.Stacks = append(base.Stacks, network,
		construct.Stack{Name: "etcd", DependsOn: []string{"network", "iam"}, Resources: map[string]json.RawMessage{
			"Etcd0": j(map[string]any{"Type": "AWS::EC2::Instance", "Properties": map[string]any{"InstanceType": "t3.medium", "ImageId": "ami-1"}})}},
		construct.Stack{Name: "control-plane", DependsOn: []string{"network", "etcd", "iam"}, Resources: map[string]json.RawMessage{
			"LaunchTemplate": j(map[string]any{"Type": "AWS::EC2::LaunchTemplate", "Properties": map[string]any{"LaunchTemplateData": map[string]any{"UserData": "IyEvYmluL3NoCg==", "InstanceType": "t3.medium"}}}),
			"ASG":            j(map[string]any{"Type": "AWS::AutoScaling::AutoScalingGroup", "Properties": map[string]any{"MinSize": "1", "MaxSize": "3"}})}})
	for p := 0; p < nodePools; p++ {
		name := fmt.Sprintf("nodepool-pool%d", p)
		pool := construct.Target{Role: construct.Worker, NodePool: fmt.Sprintf("pool%d", p)}
		st := construct.Stack{
			Name: name, Description: "node pool " + name, DependsOn: []string{"network", "control-plane", "iam"},
			Resources: map[string]json.RawMessage{
				"LaunchTemplate": j(map[string]any{"Type": "AWS::EC2::LaunchTemplate", "Properties": map[string]any{
					"LaunchTemplateName": name,
					"LaunchTemplateData": map[string]any{
						"ImageId": map[string]any{"Ref": "ImageId"}, "InstanceType": "m5.large",
						"IamInstanceProfile": map[string]any{"Name": map[string]any{"Ref": "InstanceProfile"}},
						"SecurityGroupIds":   []any{map[string]any{"Ref": "SecurityGroup"}},
						"BlockDeviceMappings": []any{map[string]any{"DeviceName": "/dev/xvda",
							"Ebs": map[string]any{"VolumeSize": 50, "VolumeType": "gp3", "Encrypted": true}}},
						"MetadataOptions":   map[string]any{"HttpTokens": "required", "HttpPutResponseHopLimit": 2},
						"TagSpecifications": []any{map[string]any{"ResourceType": "instance", "Tags": []any{map[string]any{"Key": "Name", "Value": name}}}},
						"UserData":          map[string]any{"Fn::Base64": map[string]any{"Fn::Sub": "#!/bin/bash\nexec /opt/bin/fetch s3://${Bucket}/${Key}\n"}},
					}}}),
				"ASG": j(map[string]any{"Type": "AWS::AutoScaling::AutoScalingGroup", "Properties": map[string]any{
					"MinSize": "1", "MaxSize": "10", "DesiredCapacity": "3",
					"VPCZoneIdentifier": []any{map[string]any{"Ref": "Subnet0"}, map[string]any{"Ref": "Subnet1"}},
					"LaunchTemplate":    map[string]any{"LaunchTemplateId": map[string]any{"Ref": "LaunchTemplate"}, "Version": map[string]any{"Fn::GetAtt": []any{"LaunchTemplate", "LatestVersionNumber"}}},
					"Tags":              []any{map[string]any{"Key": "kubernetes.io/cluster/c", "Value": "owned", "PropagateAtLaunch": true}}}}),
				"SecurityGroup": j(map[string]any{"Type": "AWS::EC2::SecurityGroup", "Properties": map[string]any{"GroupDescription": name, "VpcId": map[string]any{"Ref": "VpcId"}}}),
				"IngressSelf":   j(map[string]any{"Type": "AWS::EC2::SecurityGroupIngress", "Properties": map[string]any{"GroupId": map[string]any{"Ref": "SecurityGroup"}, "IpProtocol": "-1", "SourceSecurityGroupId": map[string]any{"Ref": "SecurityGroup"}}}),
				"IngressCP":     j(map[string]any{"Type": "AWS::EC2::SecurityGroupIngress", "Properties": map[string]any{"GroupId": map[string]any{"Ref": "SecurityGroup"}, "IpProtocol": "tcp", "FromPort": 10250, "ToPort": 10250}}),
			},
			Outputs: map[string]json.RawMessage{"ASGName": j(map[string]any{"Value": map[string]any{"Ref": "ASG"}})},
			Parameters: map[string]json.RawMessage{
				"ImageId": j(map[string]any{"Type": "AWS::EC2::Image::Id"}), "InstanceProfile": j(map[string]any{"Type": "String"}),
				"VpcId": j(map[string]any{"Type": "String"}), "Subnet0": j(map[string]any{"Type": "String"}), "Subnet1": j(map[string]any{"Type": "String"}),
				"Bucket": j(map[string]any{"Type": "String"}), "Key": j(map[string]any{"Type": "String"})},
			Tags:             map[string]string{"kube-aws:node-pool": name},
			ParameterSources: map[string]names.Source{"InstanceProfile": names.From("iam", name+"Profile"), "VpcId": names.From("network", "VPC"), "Subnet0": names.From("network", "Subnet0"), "Subnet1": names.From("network", "Subnet1")},
		}
		base.Stacks = append(base.Stacks, st)
		base.Protected = append(base.Protected,
			construct.Protected{Stack: name, LogicalID: "LaunchTemplate", Pointer: "/Properties/LaunchTemplateData/UserData", Reason: "bootstrap userdata"},
			construct.Protected{Stack: name, LogicalID: "LaunchTemplate", Pointer: "/Properties/LaunchTemplateData/IamInstanceProfile", Reason: "role wiring"})
		base.KubeletFlags = append(base.KubeletFlags,
			construct.TargetedFlag{Target: pool, Flag: construct.Flag{Name: "node-labels", Value: "kube-aws.coreos.com/pool=" + pool.NodePool}},
			construct.TargetedFlag{Target: pool, Flag: construct.Flag{Name: "max-pods", Value: "58"}})
		base.NodeLabels = append(base.NodeLabels, construct.NodeLabel{Target: pool, Key: "node.kubernetes.io/pool", Value: pool.NodePool})
		base.IAM = append(base.IAM, construct.IAMStatement{Target: pool, Sid: "Describe", Effect: "Allow", Actions: []string{"ec2:Describe*"}, Resources: []string{"*"}})
	}
	for _, r := range construct.Roles {
		t := construct.Target{Role: r}
		base.Units = append(base.Units, construct.Unit{Target: t, Name: "kubelet.service", Enable: true, Content: "[Unit]\nDescription=kubelet\n[Service]\nExecStart=/usr/bin/kubelet $KUBELET_ARGS\nRestart=always\n"})
		base.Files = append(base.Files, construct.File{Target: t, Path: "/etc/kubernetes/kubeconfig", Mode: "0600", Content: "apiVersion: v1\nkind: Config\n"})
	}
	base.APIServer.Flags = []construct.Flag{{Name: "enable-admission-plugins", Value: "NodeRestriction,PodSecurity"}, {Name: "authorization-mode", Value: "Node,RBAC"},
		{Name: "service-cluster-ip-range", Value: "10.3.0.0/24"}, {Name: "feature-gates", Value: "A=true"}}
	base.APIServer.Volumes = []construct.Volume{{Name: "pki", HostPath: "/etc/kubernetes/pki", MountPath: "/etc/kubernetes/pki", ReadOnly: true}}

	contribs := []Contribution{{Plugin: "cloudformation", Set: base}}
	for i := 1; i < plugins; i++ {
		name := fmt.Sprintf("plugin%02d", i)
		s := &construct.Set{}
		own := construct.Stack{Name: name, DependsOn: []string{"network"}, Resources: map[string]json.RawMessage{}, Outputs: map[string]json.RawMessage{}}
		for r := 0; r < 5; r++ {
			id := fmt.Sprintf("Queue%d", r)
			own.Resources[id] = j(map[string]any{"Type": "AWS::SQS::Queue", "Properties": map[string]any{"QueueName": name + id, "VisibilityTimeout": 30}})
			own.Outputs[id+"Arn"] = j(map[string]any{"Value": map[string]any{"Fn::GetAtt": []any{id, "Arn"}}})
		}
		s.Stacks = append(s.Stacks, own, construct.Stack{Name: "control-plane", Resources: map[string]json.RawMessage{
			name + "Role":   j(map[string]any{"Type": "AWS::IAM::Role", "Properties": map[string]any{"AssumeRolePolicyDocument": map[string]any{"Version": "2012-10-17"}}}),
			name + "Policy": j(map[string]any{"Type": "AWS::IAM::Policy", "Properties": map[string]any{"PolicyName": name}}),
			// The same resource from every plugin: an identical duplicate.
			"SharedLogGroup": j(map[string]any{"Type": "AWS::Logs::LogGroup", "Properties": map[string]any{"RetentionInDays": 7}}),
		}})
		for _, r := range construct.Roles {
			t := construct.Target{Role: r}
			s.Units = append(s.Units,
				construct.Unit{Target: t, Name: name + ".service", Enable: true, Content: "[Service]\nExecStart=/opt/bin/" + name + "\n"},
				construct.Unit{Target: t, Name: "kubelet.service", DropIns: []construct.DropIn{{Name: "50-" + name + ".conf", Content: "[Service]\nEnvironment=X=1\n"}}})
			s.Files = append(s.Files, construct.File{Target: t, Path: "/etc/" + name + "/config.yaml", Mode: "0644", Content: "enabled: true\n"},
				construct.File{Target: t, Path: "/etc/" + name + "/token", Mode: "0600", Content: "((secret:" + name + "/token))", Sensitive: true})
			s.IAM = append(s.IAM, construct.IAMStatement{Target: t, Effect: "Allow", Actions: []string{"sqs:SendMessage"}, Resources: []string{"arn:aws:sqs:*:*:" + name + "*"}},
				construct.IAMStatement{Target: t, Sid: "Describe", Effect: "Allow", Actions: []string{"ec2:Describe*"}, Resources: []string{"*"}})
			s.KubeletFlags = append(s.KubeletFlags, construct.TargetedFlag{Target: t, Flag: construct.Flag{Name: "feature-gates", Value: fmt.Sprintf("Gate%d=true", i)}})
			s.NodeLabels = append(s.NodeLabels, construct.NodeLabel{Target: t, Key: name + ".io/enabled", Value: "true"})
		}
		s.APIServer.Flags = []construct.Flag{
			{Name: "enable-admission-plugins", Value: fmt.Sprintf("NodeRestriction,Plugin%d", i)},
			{Name: "feature-gates", Value: fmt.Sprintf("A=true,Gate%d=true", i)},
			{Name: "service-cluster-ip-range", Value: "10.3.0.0/24"},
			{Name: name + "-option", Value: "on"}}
		s.APIServer.Volumes = []construct.Volume{{Name: name, HostPath: "/etc/" + name, MountPath: "/etc/" + name, ReadOnly: true}}
		s.HelmReleases = []construct.HelmRelease{{Name: name, Namespace: "kube-system", Chart: construct.Chart{Repository: "https://charts.example.com", Name: name, Version: "1.2.3"},
			Values: j(map[string]any{"replicas": 2, "image": map[string]any{"tag": "v1"}, "resources": map[string]any{"limits": map[string]any{"cpu": "100m"}}})}}
		s.Manifests = []construct.Manifest{{Name: name, Content: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n"}}
		// Every plugin tags the same resources: each appends its tag to the
		// list (replacing another plugin's list would be a conflict), and
		// sets a key of its own with a merge patch.
		for k := 0; k < 10; k++ {
			pool := fmt.Sprintf("nodepool-pool%d", (i*7+k)%nodePools)
			s.Patches = append(s.Patches,
				construct.Patch{Stack: pool, LogicalID: "LaunchTemplate",
					Merge: j(map[string]any{"Metadata": map[string]any{name: map[string]any{"managed": true}}}),
					Operations: j([]any{map[string]any{"op": "add", "path": "/Properties/LaunchTemplateData/TagSpecifications/0/Tags/-",
						"value": map[string]any{"Key": name, "Value": "true"}}})})
		}
		// Tags are keyed: one Key per plugin, as CloudFormation wants.
		s.Patches = append(s.Patches, construct.Patch{Stack: "network", LogicalID: "VPC",
			Operations: j([]any{map[string]any{"op": "add", "path": "/Properties/Tags/-", "value": map[string]any{"Key": "owner-" + name, "Value": name}}})})
		contribs = append(contribs, Contribution{Plugin: name, Set: s})
	}
	return contribs
}

func BenchmarkMerge30Plugins(b *testing.B) {
	contribs := benchContributions(200, 30)
	if _, diags := Merge(contribs); len(diags) > 0 {
		b.Fatalf("the benchmark's input does not merge cleanly:\n%s", diags.Error())
	}
	b.ReportAllocs()
	cpu := processCPU()
	for b.Loop() {
		Merge(contribs)
	}
	// CPU time includes the garbage collector's work on other threads.
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N)/1e6, "cpu-ms/op")
}

// TestBenchInputMerges keeps the benchmark's input honest in the normal test
// run: it merges cleanly, the shared duplicates collapse and patches land.
func TestBenchInputMerges(t *testing.T) {
	out := mustMerge(t, benchContributions(20, 5))
	if len(out.Stacks) != 3+20+4 {
		t.Errorf("%d stacks", len(out.Stacks))
	}
	var admission string
	for _, f := range out.APIServer.Flags {
		if f.Name == "enable-admission-plugins" {
			admission = f.Value
		}
	}
	if admission != "NodeRestriction,PodSecurity,Plugin1,Plugin2,Plugin3,Plugin4" {
		t.Errorf("admission plugins = %q", admission)
	}
	lt := resourceJSON(t, out, "nodepool-pool7", "LaunchTemplate")
	if _, ok := lt["Properties"].(map[string]any)["LaunchTemplateData"].(map[string]any)["TagSpecifications"]; !ok {
		t.Error("patch not applied")
	}
}
