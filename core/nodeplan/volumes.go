package nodeplan

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// VolumesPlan (VolumesPath) lists the EBS volumes the `volumes` step
// attaches to this instance, formats (only when blank) and mounts. A
// volume that outlives its instance is what gives a member (etcd) a stable
// identity: the replacement instance attaches the same volume, and Facts
// turns the volume's tags into facts that later steps (dns, certificates)
// and units (FactsEnvPath) use.
type VolumesPlan struct {
	Volumes []Volume `json:"volumes"`
}

// Volume is one EBS volume.
type Volume struct {
	// Name says what it is in messages ("etcd-data").
	Name string `json:"name"`
	// VolumeID names one volume ("vol-0123..."). Give it or Tags.
	VolumeID string `json:"volumeID,omitempty"`
	// Tags (every one must match) find candidates in the instance's
	// availability zone: one already attached to this instance is used,
	// else the first available one by volume id is attached; a volume
	// another instance attached meanwhile is skipped.
	Tags map[string]string `json:"tags,omitempty"`
	// Device is the device name given to AttachVolume ("/dev/xvdf"). On
	// Nitro instances the volume appears as an NVMe device whose serial is
	// the volume id; the step finds it either way.
	Device string `json:"device"`
	// Filesystem is made on the device only when it holds no filesystem
	// (or other signature) at all: "ext4" or "xfs".
	Filesystem string `json:"filesystem"`
	// MountPoint is where it is mounted; an /etc/fstab line (by UUID,
	// nofail) keeps it mounted across reboots.
	MountPoint string `json:"mountPoint"`
	// MountOptions are mount(8) options; "defaults" when empty.
	MountOptions string `json:"mountOptions,omitempty"`
	// Facts maps a fact name to a tag key of the attached volume: its
	// value becomes that fact ({"member": "kube-aws:etcd-member"} makes
	// {member} "etcd0" on the instance that attached etcd0's volume).
	Facts map[string]string `json:"facts,omitempty"`
}

var deviceName = regexp.MustCompile(`^/dev/(xvd[f-z]|sd[f-z])$`)

// Validate implements Plan.
func (p *VolumesPlan) Validate() error {
	var c checker
	mounts := map[string]int{}
	devices := map[string]int{}
	facts := map[string]int{}
	for i, v := range p.Volumes {
		field := fmt.Sprintf("volumes[%d]", i)
		if v.Name == "" {
			c.add(field+".name", "missing")
		}
		switch {
		case v.VolumeID == "" && len(v.Tags) == 0:
			c.add(field, "give volumeID or tags to find the volume by")
		case v.VolumeID != "" && len(v.Tags) > 0:
			c.add(field, "give volumeID or tags, not both")
		case v.VolumeID != "" && !strings.HasPrefix(v.VolumeID, "vol-"):
			c.add(field+".volumeID", "%q is not a volume id (vol-...)", v.VolumeID)
		}
		for k := range v.Tags {
			if k == "" {
				c.add(field+".tags", "a tag key is empty")
			}
		}
		if !deviceName.MatchString(v.Device) {
			c.add(field+".device", "%q: want /dev/xvd[f-z] or /dev/sd[f-z], EC2's names for data volumes", v.Device)
		}
		if j, dup := devices[v.Device]; dup && v.Device != "" {
			c.add(field+".device", "%s is used by volumes[%d] too", v.Device, j)
		}
		devices[v.Device] = i
		if v.Filesystem != "ext4" && v.Filesystem != "xfs" {
			c.add(field+".filesystem", "%q: want ext4 or xfs", v.Filesystem)
		}
		c.absPath(field+".mountPoint", v.MountPoint)
		if v.MountPoint == "/" {
			c.add(field+".mountPoint", "not the root filesystem")
		}
		if j, dup := mounts[v.MountPoint]; dup && v.MountPoint != "" {
			c.add(field+".mountPoint", "%s is used by volumes[%d] too", v.MountPoint, j)
		}
		mounts[v.MountPoint] = i
		if strings.ContainsAny(v.MountOptions, " \t\n") {
			c.add(field+".mountOptions", "%q: want comma-separated options without spaces", v.MountOptions)
		}
		names := make([]string, 0, len(v.Facts))
		for n := range v.Facts {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			switch {
			case !ValidFactName(n):
				c.add(field+".facts", "%q is not a fact name (letters and digits, starting with a letter)", n)
			case isInstanceFact(n):
				c.add(field+".facts", "%q is an instance fact; name a new one", n)
			case v.Facts[n] == "":
				c.add(field+".facts."+n, "missing: want the tag key whose value becomes the fact")
			}
			if j, dup := facts[n]; dup {
				c.add(field+".facts", "fact %q comes from volumes[%d] too", n, j)
			}
			facts[n] = i
		}
	}
	return c.err()
}

func isInstanceFact(n string) bool {
	for _, f := range InstanceFacts {
		if f == n {
			return true
		}
	}
	return false
}
