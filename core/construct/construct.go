// Package construct defines what a plugin contributes to a cluster in the
// initialise stage: CloudFormation, patches to other plugins' resources,
// systemd units, files, API server and kubelet flags, node labels and taints,
// IAM statements, requests that pods reach the instance metadata service,
// Helm releases and Kubernetes manifests. Everything here is
// plain data so it crosses the plugin protocol unchanged; the rules that merge
// contributions from many plugins live in core/merge.
package construct

import (
	"encoding/json"

	"github.com/kube-aws/kube-aws/core/names"
)

// Role is a kind of machine in the cluster.
type Role string

const (
	Controller Role = names.RoleController
	Etcd       Role = names.RoleEtcd
	// Worker is every node pool, or one pool when Target.NodePool is set.
	Worker Role = names.RoleWorker
)

// Roles lists every role in a stable order.
var Roles = []Role{Controller, Etcd, Worker}

// Target says which machines a construct applies to.
type Target struct {
	Role Role `json:"role"`
	// NodePool narrows a Worker target to one pool; empty means every pool.
	NodePool string `json:"nodePool,omitempty"`
}

// String renders the target as "controller", "worker" or "worker/<pool>".
func (t Target) String() string {
	if t.NodePool != "" {
		return string(t.Role) + "/" + t.NodePool
	}
	return string(t.Role)
}

// Covers says whether a request on t applies to the machines of role in
// node pool pool ("" for etcd and controllers): a worker target without a
// pool covers every pool.
func (t Target) Covers(role Role, pool string) bool {
	return t.Role == role && (t.NodePool == "" || t.NodePool == pool)
}

// Set is everything one plugin contributes, or the merged contributions of
// every plugin. The zero value is an empty, usable set.
type Set struct {
	Stacks       []Stack        `json:"stacks,omitempty"`
	Patches      []Patch        `json:"patches,omitempty"`
	Protected    []Protected    `json:"protected,omitempty"`
	Units        []Unit         `json:"units,omitempty"`
	Files        []File         `json:"files,omitempty"`
	APIServer    APIServer      `json:"apiServer,omitempty"`
	KubeletFlags []TargetedFlag `json:"kubeletFlags,omitempty"`
	NodeLabels   []NodeLabel    `json:"nodeLabels,omitempty"`
	NodeTaints   []NodeTaint    `json:"nodeTaints,omitempty"`
	IAM          []IAMStatement `json:"iam,omitempty"`
	// PodMetadata are requests that pods reach the instance metadata
	// service of some machines (PodMetadataAccess).
	PodMetadata []PodMetadataAccess `json:"podMetadata,omitempty"`
	// PodRoles are IAM roles that pods assume with their own
	// service-account tokens (PodRole).
	PodRoles     []PodRole     `json:"podRoles,omitempty"`
	HelmReleases []HelmRelease `json:"helmReleases,omitempty"`
	Manifests    []Manifest    `json:"manifests,omitempty"`
	Artifacts    []Artifact    `json:"artifacts,omitempty"`
}

// IsEmpty reports whether the set contributes nothing.
func (s *Set) IsEmpty() bool {
	if s == nil {
		return true
	}
	return len(s.Stacks) == 0 && len(s.Patches) == 0 && len(s.Protected) == 0 &&
		len(s.Units) == 0 && len(s.Files) == 0 && len(s.APIServer.Flags) == 0 &&
		len(s.APIServer.Volumes) == 0 && len(s.KubeletFlags) == 0 &&
		len(s.NodeLabels) == 0 && len(s.NodeTaints) == 0 && len(s.IAM) == 0 && len(s.PodMetadata) == 0 && len(s.PodRoles) == 0 &&
		len(s.HelmReleases) == 0 && len(s.Manifests) == 0 && len(s.Artifacts) == 0
}

// Stack is a CloudFormation stack or a contribution to one. Contributions from
// several plugins to the stack of the same name are merged section by section;
// each section maps a logical ID to its JSON body exactly as it appears in a
// template (a resource is {"Type": ..., "Properties": ...}).
type Stack struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// DependsOn names the stacks whose outputs this stack takes as parameters;
	// deploy orders stacks by it.
	DependsOn  []string                   `json:"dependsOn,omitempty"`
	Resources  map[string]json.RawMessage `json:"resources,omitempty"`
	Outputs    map[string]json.RawMessage `json:"outputs,omitempty"`
	Parameters map[string]json.RawMessage `json:"parameters,omitempty"`
	Conditions map[string]json.RawMessage `json:"conditions,omitempty"`
	Mappings   map[string]json.RawMessage `json:"mappings,omitempty"`
	Tags       map[string]string          `json:"tags,omitempty"`
	// ParameterSources wires a parameter of this stack to an output of
	// another, filled in by deploy (written "<stack>.<output>" in JSON).
	ParameterSources map[string]names.Source `json:"parameterSources,omitempty"`
	// Plugin is the plugin that contributed the stack; in the merged set,
	// the first of the plugins that did.
	Plugin string `json:"plugin,omitempty"`
	// Renderer is set by the merge on a stack a plugin renders late
	// (stage.PluginInfo.LateStacks): that plugin. Such a stack stays in
	// the merged set as one entry per contributing plugin, which the
	// renderer folds into the stack it builds with merge.Late; no other
	// plugin renders it.
	Renderer string `json:"renderer,omitempty"`
}

