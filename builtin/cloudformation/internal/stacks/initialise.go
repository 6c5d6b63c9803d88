package stacks

import (
	"fmt"
	"strconv"

	"github.com/awslabs/goformation/v4/cloudformation/ec2"
	"github.com/awslabs/goformation/v4/cloudformation/elasticloadbalancing"
	"github.com/awslabs/goformation/v4/cloudformation/elasticloadbalancingv2"
	"github.com/awslabs/goformation/v4/cloudformation/route53"

	"github.com/kube-aws/kube-aws/builtin/internal/bootstrap"
	"github.com/kube-aws/kube-aws/builtin/internal/cfn"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/parallel"
)

// Load balancer kinds for the API endpoint (Values.APILoadBalancer).
const (
	LoadBalancerNetwork = "network"
	LoadBalancerClassic = "classic"
)

// Initialise returns the base constructs of a cluster: the network, etcd,
// control-plane and nodepool-<name> stacks, and the protected paths of their
// launch templates. The iam stack is the iam plugin's.
func Initialise(c *config.Cluster, v Values) (*construct.Set, diag.List) {
	var diags diag.List
	subnets, d := computeSubnets(c)
	diags = append(diags, d...)
	if diags.HasFatal() {
		return &construct.Set{}, diags
	}
	set := &construct.Set{}

	net, d := network(c, subnets)
	diags = append(diags, d...)
	set.Stacks = append(set.Stacks, net.done())

	etcdSubnets, d := pickSubnets(subnets, c.Etcd.Subnets, "etcd.subnets")
	diags = append(diags, d...)
	etcd := newStack(names.StackEtcd, fmt.Sprintf("kube-aws %s: etcd", c.ClusterName))
	prot, err := machineStack(etcd, c, machines{
		role: construct.Etcd, name: "etcd", instanceType: c.Etcd.InstanceType, rootVolume: c.Etcd.RootVolumeSize,
		min: c.Etcd.Count, max: c.Etcd.Count, desired: c.Etcd.Count,
		subnets: etcdSubnets, sgOutput: names.OutputEtcdSecurityGroup, noGroup: true,
	})
	if err != nil {
		return &construct.Set{}, append(diags, diag.Fatalf("etcd stack: %v", err))
	}
	set.Protected = append(set.Protected, prot...)
	set.Stacks = append(set.Stacks, etcd.done())

	cp, prot, d := controlPlane(c, v, subnets)
	diags = append(diags, d...)
	set.Protected = append(set.Protected, prot...)
	set.Stacks = append(set.Stacks, cp.done())

	// The node pools' stacks are built on every CPU: at 100 pools they
	// were most of the built-ins' initialise, on one CPU while the other
	// had nothing left to do. Names are checked first, in order; each
	// pool's stack, diagnostics and protected paths are then its own, and
	// are added in the pools' order.
	type poolStack struct {
		index int
		st    *stack
		prot  []construct.Protected
		diags diag.List
	}
	var pools []poolStack
	seen := map[string]string{}
	for i, p := range c.NodePools {
		path := fmt.Sprintf("nodePools[%d]", i)
		camel := names.LogicalName(p.Name)
		if camel == "" {
			pools = append(pools, poolStack{index: -1, diags: diag.List{diag.Fatalf("node pool name %q has no letters or digits", p.Name).At(path + ".name")}})
			continue
		}
		if other, dup := seen[camel]; dup {
			pools = append(pools, poolStack{index: -1, diags: diag.List{diag.Fatalf("node pools %q and %q give the same CloudFormation name %s", other, p.Name, camel).
				At(path + ".name").WithHint("rename one of them")}})
			continue
		}
		seen[camel] = p.Name
		pools = append(pools, poolStack{index: i})
	}
	parallel.For(len(pools), func(j int) {
		ps := &pools[j]
		if ps.index < 0 {
			return
		}
		p := c.NodePools[ps.index]
		path := fmt.Sprintf("nodePools[%d]", ps.index)
		sn, d := pickSubnets(subnets, p.Subnets, path+".subnets")
		ps.diags = d
		st := newStack(names.NodePoolStack(p.Name), fmt.Sprintf("kube-aws %s: node pool %s", c.ClusterName, p.Name))
		prot, err := machineStack(st, c, machines{
			role: construct.Worker, pool: p.Name, name: names.NodePoolStack(p.Name),
			instanceType: p.InstanceType, min: p.MinSize, max: p.MaxSize, desired: p.DesiredCapacity,
			subnets: sn, spot: p.Spot, sgOutput: names.OutputWorkerSecurityGroup, asgTags: poolTags(c, p),
		})
		if err != nil {
			ps.diags = append(ps.diags, diag.Fatalf("node pool %s stack: %v", p.Name, err).At(path+".name"))
			return
		}
		ps.st, ps.prot = st, prot
	})
	for _, ps := range pools {
		diags = append(diags, ps.diags...)
		if ps.st != nil {
			set.Protected = append(set.Protected, ps.prot...)
			set.Stacks = append(set.Stacks, ps.st.done())
		}
	}

	// Private subnets without NAT gateways are core/config's warning, with
	// the file's line: saying it here too printed it twice.
	for i := range set.Stacks {
		set.Stacks[i].Tags = names.StackTags(c.ClusterName, set.Stacks[i].Name)
	}
	return set, diags
}

