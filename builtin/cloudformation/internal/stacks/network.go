package stacks

import (
	"fmt"

	"github.com/awslabs/goformation/v4/cloudformation/ec2"
	"github.com/awslabs/goformation/v4/cloudformation/tags"

	"github.com/kube-aws/kube-aws/builtin/internal/cfn"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
)

// network builds the network stack: for a new VPC the VPC itself, its
// subnets, route tables, internet gateway and optional NAT gateways; for an
// existing VPC only outputs passing the given IDs on. Either way it holds the
// security groups of every role, so that their ingress rules can refer to
// each other without wiring parameters in a cycle between stacks.
func network(c *config.Cluster, subnets []config.Subnet) (*stack, diag.List) {
	s := newStack(names.StackNetwork, fmt.Sprintf("kube-aws %s: network", c.ClusterName))
	var diags diag.List
	existing := c.Network.VPCID != ""

	vpc := c.Network.VPCID
	if !existing {
		cidr := c.Network.VPCCIDR
		if cidr == "" {
			cidr = config.DefaultVPCCIDR
		}
		s.resource(names.VPC, &ec2.VPC{
			CidrBlock:          cidr,
			EnableDnsSupport:   true,
			EnableDnsHostnames: true,
			Tags:               tagList(c.ClusterName, c.ClusterName+"-vpc"),
		})
		vpc = cfn.Ref(names.VPC)
		s.resource(names.InternetGateway, &ec2.InternetGateway{Tags: tagList(c.ClusterName, c.ClusterName+"-igw")})
		s.resource(names.InternetGatewayAttachment, &ec2.VPCGatewayAttachment{
			VpcId: vpc, InternetGatewayId: cfn.Ref(names.InternetGateway),
		})
		s.resource(names.PublicRouteTable, &ec2.RouteTable{VpcId: vpc, Tags: tagList(c.ClusterName, c.ClusterName+"-public")})
		s.resource(names.PublicRoute, &ec2.Route{
			RouteTableId:         cfn.Ref(names.PublicRouteTable),
			DestinationCidrBlock: "0.0.0.0/0",
			GatewayId:            cfn.Ref(names.InternetGateway),
			// The route fails until the gateway is attached to the VPC.
			AWSCloudFormationDependsOn: []string{names.InternetGatewayAttachment},
		})
		diags = append(diags, newSubnets(s, c, subnets, vpc)...)
	} else {
		for i, sn := range subnets {
			if sn.ID == "" {
				diags = append(diags, diag.Fatalf("subnet %q of an existing VPC has no id", sn.Name).
					At(fmt.Sprintf("network.subnets[%d].id", i)))
			}
		}
	}
	s.output(names.OutputVpcID, vpc, "The VPC of the cluster")

	var pub, priv []string
	for _, sn := range subnets {
		id := sn.ID
		if !existing {
			id = cfn.Ref(subnetID(sn))
		}
		if id == "" {
			continue
		}
		s.output(names.SubnetOutput(sn.Name), id, fmt.Sprintf("Subnet %s (%s)", sn.Name, sn.AvailabilityZone))
		if sn.Private {
			priv = append(priv, id)
		} else {
			pub = append(pub, id)
		}
	}
	// CloudFormation refuses an output with an empty value, so a list with
	// no subnet in it is left out rather than output as "".
	if len(pub) > 0 {
		s.output(names.OutputPublicSubnetIDs, cfn.Join(",", pub...), "Public subnets, comma-separated")
	}
	if len(priv) > 0 {
		s.output(names.OutputPrivateSubnetIDs, cfn.Join(",", priv...), "Private subnets, comma-separated")
	}
	securityGroups(s, c, vpc)
	return s, diags
}

func subnetID(sn config.Subnet) string { return names.SubnetResource(sn.Name) }