// Patch changes a resource that another plugin made: a JSON merge patch
// (RFC 7386, Merge), RFC 6902 operations (Operations: add one element to a
// list with "/-", replace or remove one, test a value), or both (the merge
// patch first). Patches apply in plugin order after every resource is
// merged; two plugins changing overlapping paths of one resource is a
// conflict, unless they set identical values or both append to a list.
type Patch struct {
	Stack     string          `json:"stack"`
	LogicalID string          `json:"logicalId"`
	Merge     json.RawMessage `json:"merge,omitempty"`
	// Operations is an RFC 6902 JSON Patch document: an array of
	// {"op": "add", "path": "/Properties/Tags/-", "value": {...}}.
	Operations json.RawMessage `json:"operations,omitempty"`
	// Plugin is the plugin that contributed the patch: filled by kube-aws
	// when merging, as on every construct that has the field; a plugin need
	// not set it. Diagnostics about a construct name its plugin.
	Plugin string `json:"plugin,omitempty"`
}

// Protected marks a JSON pointer inside a resource that no patch may change,
// such as a node pool's bootstrap userdata. The plugin that makes a resource
// declares what of it is protected.
type Protected struct {
	Stack     string `json:"stack"`
	LogicalID string `json:"logicalId"`
	// Pointer is a JSON pointer into the resource body, e.g.
	// /Properties/LaunchTemplateData/UserData.
	Pointer string `json:"pointer"`
	Reason  string `json:"reason,omitempty"`
	Plugin  string `json:"plugin,omitempty"`
}

// Unit is a systemd unit, or only drop-ins for a unit another plugin or the
// OS provides when Content is empty.
type Unit struct {
	Target  Target   `json:"target"`
	Name    string   `json:"name"`
	Content string   `json:"content,omitempty"`
	Enable  bool     `json:"enable,omitempty"`
	DropIns []DropIn `json:"dropIns,omitempty"`
	// Plugin is the plugin that defined the unit (its content); drop-ins
	// name their own.
	Plugin string `json:"plugin,omitempty"`
}

// DropIn is a systemd drop-in file for a unit.
type DropIn struct {
	Name    string `json:"name"`
	Content string `json:"content"`
	Plugin  string `json:"plugin,omitempty"`
}

// File is a file written on the machines of a target at boot.
type File struct {
	Target Target `json:"target"`
	Path   string `json:"path"`
	// Mode is octal, e.g. "0644".
	Mode    string `json:"mode,omitempty"`
	Owner   string `json:"owner,omitempty"`
	Content string `json:"content"`
	// Sensitive content is never written in plain text: it is uploaded
	// encrypted with the cluster's KMS key and decrypted on the node.
	Sensitive bool `json:"sensitive,omitempty"`
	// Format is how the machine reads the file to substitute the
	// ((secret:...)) and ((fact:...)) markers in it, structurally: json,
	// yaml, env or whole (nodeplan.Format). A file whose content holds a
	// marker needs one; a sensitive file without one is whole. (A string,
	// not nodeplan.Format: every plugin imports this package, and its
	// start-up must not compile nodeplan's patterns.)
	Format string `json:"format,omitempty"`
	Plugin string `json:"plugin,omitempty"`
}

// Flag is a command-line flag. Name has no leading dashes.
type Flag struct {
	Name  string `json:"name"`
	Value string `json:"value"`
	// Plugin set the flag; for a list-valued flag merged from several
	// plugins, the first of them in plugin order.
	Plugin string `json:"plugin,omitempty"`
}

// TargetedFlag is a flag for a component on some machines (the kubelet).
type TargetedFlag struct {
	Target Target `json:"target"`
	Flag
}

// APIServer holds kube API server flags and volumes.
type APIServer struct {
	Flags   []Flag   `json:"flags,omitempty"`
	Volumes []Volume `json:"volumes,omitempty"`
}