// controlPlane builds the controllers' stack: their launch template and auto
// scaling group, the load balancer in front of the API servers on 443 (TCP,
// so TLS goes through to the API server), and a Route 53 alias for
// apiEndpoint.dnsName when a zone is given.
func controlPlane(c *config.Cluster, v Values, subnets []config.Subnet) (*stack, []construct.Protected, diag.List) {
	var diags diag.List
	s := newStack(names.StackControlPlane, fmt.Sprintf("kube-aws %s: control plane", c.ClusterName))
	sn, d := pickSubnets(subnets, c.Controller.Subnets, "controller.subnets")
	diags = append(diags, d...)

	// The load balancer goes in one subnet per zone (a load balancer takes
	// no more), public unless the endpoint is private.
	var lbSubnets []config.Subnet
	zones := map[string]bool{}
	for _, x := range subnets {
		if x.Private == c.APIEndpoint.Private && !zones[x.AvailabilityZone] {
			zones[x.AvailabilityZone] = true
			lbSubnets = append(lbSubnets, x)
		}
	}
	if len(lbSubnets) == 0 {
		kind := "public"
		if c.APIEndpoint.Private {
			kind = "private"
		}
		diags = append(diags, diag.Fatalf("the API load balancer needs a %s subnet and there is none", kind).At("apiEndpoint.private"))
	}
	s.wired(paramVpcID, "AWS::EC2::VPC::Id", names.StackNetwork, names.OutputVpcID)
	scheme := "internet-facing"
	if c.APIEndpoint.Private {
		scheme = "internal"
	}
	lbTags := tagList(c.ClusterName, c.ClusterName+"-api")
	m := machines{
		role: construct.Controller, name: "controller", instanceType: c.Controller.InstanceType,
		// Room for one more: a roll adds the new controller before the old
		// one goes.
		rootVolume: c.Controller.RootVolumeSize, min: c.Controller.Count, max: c.Controller.Count + 1, desired: c.Controller.Count,
		subnets: sn, sgOutput: names.OutputControllerSecurityGroup,
	}
	zoneAttr := "CanonicalHostedZoneID"
	switch v.APILoadBalancer {
	case "", LoadBalancerNetwork:
		s.resource(names.APILoadBalancer, &elasticloadbalancingv2.LoadBalancer{
			Type:    "network",
			Scheme:  scheme,
			Subnets: subnetParams(s, lbSubnets),
			LoadBalancerAttributes: []elasticloadbalancingv2.LoadBalancer_LoadBalancerAttribute{
				{Key: "load_balancing.cross_zone.enabled", Value: "true"},
			},
			Tags: lbTags,
		})
		s.resource(names.APITargetGroup, &elasticloadbalancingv2.TargetGroup{
			Port:       443,
			Protocol:   "TCP",
			TargetType: "instance",
			VpcId:      cfn.Ref(paramVpcID),
			// The API server's own readiness, over TLS (a health check
			// does not verify the certificate): a controller is in service
			// when its API server answers /readyz, which is what a roll of
			// the controllers waits for (apiHealth says how often).
			HealthCheckProtocol:        "HTTPS",
			HealthCheckPath:            "/readyz",
			HealthCheckIntervalSeconds: apiHealth.interval,
			HealthCheckTimeoutSeconds:  apiHealth.timeout,
			HealthyThresholdCount:      apiHealth.healthy,
			UnhealthyThresholdCount:    apiHealth.unhealthy,
			TargetGroupAttributes:      apiTargetGroupAttributes(c.APIEndpoint.Private),
			Tags:                       lbTags,
		})
		s.resource(names.APIListener, &elasticloadbalancingv2.Listener{
			LoadBalancerArn: cfn.Ref(names.APILoadBalancer),
			Port:            443,
			Protocol:        "TCP",
			DefaultActions:  []elasticloadbalancingv2.Listener_Action{{Type: "forward", TargetGroupArn: cfn.Ref(names.APITargetGroup)}},
		})
		m.targetGroups = []string{cfn.Ref(names.APITargetGroup)}
	case LoadBalancerClassic:
		// A classic load balancer in a VPC needs a security group of its
		// own that admits clients; the controllers' group admits 443.
		s.resource(names.APILoadBalancerSecurityGroup, &ec2.SecurityGroup{
			GroupDescription: fmt.Sprintf("kube-aws %s API load balancer", c.ClusterName),
			VpcId:            cfn.Ref(paramVpcID),
			SecurityGroupIngress: []ec2.SecurityGroup_Ingress{{
				IpProtocol: "tcp", FromPort: 443, ToPort: 443, CidrIp: "0.0.0.0/0", Description: "Kubernetes API",
			}},
			Tags: lbTags,
		})
		s.resource(names.APILoadBalancer, &elasticloadbalancing.LoadBalancer{
			Scheme:         scheme,
			Subnets:        subnetParams(s, lbSubnets),
			SecurityGroups: []string{cfn.GetAtt(names.APILoadBalancerSecurityGroup, "GroupId")},
			CrossZone:      true,
			Listeners: []elasticloadbalancing.LoadBalancer_Listeners{{
				LoadBalancerPort: "443", InstancePort: "443", Protocol: "TCP", InstanceProtocol: "TCP",
			}},
			HealthCheck: &elasticloadbalancing.LoadBalancer_HealthCheck{
				Target: "HTTPS:443/readyz", HealthyThreshold: strconv.Itoa(apiHealth.healthy), UnhealthyThreshold: strconv.Itoa(apiHealth.unhealthy),
				Interval: strconv.Itoa(apiHealth.interval), Timeout: strconv.Itoa(apiHealth.timeout),
			},
			Tags: lbTags,
		})
		m.loadBalancers = []string{cfn.Ref(names.APILoadBalancer)}
		zoneAttr = "CanonicalHostedZoneNameID"
	default:
		diags = append(diags, diag.Fatalf("apiLoadBalancer %q: want network or classic", v.APILoadBalancer).
			At("plugins.cloudformation.values.apiLoadBalancer"))
	}

	// The API server certificate names the load balancer. The add-ons plan
	// finds the helm plugin's release list by the key deploy fills in ("" when
	// the render has none).
	s.param(names.ParamChartsIndexKey, "String", "S3 key of the Helm release list charts/releases.json, <prefix>/assets/<sha256>; empty without the helm plugin (filled by deploy)", "")
	m.facts = []bootstrap.Fact{
		{Name: names.FactAPILoadBalancerDNS, Parameter: names.APILoadBalancer + ".DNSName"},
		{Name: names.FactAddonsKey, Parameter: names.ParamChartsIndexKey},
	}
	prot, err := machineStack(s, c, m)
	if err != nil {
		diags = append(diags, diag.Fatalf("control-plane stack: %v", err))
	}

	endpoint := cfn.Join("", "https://", cfn.GetAtt(names.APILoadBalancer, "DNSName"))
	if c.APIEndpoint.DNSName != "" {
		endpoint = "https://" + c.APIEndpoint.DNSName
	}
	if c.APIEndpoint.HostedZoneID != "" {
		if c.APIEndpoint.DNSName == "" {
			diags = append(diags, diag.Fatalf("apiEndpoint.hostedZoneId is set but apiEndpoint.dnsName is not").
				At("apiEndpoint.dnsName").WithHint("name the record to create in the zone"))
		} else {
			s.resource(names.APIEndpointRecord, &route53.RecordSet{
				HostedZoneId: c.APIEndpoint.HostedZoneID,
				Name:         c.APIEndpoint.DNSName,
				Type:         "A",
				AliasTarget: &route53.RecordSet_AliasTarget{
					DNSName:      cfn.GetAtt(names.APILoadBalancer, "DNSName"),
					HostedZoneId: cfn.GetAtt(names.APILoadBalancer, zoneAttr),
				},
			})
		}
	}
	s.output(names.OutputAPIEndpoint, endpoint, "URL of the Kubernetes API")
	s.output(names.OutputLoadBalancerDNS, cfn.GetAtt(names.APILoadBalancer, "DNSName"), "DNS name of the API load balancer")
	return s, prot, diags
}

