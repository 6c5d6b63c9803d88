// Package members is the etcd plugin's logic as plain functions of the
// cluster and the plugin's values: the members' stable identities (one data
// volume and one DNS name per member, owned by the etcd stack), the auto
// scaling group that keeps a machine for each, the systemd units that run
// etcd and its periodic snapshot, and the plans that tell kube-aws-node
// what to attach, which record to upsert and what healthy means.
//
// A member is its volume: the instance that attaches etcd<i>'s volume
// becomes etcd<i> (the volumes step turns the volume's tag into the
// {etcdMember} fact), upserts etcd<i>.<cluster>.internal to its address and
// issues its certificates for that name. A replaced instance therefore
// rejoins as the same member with the same data, and nothing else in the
// cluster (the API server's --etcd-servers, the peers' --initial-cluster)
// changes.
package members

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
)

// Plugin is the plugin's name.
const Plugin = "etcd"

// Values are the etcd plugin's values in cluster.yaml.
type Values struct {
	// DataVolumeSize is each member's data volume in GiB.
	DataVolumeSize int `json:"dataVolumeSize,omitempty"`
	// SnapshotInterval is how often the leader stores a snapshot in S3, a
	// Go duration ("1h"); "0" turns snapshots off.
	SnapshotInterval string `json:"snapshotInterval,omitempty"`
}

// Defaults.
const (
	DefaultDataVolumeSize   = 20
	DefaultSnapshotInterval = "1h"
)