// Volume is a host path mounted into the API server's static pod.
type Volume struct {
	Name      string `json:"name"`
	HostPath  string `json:"hostPath"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

// NodeLabel is a Kubernetes label the kubelet registers its node with.
type NodeLabel struct {
	Target Target `json:"target"`
	Key    string `json:"key"`
	Value  string `json:"value"`
	Plugin string `json:"plugin,omitempty"`
}

// NodeTaint is a Kubernetes taint the kubelet registers its node with.
type NodeTaint struct {
	Target Target `json:"target"`
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Effect string `json:"effect"`
	Plugin string `json:"plugin,omitempty"`
}

// IAMStatement is an IAM policy statement added to the instance role of a target.
type IAMStatement struct {
	Target    Target          `json:"target"`
	Sid       string          `json:"sid,omitempty"`
	Effect    string          `json:"effect"`
	Actions   []string        `json:"actions"`
	Resources []string        `json:"resources"`
	Condition json.RawMessage `json:"condition,omitempty"`
	Plugin    string          `json:"plugin,omitempty"`
}

// PodMetadataAccess asks that the pods of a target's machines (pods on
// their own network, not the node's: hostNetwork pods are the node) may
// reach the instance metadata service, and so take the credentials of the
// machines' IAM role. By default none may: every launch template answers
// the IMDSv2 token request with a hop limit of 1, which a pod behind the
// node's bridge is one routed hop beyond. A request raises the limit of the
// target's launch templates to 2 (PodMetadataHopLimit). There is no request
// for less: closed is the default, and any plugin's request opens the
// machines it names, whoever else is silent (the more open one wins).
// Merged, the set keeps one request per target and plugin, so that a user
// sees every plugin that opened a role (docs/security.md).
type PodMetadataAccess struct {
	Target Target `json:"target"`
	// Reason says which pods need it and why, for the user reading the
	// merged constructs.
	Reason string `json:"reason,omitempty"`
	Plugin string `json:"plugin,omitempty"`
}

// PodRole is an IAM role of the cluster's own that the pods of the named
// service accounts assume with their own service-account tokens (IAM roles
// for service accounts), with no node's credentials involved. The iam plugin
// makes it, named names.PodRoleName(cluster, Name), trusting the cluster's
// OIDC provider for exactly these service accounts; a service account names
// it with the names.PodRoleNameAnnotation annotation (Name) or
// names.PodRoleARNAnnotation (its ARN, a stack output). Merged, two
// definitions of one name must be identical.
type PodRole struct {
	// Name is the role's name within the cluster: lower-case letters,
	// digits and '-'.
	Name string `json:"name"`
	// ServiceAccounts are the service accounts that may assume the role,
	// each "namespace/name"; "namespace/*" is every one in the namespace.
	ServiceAccounts []string `json:"serviceAccounts"`
	// Statements are the role's permissions; their Target is not used.
	Statements []IAMStatement `json:"statements"`
	// Reason says which pods need it and why, for the user reading the
	// merged constructs.
	Reason string `json:"reason,omitempty"`
	Plugin string `json:"plugin,omitempty"`
}

// What a PodRole's Name and each of its ServiceAccounts must match, in the
// syntax Go's regexp and JSON Schema share: the merge checks every plugin's
// roles with them, and the iam plugin's values schema checks the user's.
const (
	PodRoleNamePattern    = `^[a-z0-9]([a-z0-9-]{0,38}[a-z0-9])?$`
	ServiceAccountPattern = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?/(\*|[a-z0-9]([-a-z0-9.]*[a-z0-9])?)$`
)

// The IMDSv2 token hop limits of launch templates: NodeMetadataHopLimit by
// default (the node's own processes and hostNetwork pods), and
// PodMetadataHopLimit where a PodMetadataAccess asks for it (one routed hop
// more: a pod behind the node's bridge).
const (
	NodeMetadataHopLimit = 1
	PodMetadataHopLimit  = 2
)

// HelmRelease is a Helm chart installed into the cluster.
type HelmRelease struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Chart     Chart  `json:"chart"`
	// Values are the release's values as a JSON object.
	Values json.RawMessage `json:"values,omitempty"`
	// Plugin is the plugin that contributed the release, so that a broken
	// chart's diagnostic can say whose chart it is: filled by kube-aws when
	// merging; a plugin need not set it.
	Plugin string `json:"plugin,omitempty"`
	// ValuesFrom is the config path the values came from when the plugin
	// passed values from cluster.yaml on (plugins.NAME.values.chart): a
	// chart's values.schema.json failure then points at that line.
	ValuesFrom string `json:"valuesFrom,omitempty"`
}

