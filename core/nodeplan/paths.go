package nodeplan

import (
	"path"
	"strings"
)

// Dir is where the plan files live on a machine.
const Dir = "/etc/kube-aws"

// The plan files. Each is optional: a step whose plan file is absent has
// nothing to do on this role and says so.
const (
	// SecretsPath lists the files holding secret markers (SecretsPlan).
	SecretsPath = Dir + "/secrets.json"
	// ArtifactsPath lists the binaries and images to install (ArtifactsPlan).
	ArtifactsPath = Dir + "/artifacts.json"
	// CertificatesPath lists the leaf certificates to issue (CertificatesPlan).
	CertificatesPath = Dir + "/certificates.json"
	// VolumesPath lists the EBS volumes to attach and mount (VolumesPlan).
	VolumesPath = Dir + "/volumes.json"
	// DNSPath lists the Route 53 records the machine upserts (DNSPlan).
	DNSPath = Dir + "/dns.json"
	// AddonsPath lists the Helm releases and manifests to install (AddonsPlan).
	AddonsPath = Dir + "/addons.json"
	// GoalPath says what the role waits for and reports (GoalPlan).
	GoalPath = Dir + "/goal.json"
	// ApproverPath configures the kubelet serving CSR approver (ApproverPlan).
	ApproverPath = Dir + "/csr-approver.json"
	// DrainerPath configures the controllers' drainer (DrainerPlan).
	DrainerPath = Dir + "/drainer.json"
	// PodIdentityWebhookPath configures the controllers' pod identity
	// webhook (PodIdentityWebhookPlan).
	PodIdentityWebhookPath = Dir + "/pod-identity-webhook.json"
)

// Files kube-aws-node writes itself.
const (
	// SettingsEnvPath holds the bootstrap's settings (the KUBE_AWS_*
	// variables of Settings) as an environment file, written by boot, so
	// that steps run later by systemd (EnvironmentFile=) find them too.
	SettingsEnvPath = Dir + "/node.env"
	// FactsEnvPath holds the machine's facts as KUBE_AWS_FACT_<NAME>
	// variables (see FactEnvName) for systemd units (EnvironmentFile=).
	FactsEnvPath = Dir + "/facts.env"
	// StateDir holds what kube-aws-node keeps between steps and boots:
	// the facts (facts.json), verified downloads (cache/<sha256>).
	StateDir = "/var/lib/kube-aws"
	// FactsPath is the facts as JSON, read by every step.
	FactsPath = StateDir + "/facts.json"
)

// BinaryPath is where the bootstrap installs kube-aws-node; runcmd may
// name it by this path or as "kube-aws-node" (boot puts its folder first
// on PATH).
const BinaryPath = "/opt/kube-aws/bin/kube-aws-node"

// Key joins a cluster's S3 prefix and a key relative to it, as kube-aws
// stores objects: an empty prefix adds no leading slash.
func Key(prefix string, parts ...string) string {
	rel := path.Join(parts...)
	prefix = strings.Trim(prefix, "/")
	if prefix == "" {
		return rel
	}
	return prefix + "/" + rel
}

// SecretKey is the S3 key, relative to the cluster's prefix, of the KMS
// ciphertext of the secret a marker stands for: readable only by role.
func SecretKey(role, marker string) string {
	return path.Join("roles", role, "secrets", SHA256Hex([]byte(marker)))
}

// StatusKey is the S3 key, relative to the cluster's prefix, of a
// machine's status object (Status).
func StatusKey(role, instanceID string) string {
	return path.Join("status", role, instanceID+".json")
}

// StatusPrefix is the S3 key prefix, relative to the cluster's prefix,
// under which every machine of every role writes its status.
const StatusPrefix = "status/"

// SnapshotPrefix is the S3 key prefix, relative to the cluster's prefix,
// of etcd snapshots.
const SnapshotPrefix = "etcd/snapshots/"

// AssetKey is the content-addressed S3 key, relative to the cluster's
// prefix, of a shared non-secret asset (kube-aws-node, charts, artifacts
// in air-gapped mode).
func AssetKey(sha256 string) string { return "assets/" + sha256 }