// ValuesSchema is the JSON Schema of Values.
const ValuesSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "type": "object",
  "additionalProperties": false,
  "properties": {
    "dataVolumeSize": {"type": "integer", "minimum": 1, "maximum": 16384, "description": "each member's data volume (gp3, encrypted) in GiB; default 20"},
    "snapshotInterval": {"type": "string", "description": "how often the leader stores a snapshot under the cluster's s3URI (etcd/snapshots/), a duration such as 30m or 1h (at least 5m); 0 turns snapshots off; default 1h"}
  }
}`

// Paths on the members.
const (
	// BinDir holds etcd, etcdctl and etcdutl.
	BinDir = "/usr/local/bin"
	// DataDir is etcd's --data-dir: a folder on the data volume, not its
	// root, whose lost+found etcd would take for a stranger's file.
	DataDir = names.EtcdDataDir + "/data"
	// Unit runs the member.
	Unit = "etcd.service"
	// SnapshotUnit runs kube-aws-node etcd-snapshot; SnapshotTimer starts it.
	SnapshotUnit  = "kube-aws-etcd-snapshot.service"
	SnapshotTimer = "kube-aws-etcd-snapshot.timer"
	// DataDevice is the data volume's device name.
	DataDevice = "/dev/xvdf"
	// DataVolumeTag is the names.TagRole of a cluster's etcd data volumes.
	DataVolumeTag = "etcd-data"
)

// The etcd release the members install (docs/upstream-pins.md).
const (
	Version = "v3.6.5"
	release = "https://github.com/etcd-io/etcd/releases/download/" + Version + "/etcd-" + Version + "-linux-"
)

// Artifact is the etcd release every member installs: etcd, etcdctl and
// etcdutl from one tarball per architecture, pinned by its sha256.
func Artifact() construct.Artifact {
	files := []string{"etcd", "etcdctl", "etcdutl"}
	a := construct.Artifact{Target: construct.Target{Role: construct.Etcd}, Name: "etcd", Version: Version,
		Kind: construct.Binary, Sources: map[string]construct.ArtifactSource{}}
	for _, f := range files {
		a.Files = append(a.Files, construct.ArtifactFile{Name: f, Path: BinDir + "/" + f})
	}
	for arch, sum := range map[string]string{
		"amd64": "66bad39ed920f6fc15fd74adcb8bfd38ba9a6412f8c7852d09eb11670e88cac3",
		"arm64": "7010161787077b07de29b15b76825ceacbbcedcb77fe2e6832f509be102cab6b",
	} {
		src := construct.ArtifactSource{URL: release + arch + ".tar.gz", SHA256: sum, Members: map[string]string{}}
		for _, f := range files {
			src.Members[f] = "etcd-" + Version + "-linux-" + arch + "/" + f
		}
		a.Sources[arch] = src
	}
	return a
}

// Logical IDs in the etcd stack.
const (
	// PrivateZone is the private hosted zone of the members' names.
	PrivateZone = names.EtcdZoneResource
	// RecordsPolicy lets the etcd role change records in PrivateZone only.
	RecordsPolicy = names.EtcdRecordsPolicyResource
	paramVpcID    = "VpcId"
)

// paramRoleName is the etcd stack's parameter with the etcd role's name,
// from the iam stack's output of the same name.
var paramRoleName = names.RoleNameOutput(names.RoleEtcd, "")

// DataVolume is member i's data volume's logical ID (EtcdData0).
func DataVolume(i int) string { return names.EtcdDataVolume(i) }

// MemberGroup is member i's auto scaling group's logical ID (EtcdMember0Group).
func MemberGroup(i int) string { return names.EtcdMemberGroup(i) }

// Member is one member: its name, and the subnet its volume's zone and
// its group are in.
type Member struct {
	Name   string
	Subnet config.Subnet
}

// Members places the cluster's members round-robin over the etcd subnets,
// so that members spread over zones when the subnets do.
func Members(c *config.Cluster, subnets []config.Subnet) []Member {
	out := make([]Member, c.Etcd.Count)
	for i := range out {
		out[i] = Member{Name: names.EtcdMember(i), Subnet: subnets[i%len(subnets)]}
	}
	return out
}

// Check returns the warnings about the cluster's etcd that a plugin can
// give better than cluster.yaml's own checks (an even count is theirs).
func Check(c *config.Cluster, v Values) diag.List {
	var d diag.List
	if c.Etcd.Count == 1 {
		d = append(d, diag.Warningf("etcd.count is 1: losing that one member loses the cluster's quorum, and the API server stops until it is back").
			At("etcd.count").WithHint("run 3 members (or 5) for a cluster that survives losing one (two)"))
	}
	if _, err := snapshotSeconds(v.SnapshotInterval); err != nil {
		d = append(d, diag.Fatalf("snapshotInterval %q: %v", v.SnapshotInterval, err).
			At("plugins.etcd.values.snapshotInterval").WithHint("give a duration such as 30m or 1h (at least 5m), or 0 for no snapshots"))
	}
	return d
}

// snapshotSeconds parses the snapshot interval; 0 means none.
func snapshotSeconds(s string) (int, error) {
	if s == "" {
		s = DefaultSnapshotInterval
	}
	if s == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errors.New("not a duration such as 30m or 1h")
	}
	if d < 5*time.Minute {
		return 0, fmt.Errorf("shorter than 5m: a snapshot of a large database takes longer")
	}
	return int(d / time.Second), nil
}

// InitialCluster is etcd's --initial-cluster: every member by its peer URL.
func InitialCluster(cluster string, count int) string {
	parts := make([]string, count)
	for i := range parts {
		m := names.EtcdMember(i)
		parts[i] = m + "=" + names.EtcdPeerURL(cluster, m)
	}
	return strings.Join(parts, ",")
}

// UnitContent is etcd.service: etcd from the installed binary, its name
// and URLs from the {etcdMember} fact (facts.env, which kube-aws-node
// writes before systemd starts the unit), TLS for clients and peers with
// client certificates required on both, data on the member's volume.
// --initial-cluster-state new only matters to a member whose data folder
// is empty: a replaced instance finds its data on the volume and rejoins.
func UnitContent(cluster string, count int) string {
	member := "${" + nodeplan.FactEnvName(names.FactEtcdMember) + "}"
	host := member + "." + names.EtcdZone(cluster)
	args := []string{
		"--name=" + member,
		"--data-dir=" + DataDir,
		"--listen-client-urls=https://0.0.0.0:" + strconv.Itoa(names.EtcdClientPort),
		"--advertise-client-urls=https://" + host + ":" + strconv.Itoa(names.EtcdClientPort),
		"--listen-peer-urls=https://0.0.0.0:" + strconv.Itoa(names.EtcdPeerPort),
		"--initial-advertise-peer-urls=https://" + host + ":" + strconv.Itoa(names.EtcdPeerPort),
		"--initial-cluster=" + InitialCluster(cluster, count),
		"--initial-cluster-token=" + cluster,
		"--initial-cluster-state=new",
		"--cert-file=" + names.PKIEtcdServerCert,
		"--key-file=" + names.PKIEtcdServerKey,
		"--trusted-ca-file=" + names.PKIEtcdCACert,
		"--client-cert-auth=true",
		"--peer-cert-file=" + names.PKIEtcdPeerCert,
		"--peer-key-file=" + names.PKIEtcdPeerKey,
		"--peer-trusted-ca-file=" + names.PKIEtcdCACert,
		"--peer-client-cert-auth=true",
		"--listen-metrics-urls=http://127.0.0.1:2381",
	}
	return `[Unit]
Description=etcd member (kube-aws)
Documentation=https://etcd.io/docs/v3.6/
Wants=network-online.target
After=network-online.target
RequiresMountsFor=` + names.EtcdDataDir + `