// newSubnets adds the subnets of a new VPC, their route table associations,
// one private route table per zone and, when asked for, one NAT gateway per
// zone that has private subnets.
func newSubnets(s *stack, c *config.Cluster, subnets []config.Subnet, vpc string) diag.List {
	var diags diag.List
	firstPublic := map[string]string{}
	anyPublic := ""
	for _, sn := range subnets {
		if !sn.Private {
			if _, ok := firstPublic[sn.AvailabilityZone]; !ok {
				firstPublic[sn.AvailabilityZone] = subnetID(sn)
			}
			if anyPublic == "" {
				anyPublic = subnetID(sn)
			}
		}
	}
	privateRT := map[string]string{}
	for i, sn := range subnets {
		id := subnetID(sn)
		if sn.CIDR == "" {
			diags = append(diags, diag.Fatalf("subnet %q of a new VPC has no cidr", sn.Name).
				At(fmt.Sprintf("network.subnets[%d].cidr", i)))
		}
		role := tags.Tag{Key: "kubernetes.io/role/elb", Value: "1"}
		if sn.Private {
			role = tags.Tag{Key: "kubernetes.io/role/internal-elb", Value: "1"}
		}
		s.resource(id, &ec2.Subnet{
			VpcId:               vpc,
			AvailabilityZone:    sn.AvailabilityZone,
			CidrBlock:           sn.CIDR,
			MapPublicIpOnLaunch: !sn.Private,
			Tags:                tagList(c.ClusterName, c.ClusterName+"-"+sn.Name, role),
		})
		rt := names.PublicRouteTable
		if sn.Private {
			az := sn.AvailabilityZone
			rt = names.PrivateRouteTable(az)
			if _, ok := privateRT[sn.AvailabilityZone]; !ok {
				privateRT[sn.AvailabilityZone] = rt
				s.resource(rt, &ec2.RouteTable{VpcId: vpc, Tags: tagList(c.ClusterName, c.ClusterName+"-private-"+sn.AvailabilityZone)})
				if c.Network.NATGateways {
					natSubnet := firstPublic[sn.AvailabilityZone]
					if natSubnet == "" {
						natSubnet = anyPublic
					}
					if natSubnet == "" {
						diags = append(diags, diag.Fatalf("NAT gateways need a public subnet, and network.subnets has none").
							At("network.natGateways"))
						continue
					}
					s.resource(names.NatEIP(az), &ec2.EIP{
						Domain:                     "vpc",
						Tags:                       tagList(c.ClusterName, c.ClusterName+"-nat-"+sn.AvailabilityZone),
						AWSCloudFormationDependsOn: []string{names.InternetGatewayAttachment},
					})
					s.resource(names.NatGateway(az), &ec2.NatGateway{
						AllocationId: cfn.GetAtt(names.NatEIP(az), "AllocationId"),
						SubnetId:     cfn.Ref(natSubnet),
						Tags:         tagList(c.ClusterName, c.ClusterName+"-nat-"+sn.AvailabilityZone),
					})
					s.resource(names.PrivateRoute(az), &ec2.Route{
						RouteTableId:         cfn.Ref(rt),
						DestinationCidrBlock: "0.0.0.0/0",
						NatGatewayId:         cfn.Ref(names.NatGateway(az)),
					})
				}
			}
		}
		s.resource(names.SubnetRouteTableAssociation(sn.Name), &ec2.SubnetRouteTableAssociation{
			SubnetId: cfn.Ref(id), RouteTableId: cfn.Ref(rt),
		})
	}
	return diags
}

// securityGroups adds a group per role and the rules between them. Rules are
// separate SecurityGroupIngress resources because groups that admit each
// other cannot name each other inside their own definitions.
func securityGroups(s *stack, c *config.Cluster, vpc string) {
	groups := []struct{ id, role, output string }{
		{names.ControllerSecurityGroup, "controller", names.OutputControllerSecurityGroup},
		{names.EtcdSecurityGroup, "etcd", names.OutputEtcdSecurityGroup},
		{names.WorkerSecurityGroup, "worker", names.OutputWorkerSecurityGroup},
	}
	for _, g := range groups {
		s.resource(g.id, &ec2.SecurityGroup{
			GroupDescription: fmt.Sprintf("kube-aws %s %s", c.ClusterName, g.role),
			VpcId:            vpc,
			Tags:             tagList(c.ClusterName, c.ClusterName+"-"+g.role),
		})
		s.output(g.output, cfn.GetAtt(g.id, "GroupId"), "Security group of the "+g.role+" machines")
	}
	type rule struct {
		id, to, from, proto, desc string
		fromPort, toPort          int
		cidr                      string
	}
	rules := []rule{
		// The network load balancer keeps the client's address, so the API
		// port is open to clients wherever they are; the API server
		// authenticates them.
		{id: names.ControllerIngressAPI, to: names.ControllerSecurityGroup, proto: "tcp", fromPort: 443, toPort: 443, cidr: "0.0.0.0/0", desc: "Kubernetes API"},
		{id: names.ControllerIngressController, to: names.ControllerSecurityGroup, from: names.ControllerSecurityGroup, proto: "-1", desc: "controllers to controllers"},
		{id: names.ControllerIngressWorker, to: names.ControllerSecurityGroup, from: names.WorkerSecurityGroup, proto: "-1", desc: "workers to controllers (API, pod network)"},
		{id: names.WorkerIngressController, to: names.WorkerSecurityGroup, from: names.ControllerSecurityGroup, proto: "-1", desc: "controllers to workers (kubelet, pod network)"},
		{id: names.WorkerIngressWorker, to: names.WorkerSecurityGroup, from: names.WorkerSecurityGroup, proto: "-1", desc: "workers to workers (pod network)"},
		{id: names.EtcdIngressController, to: names.EtcdSecurityGroup, from: names.ControllerSecurityGroup, proto: "tcp", fromPort: 2379, toPort: 2379, desc: "etcd clients"},
		{id: names.EtcdIngressEtcd, to: names.EtcdSecurityGroup, from: names.EtcdSecurityGroup, proto: "tcp", fromPort: 2379, toPort: 2380, desc: "etcd peers"},
	}
	for _, r := range rules {
		ing := &ec2.SecurityGroupIngress{
			GroupId:     cfn.GetAtt(r.to, "GroupId"),
			IpProtocol:  r.proto,
			FromPort:    r.fromPort,
			ToPort:      r.toPort,
			CidrIp:      r.cidr,
			Description: r.desc,
		}
		if r.from != "" {
			ing.SourceSecurityGroupId = cfn.GetAtt(r.from, "GroupId")
		}
		s.resource(r.id, ing)
	}
}