// apiTargetGroupAttributes turns client address preservation off behind an
// internal load balancer. With it on (the default for instance targets), a
// connection a controller makes to the API endpoint that the load balancer
// sends back to that same controller arrives with the controller's own
// address as its source, and is never answered: AWS's internal network
// load balancers do not route a target's traffic back to itself. The
// controllers' kube-proxy and flanneld reach the API server by the
// endpoint's name, so one in N of their connections would time out, and a
// lone controller's would all. The price is that the API server sees the
// load balancer's addresses instead of its clients' for traffic through it.
// An internet-facing load balancer keeps them: a controller's connection
// reaches it from a public address (a NAT gateway's), and AWS documents the
// failure for internal load balancers only.
func apiTargetGroupAttributes(private bool) []elasticloadbalancingv2.TargetGroup_TargetGroupAttribute {
	if !private {
		return nil
	}
	return []elasticloadbalancingv2.TargetGroup_TargetGroupAttribute{{Key: "preserve_client_ip.enabled", Value: "false"}}
}

// apiHealth is the API load balancer's health check of each controller's
// /readyz: a controller is in service after 2 answers 5 s apart, about 10 s
// after its API server is ready (3 answers 10 s apart took 30 s, which every
// controller's replacement in a roll waited for), and out of service after
// 2 failures, about 10 s after its API server stopped answering. 5 s is the
// shortest interval both kinds of load balancer take; the timeout is below
// it, as both require.
var apiHealth = struct{ interval, timeout, healthy, unhealthy int }{interval: 5, timeout: 4, healthy: 2, unhealthy: 2}