[Service]
Type=notify
EnvironmentFile=` + nodeplan.FactsEnvPath + `
ExecStart=` + BinDir + `/etcd \
  ` + strings.Join(args, ` \
  `) + `
Restart=always
RestartSec=5s
LimitNOFILE=65536
TimeoutStartSec=0

[Install]
WantedBy=multi-user.target
`
}

// Snapshot units: a timer on every member; kube-aws-node's etcd-snapshot
// stores a snapshot only on the leader, so one is taken per interval
// whichever members are up.
//
// The cluster's KMS key, which the snapshot is stored under (SSE-KMS), is
// given to the step in the unit itself: it is cluster.yaml's, the same on
// every member.
func snapshotUnits(seconds int, kmsKeyARN string) []construct.Unit {
	target := construct.Target{Role: construct.Etcd}
	return []construct.Unit{
		{Target: target, Name: SnapshotUnit, Content: `[Unit]
Description=etcd snapshot to S3 (kube-aws)
After=` + Unit + `
Requires=` + Unit + `

[Service]
Type=oneshot
Environment=` + nodeplan.EnvKMSKeyARN + `=` + kmsKeyARN + `
EnvironmentFile=` + nodeplan.SettingsEnvPath + `
ExecStart=` + nodeplan.BinaryPath + ` ` + nodeplan.StepEtcdSnapshot + `
`},
		{Target: target, Name: SnapshotTimer, Enable: true, Content: `[Unit]
Description=etcd snapshot to S3 every ` + strconv.Itoa(seconds) + `s (kube-aws)

[Timer]
OnActiveSec=` + strconv.Itoa(seconds) + `s
OnUnitActiveSec=` + strconv.Itoa(seconds) + `s
RandomizedDelaySec=60s

