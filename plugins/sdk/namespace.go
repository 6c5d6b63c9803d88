package sdk

// PrivilegedNamespace is the manifest of a Namespace labelled for Pod
// Security Admission's privileged level (enforce, warn and audit), for a
// plugin whose pods need the host: its network, privileged containers or
// host folders, which the cluster's default level (baseline, the apiserver
// plugin's podSecurity) refuses outside kube-system. Contribute it as a
// construct.Manifest: the release's install creates the namespace, the
// manifests are applied right after the releases, and a DaemonSet's
// controller retries the pods it could not create until then.
func PrivilegedNamespace(name string) string {
	return `apiVersion: v1
kind: Namespace
metadata:
  name: ` + name + `
  labels:
    pod-security.kubernetes.io/enforce: privileged
    pod-security.kubernetes.io/warn: privileged
    pod-security.kubernetes.io/audit: privileged
`
}
