package config

// Defaults. They live here, and only here, so that every stage and every
// plugin sees the same cluster: ApplyDefaults runs once, right after Load.
const (
	DefaultKubernetesVersion = "1.34.4"
	DefaultVPCCIDR           = "10.0.0.0/16"
	DefaultInstanceType      = "t3.medium"
	DefaultControllerCount   = 2
	DefaultEtcdCount         = 3
	DefaultRootVolumeSize    = 30 // GiB
	DefaultNodePoolMinSize   = 1
	DefaultNodePoolMaxSize   = 3
	DefaultDrainTimeout      = "5m"
)

// ApplyDefaults fills every value cluster.yaml left out. A value that was
// written in the file is kept even when it is zero (minSize: 0 is a pool that
// may scale to nothing); for a Cluster built in Go, zero means "not set".
// Region has no default: a cluster in the wrong region is worse than an error.
// Subnets of a new VPC are not filled in here; ComputeSubnets derives them.
func ApplyDefaults(c *Cluster) {
	if c == nil {
		return
	}
	if c.KubernetesVersion == "" {
		c.KubernetesVersion = DefaultKubernetesVersion
	}
	kubernetesDefaults(&c.Kubernetes)
	if c.Drain.Timeout == "" {
		c.Drain.Timeout = DefaultDrainTimeout
	}
	if c.Network.VPCID == "" && c.Network.VPCCIDR == "" {
		c.Network.VPCCIDR = DefaultVPCCIDR
	}
	for i := range c.Network.Subnets {
		s := &c.Network.Subnets[i]
		if s.Name == "" && s.AvailabilityZone != "" {
			s.Name = subnetName(s.Private, s.AvailabilityZone)
		}
	}
	machineDefaults(c, &c.Controller, "controller", DefaultControllerCount)
	machineDefaults(c, &c.Etcd, "etcd", DefaultEtcdCount)
	for i := range c.NodePools {
		np := &c.NodePools[i]
		path := IndexPath("nodePools", i)
		if np.InstanceType == "" {
			np.InstanceType = DefaultInstanceType
		}
		minSet := c.isSet(path+".minSize", np.MinSize == 0)
		desiredSet := c.isSet(path+".desiredCapacity", np.DesiredCapacity == 0)
		maxSet := c.isSet(path+".maxSize", np.MaxSize == 0)
		if !minSet {
			np.MinSize = DefaultNodePoolMinSize
			if maxSet && np.MaxSize < np.MinSize {
				np.MinSize = np.MaxSize
			}
			if desiredSet && np.DesiredCapacity < np.MinSize {
				np.MinSize = np.DesiredCapacity
			}
		}
		if !desiredSet {
			np.DesiredCapacity = np.MinSize
		}
		if !maxSet {
			np.MaxSize = max(DefaultNodePoolMaxSize, np.MinSize, np.DesiredCapacity)
		}
		for j := range np.Taints {
			if np.Taints[j].Effect == "" {
				np.Taints[j].Effect = "NoSchedule"
			}
		}
	}
}

func machineDefaults(c *Cluster, m *MachineSet, path string, count int) {
	if !c.isSet(path+".count", m.Count == 0) {
		m.Count = count
	}
	if m.InstanceType == "" {
		m.InstanceType = DefaultInstanceType
	}
	if !c.isSet(path+".rootVolumeSize", m.RootVolumeSize == 0) {
		m.RootVolumeSize = DefaultRootVolumeSize
	}
}

func subnetName(private bool, az string) string {
	if private {
		return "private-" + az
	}
	return "public-" + az
}
