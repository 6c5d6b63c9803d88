package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
)

// Stack is the name of the bastion's stack, and the outputs the validate
// stage reads.
const (
	Stack            = "bastion"
	OutputInstanceID = "InstanceId"
	OutputPublicIP   = "PublicIp"
	defaultImage     = "/aws/service/ami-amazon-linux-latest/al2023-ami-kernel-default-x86_64"
)

// Values are the plugin's values (schema.json).
type Values struct {
	AllowedCIDRs []string `json:"allowedCIDRs"`
	InstanceType string   `json:"instanceType,omitempty"`
	KeyName      string   `json:"keyName,omitempty"`
	Subnet       string   `json:"subnet,omitempty"`
	SSHToNodes   *bool    `json:"sshToNodes,omitempty"`
}

// initialise builds the bastion stack from the cluster and the values.
func initialise(c *config.Cluster, v Values) (*stage.Result, error) {
	var diags diag.List
	if v.InstanceType == "" {
		v.InstanceType = "t3.micro"
	}
	if v.KeyName == "" {
		v.KeyName = c.KeyName
	}
	if v.SSHToNodes == nil {
		yes := true
		v.SSHToNodes = &yes
	}
	if len(v.AllowedCIDRs) == 0 {
		diags = append(diags, diag.Fatalf("plugin bastion needs values.allowedCIDRs: who may SSH to the bastion").
			At("plugins.bastion.values.allowedCIDRs").WithHint("allowedCIDRs: [203.0.113.0/24]"))
	}
	for i, cidr := range v.AllowedCIDRs {
		if cidr == "0.0.0.0/0" {
			diags = append(diags, diag.Warningf("plugin bastion admits SSH from anywhere (0.0.0.0/0)").
				At(c.ValuesPath(Name, "", fmt.Sprintf("/allowedCIDRs/%d", i))).WithHint("list the CIDRs of your offices or VPN instead"))
		}
	}
	if v.KeyName == "" {
		diags = append(diags, diag.Warningf("plugin bastion: no EC2 key pair (values.keyName or keyName), so nobody can SSH to the bastion with a key").
			At("plugins.bastion.values.keyName").WithHint("set keyName in cluster.yaml or plugins.bastion.values.keyName"))
	}
	subnet, d := publicSubnet(c, v.Subnet)
	diags = append(diags, d...)
	if diags.HasFatal() {
		return &stage.Result{Diagnostics: diags}, nil
	}
	st, err := stack(c, v, subnet)
	if err != nil {
		return nil, err
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return &stage.Result{Values: out, Constructs: &construct.Set{Stacks: []construct.Stack{st}}, Diagnostics: diags}, nil
}

// publicSubnet picks the subnet the bastion goes in: the one named, else the
// first public subnet, the same list the cloudformation built-in makes.
func publicSubnet(c *config.Cluster, name string) (config.Subnet, diag.List) {
	subnets, err := config.ComputeSubnets(c)
	if err != nil {
		return config.Subnet{}, diag.List{diag.Fatalf("plugin bastion: %v", err).At("network")}
	}
	var public []string
	for _, s := range subnets {
		if s.Private {
			continue
		}
		if name == "" || s.Name == name {
			return s, nil
		}
		public = append(public, s.Name)
	}
	if name != "" {
		return config.Subnet{}, diag.List{diag.Fatalf("plugin bastion: %q is not a public subnet of the cluster", name).
			At("plugins.bastion.values.subnet").WithHint(fmt.Sprintf("public subnets: %s", strings.Join(public, ", ")))}
	}
	return config.Subnet{}, diag.List{diag.Fatalf("plugin bastion: the cluster has no public subnet for the bastion").
		At("network.subnets").WithHint("add a subnet without private: true")}
}

func raw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only plain maps and strings reach here
	}
	return b
}

func ref(name string) map[string]any { return map[string]any{"Ref": name} }