[Install]
WantedBy=timers.target
`},
	}
}

// Plans are the etcd role's volumes, dns and goal plans.
func Plans(cluster string) (*nodeplan.VolumesPlan, *nodeplan.DNSPlan, *nodeplan.GoalPlan) {
	vol := &nodeplan.VolumesPlan{Volumes: []nodeplan.Volume{{
		Name:         "etcd-data",
		Tags:         map[string]string{names.TagCluster: cluster, names.TagRole: DataVolumeTag},
		Device:       DataDevice,
		Filesystem:   "ext4",
		MountPoint:   names.EtcdDataDir,
		MountOptions: "noatime",
		Facts:        map[string]string{names.FactEtcdMember: names.TagEtcdMember, names.FactEtcdZoneID: names.TagEtcdZoneID},
	}}}
	member := "{" + names.FactEtcdMember + "}"
	dns := &nodeplan.DNSPlan{Records: []nodeplan.Record{{
		HostedZoneID: "{" + names.FactEtcdZoneID + "}",
		Name:         names.EtcdMemberHost(cluster, member),
	}}}
	goal := &nodeplan.GoalPlan{Etcd: &nodeplan.EtcdGoal{
		Endpoints: []string{"https://{" + nodeplan.FactPrivateIPv4 + "}:" + strconv.Itoa(names.EtcdClientPort)},
		CACert:    names.PKIEtcdCACert,
		Cert:      names.PKIEtcdHealthcheckClientCert,
		Key:       names.PKIEtcdHealthcheckClientKey,
	}, Timeout: "10m"}
	return vol, dns, goal
}

// Initialise returns the etcd plugin's constructs: the members' volumes,
// zone and groups in the etcd stack, the units and plans of the etcd role,
// and the IAM statements the members' steps need.
func Initialise(c *config.Cluster, v Values) (*construct.Set, diag.List) {
	diags := Check(c, v)
	subnets, err := c.MachineSubnets(c.Etcd.Subnets)
	if err != nil {
		diags = append(diags, diag.Fatalf("%v", err).At("etcd.subnets"))
	}
	if diags.HasFatal() {
		return &construct.Set{}, diags
	}
	if len(subnets) == 0 {
		return &construct.Set{}, append(diags, diag.Fatalf("etcd has no subnet to run in").At("etcd.subnets").
			WithHint("list availabilityZones or network.subnets"))
	}
	size := v.DataVolumeSize
	if size == 0 {
		size = DefaultDataVolumeSize
	}
	seconds, _ := snapshotSeconds(v.SnapshotInterval)

	set := &construct.Set{}
	set.Stacks = []construct.Stack{Stack(c, Members(c, subnets), size)}
	target := construct.Target{Role: construct.Etcd}
	set.Artifacts = []construct.Artifact{Artifact()}
	set.Units = append(set.Units, construct.Unit{Target: target, Name: Unit, Content: UnitContent(c.ClusterName, c.Etcd.Count), Enable: true})
	switch {
	case seconds > 0 && c.KMSKeyARN == "":
		diags = append(diags, diag.Warningf("etcd snapshots are off: they are stored encrypted with the cluster's KMS key, and kmsKeyArn is not set").
			At("kmsKeyArn").WithHint("set kmsKeyArn, or plugins.etcd.values.snapshotInterval: \"0\" to say no snapshots are wanted"))
	case seconds > 0:
		set.Units = append(set.Units, snapshotUnits(seconds, c.KMSKeyARN)...)
	}
	vol, dns, goal := Plans(c.ClusterName)
	for _, p := range []struct {
		path string
		plan nodeplan.Plan
	}{{nodeplan.VolumesPath, vol}, {nodeplan.DNSPath, dns}, {nodeplan.GoalPath, goal}} {
		b, err := nodeplan.Encode(p.plan)
		if err != nil {
			return &construct.Set{}, append(diags, diag.Fatalf("etcd: %s: %v", p.path, err))
		}
		set.Files = append(set.Files, construct.File{Target: target, Path: p.path, Mode: "0644", Content: string(b)})
	}
	iam, d := statements(c)
	set.IAM = iam
	return set, append(diags, d...)
}

// statements are what the members' own steps call, each on what is the
// members' own: attach a data volume of this cluster's members to an
// instance of this cluster (the volumes step), and store snapshots under
// the cluster's prefix (SSE-KMS with the cluster's key). The volumes step
// finds its volume with DescribeVolumes, which takes no resource-level
// permissions. What the dns step calls is RecordsPolicy, in the etcd stack.
func statements(c *config.Cluster) ([]construct.IAMStatement, diag.List) {
	target := construct.Target{Role: construct.Etcd}
	partition := config.Partition(c.Region)
	// AttachVolume is authorised on the volume and on the instance: the
	// volume must carry the tags the etcd stack gives the members' data
	// volumes (and the volumes plan looks for), the instance this
	// cluster's owner tag, which every machine of the cluster carries.
	volumes, err := json.Marshal(map[string]any{"StringEquals": map[string]string{
		"aws:ResourceTag/" + names.TagCluster: c.ClusterName,
		"aws:ResourceTag/" + names.TagRole:    DataVolumeTag,
	}})
	if err != nil {
		return nil, diag.List{diag.Fatalf("the etcd volumes' IAM condition: %v", err)}
	}
	instances, err := json.Marshal(map[string]any{"StringEquals": map[string]string{
		"aws:ResourceTag/" + names.KubernetesClusterTag(c.ClusterName): "owned",
	}})
	if err != nil {
		return nil, diag.List{diag.Fatalf("the etcd instances' IAM condition: %v", err)}
	}
	out := []construct.IAMStatement{
		{Target: target, Sid: "KubeAwsEtcdVolume", Effect: "Allow",
			Actions: []string{"ec2:AttachVolume"}, Resources: []string{fmt.Sprintf("arn:%s:ec2:%s:*:volume/*", partition, c.Region)}, Condition: volumes},
		{Target: target, Sid: "KubeAwsEtcdVolumeInstance", Effect: "Allow",
			Actions: []string{"ec2:AttachVolume"}, Resources: []string{fmt.Sprintf("arn:%s:ec2:%s:*:instance/*", partition, c.Region)}, Condition: instances},
		{Target: target, Sid: "KubeAwsEtcdVolumeFind", Effect: "Allow",
			Actions: []string{"ec2:DescribeVolumes"}, Resources: []string{"*"}},
	}
	bucket, prefix, err := config.ParseS3URI(c.S3URI)
	if err != nil {
		return out, diag.List{diag.Fatalf("%v", err).At("s3URI").WithHint("write it as s3://bucket/prefix")}
	}
	out = append(out, construct.IAMStatement{Target: target, Sid: "KubeAwsEtcdSnapshots", Effect: "Allow",
		Actions:   []string{"s3:PutObject"},
		Resources: []string{fmt.Sprintf("arn:%s:s3:::%s/%s", partition, bucket, nodeplan.Key(prefix, nodeplan.SnapshotPrefix)+"/*")}})
	if c.KMSKeyARN != "" {
		out = append(out, construct.IAMStatement{Target: target, Sid: "KubeAwsEtcdSnapshotsKMS", Effect: "Allow",
			Actions: []string{"kms:GenerateDataKey"}, Resources: []string{c.KMSKeyARN}})
	}
	return out, nil
}
