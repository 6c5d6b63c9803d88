package names

// The KMS encryption context of a role's secrets. Deploy encrypts every
// secret a role's machines read with the cluster's KMS key under
// EncryptionContext(cluster, role); the iam plugin lets each role's
// machines decrypt only under their own context
// (EncryptionContextCondition); a machine decrypts with the context of its
// settings (core/nodeplan.Settings). The three must agree byte for byte,
// or machines cannot decrypt their secrets: they are built here, once.
const (
	// EncryptionContextCluster is the context key holding the cluster's
	// name.
	EncryptionContextCluster = "kube-aws:cluster"
	// EncryptionContextRole is the context key holding the role:
	// controller, etcd or nodepool-<pool> (UserDataName).
	EncryptionContextRole = "kube-aws:role"
)

// EncryptionContext is the KMS encryption context of the secrets of a
// cluster's role.
func EncryptionContext(cluster, role string) map[string]string {
	return map[string]string{EncryptionContextCluster: cluster, EncryptionContextRole: role}
}

// EncryptionContextCondition is the StringEquals block of an IAM policy
// condition that admits exactly EncryptionContext(cluster, role):
// kms:EncryptionContext:<key> for each key.
func EncryptionContextCondition(cluster, role string) map[string]string {
	ec := EncryptionContext(cluster, role)
	out := make(map[string]string, len(ec))
	for k, v := range ec {
		out["kms:EncryptionContext:"+k] = v
	}
	return out
}