// stack is the bastion stack: its own template, deployed after network and
// fed the network's outputs through parameters, as every kube-aws stack is.
func stack(c *config.Cluster, v Values, subnet config.Subnet) (construct.Stack, error) {
	tags := func(name string) []map[string]string {
		return []map[string]string{
			{"Key": "Name", "Value": c.ClusterName + "-" + name},
			{"Key": names.KubernetesClusterTag(c.ClusterName), "Value": "owned"},
		}
	}
	vpc := names.From(names.StackNetwork, names.OutputVpcID)
	sub := names.From(names.StackNetwork, names.SubnetOutput(subnet.Name))
	st := construct.Stack{
		Name:        Stack,
		Description: fmt.Sprintf("kube-aws %s: bastion host", c.ClusterName),
		DependsOn:   []string{names.StackNetwork},
		Parameters: map[string]json.RawMessage{
			"VpcId":    raw(map[string]string{"Type": "AWS::EC2::VPC::Id", "Description": "From " + vpc.String()}),
			"SubnetId": raw(map[string]string{"Type": "AWS::EC2::Subnet::Id", "Description": "From " + sub.String()}),
		},
		ParameterSources: map[string]names.Source{"VpcId": vpc, "SubnetId": sub},
		Resources:        map[string]json.RawMessage{},
		Outputs:          map[string]json.RawMessage{},
		Tags:             names.StackTags(c.ClusterName, Stack),
	}
	if c.AMI != "" {
		st.Parameters["ImageId"] = raw(map[string]string{"Type": "AWS::EC2::Image::Id", "Default": c.AMI, "Description": "The image the bastion boots (amiId)"})
	} else {
		st.Parameters["ImageId"] = raw(map[string]string{"Type": "AWS::SSM::Parameter::Value<AWS::EC2::Image::Id>", "Default": defaultImage, "Description": "SSM parameter naming the image the bastion boots"})
	}

	var ingress []map[string]any
	for _, cidr := range v.AllowedCIDRs {
		ingress = append(ingress, map[string]any{"IpProtocol": "tcp", "FromPort": 22, "ToPort": 22, "CidrIp": cidr, "Description": "SSH to the bastion"})
	}
	st.Resources["BastionSecurityGroup"] = raw(map[string]any{
		"Type": "AWS::EC2::SecurityGroup",
		"Properties": map[string]any{
			"GroupDescription":     fmt.Sprintf("kube-aws %s bastion", c.ClusterName),
			"VpcId":                ref("VpcId"),
			"SecurityGroupIngress": ingress,
			"Tags":                 tags("bastion"),
		},
	})
	props := map[string]any{
		"ImageId":      ref("ImageId"),
		"InstanceType": v.InstanceType,
		// Its public address is the Elastic IP below, not one mapped on
		// launch: that needs the subnet's MapPublicIpOnLaunch, which an
		// existing VPC's public subnet may not set (and moto never does).
		"SubnetId":         ref("SubnetId"),
		"SecurityGroupIds": []any{map[string]any{"Fn::GetAtt": []string{"BastionSecurityGroup", "GroupId"}}},
		"Tags":             tags("bastion"),
	}
	if v.KeyName != "" {
		props["KeyName"] = v.KeyName
	}
	st.Resources["BastionInstance"] = raw(map[string]any{"Type": "AWS::EC2::Instance", "Properties": props})
	// A fixed address to SSH to, which also survives a stop and start.
	st.Resources["BastionAddress"] = raw(map[string]any{
		"Type": "AWS::EC2::EIP",
		"Properties": map[string]any{
			"Domain":     "vpc",
			"InstanceId": ref("BastionInstance"),
			"Tags":       tags("bastion"),
		},
	})

	if *v.SSHToNodes {
		// The bastion exists to reach the machines: SSH from its group into
		// each role's group, which lives in the network stack.
		for _, role := range []struct{ name, output string }{
			{"Controller", names.OutputControllerSecurityGroup},
			{"Etcd", names.OutputEtcdSecurityGroup},
			{"Worker", names.OutputWorkerSecurityGroup},
		} {
			param := role.output
			src := names.From(names.StackNetwork, role.output)
			st.Parameters[param] = raw(map[string]string{"Type": "AWS::EC2::SecurityGroup::Id", "Description": "From " + src.String()})
			st.ParameterSources[param] = src
			st.Resources["SSHFromBastionTo"+role.name] = raw(map[string]any{
				"Type": "AWS::EC2::SecurityGroupIngress",
				"Properties": map[string]any{
					"GroupId":               ref(param),
					"IpProtocol":            "tcp",
					"FromPort":              22,
					"ToPort":                22,
					"SourceSecurityGroupId": map[string]any{"Fn::GetAtt": []string{"BastionSecurityGroup", "GroupId"}},
					"Description":           "SSH from the bastion",
				},
			})
		}
	}
	st.Outputs[OutputInstanceID] = raw(map[string]any{"Value": ref("BastionInstance"), "Description": "The bastion instance"})
	st.Outputs[OutputPublicIP] = raw(map[string]any{"Value": ref("BastionAddress"), "Description": "SSH here: ssh -J ec2-user@<PublicIp> <node>"})
	st.Outputs["SecurityGroupId"] = raw(map[string]any{"Value": map[string]any{"Fn::GetAtt": []string{"BastionSecurityGroup", "GroupId"}}, "Description": "The bastion's security group"})
	return st, nil
}