// Chart says where a release's chart comes from: a folder or .tgz the plugin
// ships (Path, absolute), or a repository reference installed on the node.
type Chart struct {
	Path       string `json:"path,omitempty"`
	Repository string `json:"repository,omitempty"`
	Name       string `json:"name,omitempty"`
	Version    string `json:"version,omitempty"`
}

// Manifest is a Kubernetes manifest (YAML, one or more documents) applied on
// the controllers once the API server is up.
type Manifest struct {
	Name    string `json:"name"`
	Content string `json:"content"`
	Plugin  string `json:"plugin,omitempty"`
}

// ListValuedAPIServerFlags are the API server flags whose values are
// comma-separated lists; contributions to them merge as ordered sets instead
// of conflicting.
var ListValuedAPIServerFlags = map[string]bool{
	"enable-admission-plugins":  true,
	"disable-admission-plugins": true,
	"admission-plugins":         true,
	"runtime-config":            true,
	"feature-gates":             true,
	"api-audiences":             true,
	"tls-cipher-suites":         true,
	"authorization-mode":        true,
}

// ListValuedKubeletFlags is ListValuedAPIServerFlags for the kubelet.
var ListValuedKubeletFlags = map[string]bool{
	"feature-gates":        true,
	"node-labels":          true,
	"register-with-taints": true,
	"tls-cipher-suites":    true,
}

// ArtifactKind says what an artifact is.
type ArtifactKind string

const (
	// Binary is a release of one or more executables (kubelet; etcd,
	// etcdctl and etcdutl from one tarball).
	Binary ArtifactKind = "binary"
	// Image is a container image imported into containerd.
	Image ArtifactKind = "image"
)

// Artifact is a binary release or a container image the machines of a
// target install at boot (kube-aws-node's artifacts step). It is pinned:
// every upstream source carries its sha256 or digest. In air-gapped mode
// (artifacts.mirror in cluster.yaml) kube-aws takes every file from the
// mirror folder instead, at MirrorPath, and records its sha256 in the
// source's Mirrored.
type Artifact struct {
	Target  Target       `json:"target"`
	Name    string       `json:"name"`
	Version string       `json:"version"`
	Kind    ArtifactKind `json:"kind"`
	// Files are a binary release's executables.
	Files []ArtifactFile `json:"files,omitempty"`
	// Reference is an image's upstream name, <registry>/<repository>:<tag>,
	// the name pods ask for.
	Reference string `json:"reference,omitempty"`
	// Sources are the upstream sources by architecture (amd64, arm64).
	Sources map[string]ArtifactSource `json:"sources"`
	Plugin  string                    `json:"plugin,omitempty"`
}

// ArtifactFile is one executable of a binary release.
type ArtifactFile struct {
	// Name is the file's name in the release, and in the mirror folder.
	Name string `json:"name"`
	// Path is where it is installed, e.g. /usr/local/bin/kubelet.
	Path string `json:"path"`
	// Mode is octal, "0755" when empty.
	Mode string `json:"mode,omitempty"`
}

// ArtifactSource is where one architecture's artifact comes from upstream.
type ArtifactSource struct {
	// URL of the download (a binary, or a tar/tar.gz holding the files).
	URL string `json:"url,omitempty"`
	// SHA256 of the download.
	SHA256 string `json:"sha256,omitempty"`
	// Members maps a file's Name to its path inside the tarball; a file
	// not listed is the download itself.
	Members map[string]string `json:"members,omitempty"`
	// Digest of an image's manifest or index, sha256:...
	Digest string `json:"digest,omitempty"`
	// Mirrored is filled by kube-aws in air-gapped mode: the sha256 of each
	// file taken from the mirror folder, by file name (an image's is
	// MirrorImageFile). A plugin leaves it empty.
	Mirrored map[string]string `json:"mirrored,omitempty"`
}

// MirrorImageFile is the file name of an image in the mirror folder: an
// archive ctr imports under the artifact's reference, an OCI archive (what
// kube-aws's artifact builder writes) or a docker-archive (docker save).
const MirrorImageFile = "image.tar"

// MirrorFiles are the names of the artifact's files in the mirror folder.
func (a *Artifact) MirrorFiles() []string {
	if a.Kind == Image {
		return []string{MirrorImageFile}
	}
	out := make([]string, len(a.Files))
	for i, f := range a.Files {
		out[i] = f.Name
	}
	return out
}

// MirrorPath is where the mirror folder holds an artifact's file for an
// architecture, slash-separated and relative to the folder:
// <name>/<version>/linux-<arch>/<file> (docs/artifacts.md).
func (a *Artifact) MirrorPath(arch, file string) string {
	return a.Name + "/" + a.Version + "/linux-" + arch + "/" + file
}
