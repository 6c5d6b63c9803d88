package names

import (
	"regexp"
	"strconv"
	"strings"
)

// Logical IDs of the resources the built-in plugins render: what a patch
// (construct.Patch.LogicalID) and a Ref or Fn::GetAtt of another plugin's
// resource name. The security groups, the API rule, LaunchTemplate,
// AutoScalingGroup, APILoadBalancer, EtcdZoneResource and
// EtcdRecordsPolicyResource are declared beside the stacks and outputs they
// go with; BuiltinResources lists them all, and the plugin guide's table of
// logical IDs is made from it.

// The network stack of a new VPC (no network.vpcId in cluster.yaml).
const (
	VPC                       = "VPC"
	InternetGateway           = "InternetGateway"
	InternetGatewayAttachment = "InternetGatewayAttachment"
	PublicRouteTable          = "PublicRouteTable"
	// PublicRoute sends 0.0.0.0/0 of the public subnets to the internet
	// gateway.
	PublicRoute = "PublicRoute"
)

// Security group rules of the network stack, besides ControllerIngressAPI:
// <To>Ingress<From> admits the machines of role From to those of role To.
const (
	ControllerIngressController = "ControllerIngressController"
	ControllerIngressWorker     = "ControllerIngressWorker"
	WorkerIngressController     = "WorkerIngressController"
	WorkerIngressWorker         = "WorkerIngressWorker"
	EtcdIngressController       = "EtcdIngressController"
	EtcdIngressEtcd             = "EtcdIngressEtcd"
)

// The API load balancer's companions in the control-plane stack.
const (
	// APITargetGroup and APIListener go with the network load balancer
	// (plugins.cloudformation.values.apiLoadBalancer: network, the default).
	APITargetGroup = "TargetGroup"
	APIListener    = "Listener"
	// APILoadBalancerSecurityGroup goes with the classic load balancer
	// (apiLoadBalancer: classic).
	APILoadBalancerSecurityGroup = "LoadBalancerSecurityGroup"
	// APIEndpointRecord is the Route 53 record of apiEndpoint.dnsName,
	// made when apiEndpoint.hostedZoneId is set.
	APIEndpointRecord = "APIEndpointRecord"
)

// SubnetResource is the logical ID of a subnet of a new VPC:
// Subnet<LogicalName> (public-us-east-1a gives SubnetPublicUsEast1a).
func SubnetResource(subnet string) string { return "Subnet" + LogicalName(subnet) }

// SubnetRouteTableAssociation ties a subnet of a new VPC to its route table.
func SubnetRouteTableAssociation(subnet string) string {
	return SubnetResource(subnet) + "RouteTableAssociation"
}

// PrivateRouteTable is the route table of the private subnets of one
// availability zone (us-east-1a gives PrivateRouteTableUsEast1a).
func PrivateRouteTable(zone string) string { return "PrivateRouteTable" + LogicalName(zone) }

// NatEIP, NatGateway and PrivateRoute are one zone's NAT gateway, its
// address and the route of the zone's private subnets through it, made when
// network.natGateways is true.
func NatEIP(zone string) string { return "NatEIP" + LogicalName(zone) }

// NatGateway is one zone's NAT gateway (see NatEIP).
func NatGateway(zone string) string { return "NatGateway" + LogicalName(zone) }

// PrivateRoute is one zone's default route through its NAT gateway (see
// NatEIP).
func PrivateRoute(zone string) string { return "PrivateRoute" + LogicalName(zone) }

// EtcdDataVolume is etcd member i's data volume in the etcd stack
// (EtcdData0).
func EtcdDataVolume(i int) string { return "EtcdData" + strconv.Itoa(i) }

// EtcdMemberGroup is etcd member i's auto scaling group of one machine in
// the etcd stack (EtcdMember0Group).
func EtcdMemberGroup(i int) string { return "EtcdMember" + strconv.Itoa(i) + "Group" }

// RoleResource is the IAM role of a machine role in the iam stack:
// ControllerRole, EtcdRole, NodePool<Pool>Role.
func RoleResource(role, pool string) string { return RolePrefix(role, pool) + "Role" }

// OIDCProvider is the iam stack's IAM OIDC provider that trusts the
// cluster's service-account issuer (ServiceAccountIssuer); every pod role
// trusts it.
const OIDCProvider = "OIDCProvider"

// PodRoleResource is a pod role (construct.PodRole) in the iam stack:
// PodRole<LogicalName(role)>. PodRoleArnOutput is the output with its ARN.
func PodRoleResource(role string) string  { return "PodRole" + LogicalName(role) }
func PodRoleArnOutput(role string) string { return PodRoleResource(role) + "Arn" }

