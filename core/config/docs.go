package config

import "sync"

// fieldDocs describes every cluster.yaml key, by generic path: "[]" stands
// for any list element and "*" for any map key. The JSON Schema
// (core/config/schema) takes its descriptions from here, and a test keeps it
// complete, so editor hints and the types never drift apart.
// Built on first use: a map literal this size costs every plugin process
// thousands of allocations at start-up otherwise.
var fieldDocs = sync.OnceValue(func() map[string]string {
	return map[string]string{
		"clusterName":                              "Name of the cluster: 1-63 lower-case letters, digits and '-', starting with a letter. Prefixes every CloudFormation stack (<clusterName>-network, <clusterName>-nodepool-<pool>) and is a DNS label.",
		"region":                                   "AWS region the cluster runs in, e.g. us-east-1. No default.",
		"availabilityZones":                        "Availability zones of the region to spread machines over, e.g. [us-east-1a, us-east-1b]. Two or more survive the loss of one.",
		"availabilityZones[]":                      "An availability zone of region.",
		"keyName":                                  "EC2 key pair installed on every machine for SSH; leave out for none.",
		"amiId":                                    "AMI every machine boots, e.g. ami-0123456789abcdef0; leave out for the region's default image.",
		"kubernetesVersion":                        "Kubernetes version, MAJOR.MINOR.PATCH without a leading v: one kube-aws pins (1.33.13 or 1.34.4). Default " + DefaultKubernetesVersion + ". A deployed cluster moves one minor version up at a time, never a minor down (any patch within a minor is allowed).",
		"kubernetes":                               "What every component of the cluster agrees on: the pod and service networks and the services' DNS domain.",
		"kubernetes.podCIDR":                       "IPv4 block pods get their addresses from, /23 or larger (each node takes a /24). Default " + DefaultPodCIDR + ". Must not overlap the VPC or serviceCIDR.",
		"kubernetes.serviceCIDR":                   "IPv4 block of service cluster IPs, /12 to /28: the first address is the API's service, the tenth the cluster DNS. Default " + DefaultServiceCIDR + ". Must not overlap the VPC or podCIDR.",
		"kubernetes.clusterDomain":                 "DNS domain of services (<service>.<namespace>.svc.<clusterDomain>). Default " + DefaultClusterDomain + ".",
		"artifacts":                                "Where machines get the binaries and images they install: upstream downloads (default) or an air-gapped mirror folder.",
		"artifacts.mirror":                         "Air-gapped mode: a folder, relative to cluster.yaml, laid out <name>/<version>/linux-<arch>/<file> (docs/artifacts.md). Every artifact is taken from it, uploaded to the cluster's bucket, and machines fetch it there; a missing file is an error at initialise.",
		"network":                                  "The VPC: a new one (vpcCIDR, optional subnets with cidr) or an existing one (vpcId and subnets with id).",
		"network.vpcId":                            "Id of an existing VPC to use, e.g. vpc-0123456789abcdef0. Requires subnets with ids.",
		"network.vpcCIDR":                          "IPv4 block of a new VPC, /16 to /28. Default " + DefaultVPCCIDR + ". With no subnets listed, one public and one private subnet per zone are carved from it.",
		"network.subnets":                          "Subnets of the VPC. Leave out for a new VPC to have them computed (public-<zone>, private-<zone>); required for an existing VPC.",
		"network.subnets[]":                        "One subnet.",
		"network.subnets[].name":                   "Name node pools and machine sets refer to it by. Default <public|private>-<availabilityZone>.",
		"network.subnets[].availabilityZone":       "Zone of the subnet; one of availabilityZones.",
		"network.subnets[].cidr":                   "IPv4 block of a new subnet, inside vpcCIDR, not overlapping another subnet.",
		"network.subnets[].id":                     "Id of an existing subnet (with network.vpcId), e.g. subnet-0123456789abcdef0.",
		"network.subnets[].private":                "A private subnet has no route from the internet; machines reach out through NAT gateways.",
		"network.natGateways":                      "Create one NAT gateway per zone so machines in private subnets reach the internet (new VPC only).",
		"network.internetGatewayId":                "Internet gateway of an existing VPC, e.g. igw-0123456789abcdef0.",
		"controller":                               "The control-plane machines (API server, controller manager, scheduler).",
		"etcd":                                     "The etcd members. Use an odd count.",
		"controller.count":                         "Number of controllers. Default 2.",
		"etcd.count":                               "Number of etcd members. Default 3.",
		"controller.instanceType":                  "EC2 instance type. Default " + DefaultInstanceType + ".",
		"etcd.instanceType":                        "EC2 instance type. Default " + DefaultInstanceType + ".",
		"controller.rootVolumeSize":                "Root volume size in GiB, 8 to 16384. Default 30.",
		"etcd.rootVolumeSize":                      "Root volume size in GiB, 8 to 16384. Default 30.",
		"controller.subnets":                       "Names of subnets to place the machines in. Default: every private subnet (every public one when there is none).",
		"etcd.subnets":                             "Names of subnets to place the machines in. Default: every private subnet (every public one when there is none).",
		"controller.subnets[]":                     "A subnet name from network.subnets (or a computed public-<zone>/private-<zone>).",
		"etcd.subnets[]":                           "A subnet name from network.subnets (or a computed public-<zone>/private-<zone>).",
		"apiEndpoint":                              "How clients reach the Kubernetes API server: a load balancer, optionally with a DNS record.",
		"apiEndpoint.dnsName":                      "DNS name clients use, e.g. k8s.example.com; the API server certificate covers it. Leave out for the load balancer's own name.",
		"apiEndpoint.hostedZoneId":                 "Route 53 hosted zone to create a record for dnsName in, e.g. Z0123456789ABCDEFGHIJ. Requires dnsName.",
		"apiEndpoint.private":                      "Put the load balancer in the private subnets (reachable only from inside the VPC).",
		"nodePools":                                "Groups of worker nodes; each is an auto scaling group with its own CloudFormation stack. At least one.",
		"nodePools[]":                              "One node pool.",
		"nodePools[].name":                         "Unique name: 1-63 lower-case letters, digits and '-', starting with a letter. Used in stack names, logical IDs and node labels.",
		"nodePools[].instanceType":                 "EC2 instance type. Default " + DefaultInstanceType + ".",
		"nodePools[].minSize":                      "Minimum number of nodes. Default 1 (0 lets the pool scale to nothing).",
		"nodePools[].maxSize":                      "Maximum number of nodes. Default max(3, minSize, desiredCapacity).",
		"nodePools[].desiredCapacity":              "Number of nodes to start with; minSize <= desiredCapacity <= maxSize. Default minSize.",
		"nodePools[].subnets":                      "Names of subnets for the pool's nodes. Default: every private subnet (every public one when there is none).",
		"nodePools[].subnets[]":                    "A subnet name from network.subnets (or a computed public-<zone>/private-<zone>).",
		"nodePools[].spot":                         "Run the pool on spot instances.",
		"nodePools[].spot.maxPrice":                "Highest price per instance hour in USD, as a quoted string (\"0.05\"); leave out for up to the on-demand price.",
		"nodePools[].labels":                       "Kubernetes labels the nodes register with.",
		"nodePools[].labels.*":                     "Label value: up to 63 letters, digits, '-', '_', '.'.",
		"nodePools[].taints":                       "Kubernetes taints the nodes register with.",
		"nodePools[].taints[]":                     "One taint.",
		"nodePools[].taints[].key":                 "Taint key, [prefix/]name like a label key.",
		"nodePools[].taints[].value":               "Taint value (optional).",
		"nodePools[].taints[].effect":              "NoSchedule, PreferNoSchedule or NoExecute. Default NoSchedule.",
		"nodePools[].plugins":                      "Per-pool plugin settings: values (and configFiles) merged over the cluster-level values with a JSON merge patch; enabled: false turns a plugin off for this pool.",
		"drain":                                    "How every node is drained before its machine goes, whoever ends it (a roll of kube-aws up, a scale-in, a spot interruption): cordoned, then its pods evicted through the Eviction API, PodDisruptionBudgets honoured.",
		"drain.timeout":                            "How long a node's pods may take to be evicted, a duration such as 5m. Default " + DefaultDrainTimeout + ". When it expires a roll stops at that node, naming the pod and the budget that blocked it, and terminates nothing.",
		"drain.force":                              "Delete the pods still protected by a PodDisruptionBudget when drain.timeout expires, instead of stopping the roll. Default false.",
		"nodePools[].rollingUpdate":                "How kube-aws replaces the pool's out-of-date machines (a new version, a plugin's change): in waves, each node drained before its machine goes.",
		"nodePools[].rollingUpdate.maxSurge":       "New machines added above desiredCapacity at once, where maxSize leaves room; each is Ready before an old one is drained. Default 1.",
		"nodePools[].rollingUpdate.maxUnavailable": "Old machines drained and terminated at once before their replacements are Ready. Default 0 (1 when maxSize leaves no room to surge). Not both 0; at most maxSize.",
		"nodePools[].plugins.*":                    "Settings of one plugin for this pool.",
		"s3URI":                                    "Where templates and assets are uploaded: s3://bucket[/prefix]. The bucket must exist.",
		"kmsKeyArn":                                "KMS key (or alias) ARN in the cluster's region that encrypts sensitive values for upload; the nodes decrypt them. Required when any value is sensitive.",
		"tags":                                     "Tags added to every stack and the resources that support tags.",
		"tags.*":                                   "Tag value, up to 255 characters. Keys may not start with aws:.",
		"plugins":                                  "Plugin settings by plugin name. Built-in plugins are on unless enabled: false; contrib and user plugins are off until enabled: true.",
		"plugins.*":                                "Settings of one plugin.",
		"[]plugin.enabled":                         "Turn the plugin on or off. Leave out for the plugin's default.",
		"[]plugin.values":                          "The plugin's values, checked against its schema. Any value may be {valueFrom: {env: NAME}} or {valueFrom: {file: PATH}}, which makes it sensitive.",
		"[]plugin.configFiles":                     "YAML files, relative to cluster.yaml, merged in order under values.",
		"[]plugin.configFiles[]":                   "A YAML file relative to cluster.yaml.",
		"[]plugin.source":                          "Take the plugin from an OCI registry: oci://REGISTRY/REPOSITORY:TAG or @sha256:DIGEST. Pinned by digest in plugins.lock; replaces a shipped plugin of that name; on unless enabled: false. Cluster level only.",
		"[]plugin.verify":                          "Require a cosign signature on the plugin's artifact, checked before it is installed.",
		"[]plugin.verify.key":                      "The PEM public key (cosign.pub), relative to cluster.yaml, that a `cosign sign --key` signature must verify with.",
		"pluginOrder":                              "Plugin order, replacing the order file shipped with kube-aws; unlisted plugins run last, alphabetically. Decides merge and install order, never a conflict.",
		"pluginOrder[]":                            "A plugin name.",
		"capabilities":                             "Preferred provider of each capability when several enabled plugins provide it, e.g. cni: calico.",
		"capabilities.*":                           "Name of the preferred plugin.",
	}
})

// FieldDoc describes a cluster.yaml key given by its generic path
// (nodePools[].minSize, plugins.*.values). The fields of a plugin's settings
// are documented once, under "[]plugin.<field>", for both plugins.* and
// nodePools[].plugins.*.
func FieldDoc(path string) string {
	if d, ok := fieldDocs()[path]; ok {
		return d
	}
	for _, prefix := range []string{"plugins.*.", "nodePools[].plugins.*."} {
		if len(path) > len(prefix) && path[:len(prefix)] == prefix {
			return fieldDocs()["[]plugin."+path[len(prefix):]]
		}
	}
	return ""
}
