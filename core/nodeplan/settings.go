package nodeplan

import (
	"fmt"
	"strings"

	"github.com/kube-aws/kube-aws/core/names"
)

// The environment the launch template's bootstrap sets when it execs
// `kube-aws-node boot`. boot copies them to SettingsEnvPath.
const (
	// EnvCluster is the cluster's name: the KMS encryption context of
	// every secret (names.EncryptionContextCluster).
	EnvCluster = "KUBE_AWS_CLUSTER"
	// EnvRegion is the AWS region of the cluster.
	EnvRegion = "KUBE_AWS_REGION"
	// EnvBucket is the S3 bucket of the cluster's s3URI.
	EnvBucket = "KUBE_AWS_BUCKET"
	// EnvPrefix is the key prefix of the cluster's s3URI (may be empty).
	EnvPrefix = "KUBE_AWS_PREFIX"
	// EnvRole is the machine's role: controller, etcd or nodepool-<name>.
	EnvRole = "KUBE_AWS_ROLE"
	// EnvUserDataKey is the full S3 key (prefix included) of the role's
	// rendered userdata, roles/<role>/userdata/<sha256>.
	EnvUserDataKey = "KUBE_AWS_USERDATA_KEY"
	// EnvKMSKeyARN is the cluster's KMS key, for objects the machine writes
	// encrypted (etcd snapshots). Optional elsewhere.
	EnvKMSKeyARN = "KUBE_AWS_KMS_KEY_ARN"
)

// Settings are what a machine knows before it has read anything from S3.
type Settings struct {
	Cluster     string
	Region      string
	Bucket      string
	Prefix      string
	Role        string
	UserDataKey string
	KMSKeyARN   string
}

// settingVars maps every setting to its variable, in a stable order.
func (s *Settings) vars() []struct {
	name     string
	value    *string
	required bool
} {
	return []struct {
		name     string
		value    *string
		required bool
	}{
		{EnvCluster, &s.Cluster, true},
		{EnvRegion, &s.Region, true},
		{EnvBucket, &s.Bucket, true},
		{EnvPrefix, &s.Prefix, false},
		{EnvRole, &s.Role, true},
		{EnvUserDataKey, &s.UserDataKey, false},
		{EnvKMSKeyARN, &s.KMSKeyARN, false},
	}
}

// Fill reads the settings with lookup (os.LookupEnv, or a parsed
// environment file). A variable lookup does not find keeps the value s
// already has, so a second source can fill what the first lacked.
func (s *Settings) Fill(lookup func(string) (string, bool)) {
	for _, v := range s.vars() {
		if val, ok := lookup(v.name); ok {
			*v.value = val
		}
	}
}

// Env returns the settings as NAME=value pairs, in a stable order, the
// unset optional ones left out.
func (s Settings) Env() []string {
	var out []string
	for _, v := range s.vars() {
		if *v.value != "" || v.required {
			out = append(out, v.name+"="+*v.value)
		}
	}
	return out
}

// Validate says which required settings are missing or malformed.
func (s Settings) Validate() error {
	var missing []string
	for _, v := range s.vars() {
		if v.required && *v.value == "" {
			missing = append(missing, v.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%s not set: the launch template's bootstrap sets them (or %s holds them after boot)", strings.Join(missing, ", "), SettingsEnvPath)
	}
	if !validRole(s.Role) {
		return fmt.Errorf("%s=%q is not a role: want controller, etcd or nodepool-<name>", EnvRole, s.Role)
	}
	if strings.ContainsAny(s.Bucket, "/ ") {
		return fmt.Errorf("%s=%q is not a bucket name", EnvBucket, s.Bucket)
	}
	return nil
}

// Key is the full S3 key of a key relative to the cluster's prefix.
func (s Settings) Key(rel string) string { return Key(s.Prefix, rel) }

// EncryptionContext is the KMS encryption context of the role's secrets,
// the one deploy encrypted them under (names.EncryptionContext).
func (s Settings) EncryptionContext() map[string]string {
	return names.EncryptionContext(s.Cluster, s.Role)
}

func validRole(r string) bool {
	if r == names.RoleController || r == names.RoleEtcd {
		return true
	}
	pool, ok := names.NodePoolOf(r)
	return ok && dnsLabel.MatchString(pool)
}