// The iam stack's outputs of the OIDC provider: its ARN, for a role made
// outside kube-aws to trust, and the issuer it trusts.
const (
	OutputOIDCProviderArn      = "OIDCProviderArn"
	OutputServiceAccountIssuer = "ServiceAccountIssuer"
)

// InstanceProfileResource is the instance profile of a machine role in the
// iam stack (its name is the output InstanceProfileOutput).
func InstanceProfileResource(role, pool string) string {
	return RolePrefix(role, pool) + "InstanceProfile"
}

// Resource is one resource a built-in plugin renders, as the plugin guide
// lists it.
type Resource struct {
	// Stack is the stack it is in; <pool> stands for a node pool's name.
	Stack string
	// LogicalID is its logical ID; <Subnet>, <Zone> and <Pool> stand for
	// LogicalName of a subnet's, an availability zone's and a node pool's
	// name, <i> for an etcd member's index.
	LogicalID string
	// Go is how a plugin names it: a constant or a call of this package.
	Go string
	// Type is its CloudFormation resource type.
	Type string
	// MadeBy is the built-in plugin that makes it.
	MadeBy string
	// When says when it is rendered, "" for always.
	When string
}

// BuiltinResources lists every resource the built-in plugins render, stack
// by stack. A test of the cloudformation built-in checks it against what
// the built-ins render; the plugin guide's table is made from it.
func BuiltinResources() []Resource {
	const (
		newVPC = "a new VPC (no network.vpcId)"
		nat    = "a new VPC with network.natGateways"
		nlb    = "apiLoadBalancer: network (the default)"
		pool   = "nodepool-<pool>"
	)
	return []Resource{
		{StackNetwork, VPC, "names.VPC", "AWS::EC2::VPC", "cloudformation", newVPC},
		{StackNetwork, InternetGateway, "names.InternetGateway", "AWS::EC2::InternetGateway", "cloudformation", newVPC},
		{StackNetwork, InternetGatewayAttachment, "names.InternetGatewayAttachment", "AWS::EC2::VPCGatewayAttachment", "cloudformation", newVPC},
		{StackNetwork, PublicRouteTable, "names.PublicRouteTable", "AWS::EC2::RouteTable", "cloudformation", newVPC},
		{StackNetwork, PublicRoute, "names.PublicRoute", "AWS::EC2::Route", "cloudformation", newVPC},
		{StackNetwork, "Subnet<Subnet>", "names.SubnetResource(subnet)", "AWS::EC2::Subnet", "cloudformation", newVPC},
		{StackNetwork, "Subnet<Subnet>RouteTableAssociation", "names.SubnetRouteTableAssociation(subnet)", "AWS::EC2::SubnetRouteTableAssociation", "cloudformation", newVPC},
		{StackNetwork, "PrivateRouteTable<Zone>", "names.PrivateRouteTable(zone)", "AWS::EC2::RouteTable", "cloudformation", "a new VPC, per zone with private subnets"},
		{StackNetwork, "NatEIP<Zone>", "names.NatEIP(zone)", "AWS::EC2::EIP", "cloudformation", nat},
		{StackNetwork, "NatGateway<Zone>", "names.NatGateway(zone)", "AWS::EC2::NatGateway", "cloudformation", nat},
		{StackNetwork, "PrivateRoute<Zone>", "names.PrivateRoute(zone)", "AWS::EC2::Route", "cloudformation", nat},
		{StackNetwork, ControllerSecurityGroup, "names.ControllerSecurityGroup", "AWS::EC2::SecurityGroup", "cloudformation", ""},
		{StackNetwork, EtcdSecurityGroup, "names.EtcdSecurityGroup", "AWS::EC2::SecurityGroup", "cloudformation", ""},
		{StackNetwork, WorkerSecurityGroup, "names.WorkerSecurityGroup", "AWS::EC2::SecurityGroup", "cloudformation", ""},
		{StackNetwork, ControllerIngressAPI, "names.ControllerIngressAPI", "AWS::EC2::SecurityGroupIngress", "cloudformation", ""},
		{StackNetwork, ControllerIngressController, "names.ControllerIngressController", "AWS::EC2::SecurityGroupIngress", "cloudformation", ""},
		{StackNetwork, ControllerIngressWorker, "names.ControllerIngressWorker", "AWS::EC2::SecurityGroupIngress", "cloudformation", ""},
		{StackNetwork, WorkerIngressController, "names.WorkerIngressController", "AWS::EC2::SecurityGroupIngress", "cloudformation", ""},
		{StackNetwork, WorkerIngressWorker, "names.WorkerIngressWorker", "AWS::EC2::SecurityGroupIngress", "cloudformation", ""},
		{StackNetwork, EtcdIngressController, "names.EtcdIngressController", "AWS::EC2::SecurityGroupIngress", "cloudformation", ""},
		{StackNetwork, EtcdIngressEtcd, "names.EtcdIngressEtcd", "AWS::EC2::SecurityGroupIngress", "cloudformation", ""},

		{StackIAM, "<Role>Role", "names.RoleResource(role, pool)", "AWS::IAM::Role", "iam", "per role: Controller, Etcd, NodePool<Pool>; rendered late (Late)"},
		{StackIAM, "<Role>InstanceProfile", "names.InstanceProfileResource(role, pool)", "AWS::IAM::InstanceProfile", "iam", "per role, as <Role>Role"},
		{StackIAM, OIDCProvider, "names.OIDCProvider", "AWS::IAM::OIDCProvider", "iam", ""},
		{StackIAM, "PodRole<PodRole>", "names.PodRoleResource(role)", "AWS::IAM::Role", "iam", "per pod role (plugins.iam.values.podRoles, or a plugin's)"},

		{StackEtcd, LaunchTemplate, "names.LaunchTemplate", "AWS::EC2::LaunchTemplate", "cloudformation", ""},
		{StackEtcd, EtcdZoneResource, "names.EtcdZoneResource", "AWS::Route53::HostedZone", "etcd", ""},
		{StackEtcd, EtcdRecordsPolicyResource, "names.EtcdRecordsPolicyResource", "AWS::IAM::Policy", "etcd", ""},
		{StackEtcd, "EtcdData<i>", "names.EtcdDataVolume(i)", "AWS::EC2::Volume", "etcd", "per member"},
		{StackEtcd, "EtcdMember<i>Group", "names.EtcdMemberGroup(i)", "AWS::AutoScaling::AutoScalingGroup", "etcd", "per member"},

		{StackControlPlane, LaunchTemplate, "names.LaunchTemplate", "AWS::EC2::LaunchTemplate", "cloudformation", ""},
		{StackControlPlane, AutoScalingGroup, "names.AutoScalingGroup", "AWS::AutoScaling::AutoScalingGroup", "cloudformation", ""},
		{StackControlPlane, APILoadBalancer, "names.APILoadBalancer", "AWS::ElasticLoadBalancingV2::LoadBalancer", "cloudformation", nlb},
		{StackControlPlane, APITargetGroup, "names.APITargetGroup", "AWS::ElasticLoadBalancingV2::TargetGroup", "cloudformation", nlb},
		{StackControlPlane, APIListener, "names.APIListener", "AWS::ElasticLoadBalancingV2::Listener", "cloudformation", nlb},
		{StackControlPlane, APILoadBalancer, "names.APILoadBalancer", "AWS::ElasticLoadBalancing::LoadBalancer", "cloudformation", "apiLoadBalancer: classic"},
		{StackControlPlane, APILoadBalancerSecurityGroup, "names.APILoadBalancerSecurityGroup", "AWS::EC2::SecurityGroup", "cloudformation", "apiLoadBalancer: classic"},
		{StackControlPlane, APIEndpointRecord, "names.APIEndpointRecord", "AWS::Route53::RecordSet", "cloudformation", "apiEndpoint.hostedZoneId is set"},

		{pool, LaunchTemplate, "names.LaunchTemplate", "AWS::EC2::LaunchTemplate", "cloudformation", ""},
		{pool, AutoScalingGroup, "names.AutoScalingGroup", "AWS::AutoScaling::AutoScalingGroup", "cloudformation", ""},
	}
}

// Matches reports whether a rendered resource (its stack, logical ID and
// type) is the one r describes.
func (r Resource) Matches(stack, logicalID, typ string) bool {
	return r.Type == typ && matchPattern(r.Stack, stack) && matchPattern(r.LogicalID, logicalID)
}

// placeholders are what the <...> of a Resource's Stack and LogicalID
// stand for.
var placeholders = strings.NewReplacer(
	"<pool>", `.+`,
	"<Pool>", `[A-Za-z0-9]+`,
	"<Subnet>", `[A-Za-z0-9]+`,
	"<Zone>", `[A-Za-z0-9]+`,
	"<Role>", `(?:Controller|Etcd|NodePool[A-Za-z0-9]+)`,
	"<PodRole>", `[A-Za-z0-9]+`,
	"<i>", `[0-9]+`,
)

func matchPattern(pattern, s string) bool {
	if !strings.Contains(pattern, "<") {
		return pattern == s
	}
	re, err := regexp.Compile("^" + placeholders.Replace(regexp.QuoteMeta(pattern)) + "$")
	return err == nil && re.MatchString(s)
}
