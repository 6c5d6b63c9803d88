// Package stage defines the four stages of a kube-aws run and the data that
// flows into and out of each plugin in each of them. These are the core-side
// types; plugins/protocol converts them to and from the wire.
package stage

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
)

// Name is a stage name.
type Name string

const (
	Initialise Name = "initialise"
	Render     Name = "render"
	Deploy     Name = "deploy"
	Validate   Name = "validate"
)

// All lists the stages in the order they run.
var All = []Name{Initialise, Render, Deploy, Validate}

// Operations are called like a stage, but are no stage of the pipeline, and
// persist nothing: kube-aws diff and destroy run initialise and render,
// then the operation, in the plugins that implement it (the deploy plugin);
// kube-aws kubeconfig asks for the admin credential with no stage before
// it, from the plugin that implements that operation (the pki plugin).
const (
	// Diff previews a deploy: what each stack would change. Nothing changes.
	Diff Name = "diff"
	// Destroy deletes what deploy made.
	Destroy Name = "destroy"
	// AdminCredential returns the cluster's admin credential
	// (Result.AdminCredential) as the plugin that implements it keeps it.
	// It makes nothing and changes nothing.
	AdminCredential Name = "admin-credential"
)

// Operations lists the operations.
var Operations = []Name{Diff, Destroy, AdminCredential}

// Parse turns a user-typed stage name into a Name.
func Parse(s string) (Name, error) {
	for _, n := range All {
		if string(n) == s {
			return n, nil
		}
	}
	if s == "initialize" {
		return Initialise, nil
	}
	return "", fmt.Errorf("unknown stage %q: want one of initialise, render, deploy, validate", s)
}

// Index returns the position of the stage in All, or -1.
func (n Name) Index() int {
	for i, s := range All {
		if s == n {
			return i
		}
	}
	return -1
}

// Previous returns the stage that must have run before n ("" for initialise).
func (n Name) Previous() Name {
	if i := n.Index(); i > 0 {
		return All[i-1]
	}
	return ""
}

// Input is what every plugin receives in a stage. Every plugin receives the
// same Input: the whole setup, not only its own part.
type Input struct {
	Stage Name `json:"stage"`
	// Config is cluster.yaml as loaded, with defaults applied and sensitive
	// values replaced by redaction markers (JSON of core/config.Cluster).
	Config json.RawMessage `json:"config"`
	// Values holds every enabled plugin's effective values, by plugin name.
	// From render on, these are the values initialise returned.
	Values map[string]PluginValues `json:"values,omitempty"`
	// Capabilities maps each capability to the plugin chosen to provide it.
	Capabilities map[string]string `json:"capabilities,omitempty"`
	// Constructs is the merged initialise output (render and later).
	Constructs *construct.Set `json:"constructs,omitempty"`
	// Rendered describes the render output on disk (deploy and later).
	Rendered *Rendered `json:"rendered,omitempty"`
	// Deploy is the deploy result so far (deploy and validate).
	Deploy *DeployResult `json:"deploy,omitempty"`
	// Secrets holds the plain text of sensitive values, by redaction marker
	// name. Only the deploy stage carries it, only in memory, never persisted.
	Secrets map[string]string `json:"-"`
	// WorkDir is the folder holding cluster.yaml.
	WorkDir string `json:"workDir,omitempty"`
	// AWS are the operator's AWS settings (the --profile, --region,
	// --endpoint-url... flags). Only plugins whose PluginInfo.ReachesAWS is
	// set receive them; nil for the others and when no command set them.
	AWS *AWSSettings `json:"aws,omitempty"`
}

// AWSSettings are what the operator told kube-aws about AWS, for the plugins
// that reach AWS. Empty fields leave the AWS SDK's own configuration
// (AWS_PROFILE, AWS_REGION, the profile's region) and the plugin's defaults
// in charge.
type AWSSettings struct {
	Profile string `json:"profile,omitempty"`
	// Region, when empty: cluster.yaml's region.
	Region string `json:"region,omitempty"`
	// EndpointURL sends every AWS call to an emulator such as moto.
	EndpointURL string `json:"endpointURL,omitempty"`
	// Timeout bounds the whole AWS operation (0: the plugin's default).
	Timeout time.Duration `json:"timeout,omitempty"`
	// Yes confirms up front what would otherwise need a prompt (--yes).
	Yes bool `json:"yes,omitempty"`
	// ForceUnlock removes the deploy lock first (--force-unlock).
	ForceUnlock bool `json:"forceUnlock,omitempty"`
	// AllowIssuerChange lets a deploy change the service-account issuer of
	// a running cluster (--allow-issuer-change).
	AllowIssuerChange bool `json:"allowIssuerChange,omitempty"`
}

// PluginValues are one plugin's values, cluster-wide and per node pool
// (each pool's overrides already merged over the cluster-wide values).
type PluginValues struct {
	Values    json.RawMessage            `json:"values,omitempty"`
	NodePools map[string]json.RawMessage `json:"nodePools,omitempty"`
}

// Result is what one plugin returns from a stage. Each stage reads only the
// fields it defines: initialise Values and Constructs, render Files and
// Stacks, deploy Deploy, the operations Diff, Destroy and AdminCredential;
// every stage may return Diagnostics.
type Result struct {
	Values      json.RawMessage `json:"values,omitempty"`
	Constructs  *construct.Set  `json:"constructs,omitempty"`
	Files       []File          `json:"files,omitempty"`
	Stacks      []StackSpec     `json:"stacks,omitempty"`
	Deploy      *DeployResult   `json:"deploy,omitempty"`
	Diff        *DiffResult     `json:"diff,omitempty"`
	Destroy     *DestroyResult  `json:"destroy,omitempty"`
	Diagnostics diag.List       `json:"diagnostics,omitempty"`
	// AdminCredential holds a private key: it is never encoded as JSON
	// (state, reports), only carried in memory and on the plugin wire.
	AdminCredential *Credential `json:"-"`
}

// Credential is what a kubeconfig embeds to reach the cluster: the CA the
// API server's certificate chains to, and a client certificate with its
// private key, all PEM (the admin-credential operation returns one with
// cluster-admin rights). The key is a secret: it travels in memory
// and on the plugin wire only, and fmt prints the value redacted.
type Credential struct {
	// CACert is the cluster CA's certificate
	// (certificate-authority-data).
	CACert []byte
	// Cert and Key are the client certificate and its private key
	// (client-certificate-data, client-key-data).
	Cert, Key []byte
}

// String keeps the key out of logs and error messages: %v and %+v print
// this, not the PEM.
func (Credential) String() string { return "credential (redacted)" }

// GoString does the same for %#v.
func (c Credential) GoString() string { return c.String() }

// Stack actions a diff reports.
const (
	ActionCreate   = "create"   // the stack does not exist yet
	ActionRecreate = "recreate" // a failed create: it would be deleted and created again
	ActionUpdate   = "update"   // the change set has changes
	ActionNone     = "none"     // nothing would change
)

// DiffResult is a preview of a deploy: what each stack would change.
type DiffResult struct {
	// Stacks in dependency order.
	Stacks []StackDiff `json:"stacks"`
	// Machines are the machines an up would replace (their launch
	// template changes, or they run an older one already), in roll order.
	Machines []MachineDiff `json:"machines,omitempty"`
	// Orphans are stacks tagged with the cluster that are no longer
	// rendered (a removed node pool): up leaves them, destroy deletes them.
	Orphans []string `json:"orphans,omitempty"`
	Changed bool     `json:"changed"`
}

// MachineDiff is one machine an up would replace, and why.
type MachineDiff struct {
	// Stack is the rendered stack of its group; Role the machines' role.
	Stack      string `json:"stack"`
	Role       string `json:"role"`
	Group      string `json:"group"`
	InstanceID string `json:"instanceId"`
	Address    string `json:"address,omitempty"`
	// Reasons say what changes for it: "kubernetesVersion 1.33.13 ->
	// 1.34.4", "plugin dex changed", "instance type t3.medium -> t3.large".
	Reasons []string `json:"reasons"`
}

// StackDiff is what would happen to one stack.
type StackDiff struct {
	Stack     string `json:"stack"`
	StackName string `json:"stackName"`
	// Status is the stack's current status ("" when it does not exist).
	Status  string           `json:"status,omitempty"`
	Action  string           `json:"action"`
	Changes []ResourceChange `json:"changes,omitempty"`
}

// ResourceChange is one resource a change set would touch.
type ResourceChange struct {
	// Action is Add, Modify, Remove, Import or Dynamic.
	Action       string `json:"action"`
	LogicalID    string `json:"logicalId"`
	PhysicalID   string `json:"physicalId,omitempty"`
	ResourceType string `json:"resourceType"`
	// Replacement is True, False or Conditional for Modify.
	Replacement string `json:"replacement,omitempty"`
}

// DestroyResult is what destroy removed.
type DestroyResult struct {
	// Deleted names the stacks deleted; Absent those already gone.
	Deleted []string `json:"deleted,omitempty"`
	Absent  []string `json:"absent,omitempty"`
	// Orphans are CloudFormation names of stacks tagged with the cluster
	// that the render output no longer has (a removed node pool), deleted
	// first.
	Orphans []string `json:"orphans,omitempty"`
}

// File is a file a plugin renders, relative to the render output folder
// (stacks/network.json, userdata/controller.yaml, charts/dex-1.0.0.tgz).
type File struct {
	Path    string `json:"path"`
	Content []byte `json:"content"`
	// Mode is octal, e.g. "0644"; empty means 0644.
	Mode string `json:"mode,omitempty"`
	// Plugin is filled by the host with the plugin that rendered the file.
	Plugin string `json:"plugin,omitempty"`
}

// StackSpec tells deploy about one rendered CloudFormation stack.
type StackSpec struct {
	Name string `json:"name"`
	// Template is the template's path in the render output.
	Template  string   `json:"template"`
	DependsOn []string `json:"dependsOn,omitempty"`
	// ParameterSources maps a parameter to the stack output that fills it.
	ParameterSources map[string]names.Source `json:"parameterSources,omitempty"`
	// UploadByURL is set when the template is over 51,200 bytes and must be
	// passed by TemplateURL.
	UploadByURL bool              `json:"uploadByUrl,omitempty"`
	Tags        map[string]string `json:"tags,omitempty"`
}

// Rendered describes a finished render on disk.
type Rendered struct {
	Dir    string         `json:"dir"`
	Files  []ManifestFile `json:"files"`
	Stacks []StackSpec    `json:"stacks,omitempty"`
}

// ManifestFile is one entry of rendered/manifest.json.
type ManifestFile struct {
	Path    string `json:"path"`
	SHA256  string `json:"sha256"`
	Size    int64  `json:"size"`
	Plugin  string `json:"plugin"`
	Version string `json:"version"`
}

// DeployResult is what deploy produced: stacks and outputs.
type DeployResult struct {
	Stacks []StackStatus `json:"stacks,omitempty"`
	// Outputs are cluster-level results such as the API endpoint, by name.
	Outputs map[string]string `json:"outputs,omitempty"`
}

// StackStatus is one deployed stack.
type StackStatus struct {
	Name    string            `json:"name"`
	ID      string            `json:"id,omitempty"`
	Status  string            `json:"status"`
	Outputs map[string]string `json:"outputs,omitempty"`
	// Changed is false when an update found nothing to change.
	Changed bool `json:"changed"`
}

// PluginInfo is what a plugin says about itself at registration.
type PluginInfo struct {
	Name        string `json:"name"`
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
	// ProtocolVersions lists the protocol versions the plugin speaks.
	ProtocolVersions []int `json:"protocolVersions"`
	// Stages lists the stages the plugin implements; it is not called in others.
	Stages []Name `json:"stages"`
	// ValuesSchema is the JSON Schema of the plugin's values in cluster.yaml.
	ValuesSchema json.RawMessage `json:"valuesSchema,omitempty"`
	// Capabilities lists what the plugin provides (a CNI, say), so that
	// cluster.yaml can choose among providers.
	Capabilities []string `json:"capabilities,omitempty"`
	// LateStacks are the stacks the plugin builds itself in render (the
	// iam plugin's iam stack, made from the merged IAM statements). Other
	// plugins may still add to them and patch them: the merge carries those
	// contributions to the render stage, where the plugin folds them in
	// with core/merge.Late. No other plugin renders them.
	LateStacks []string `json:"lateStacks,omitempty"`
	// ReachesAWS says the plugin calls AWS: it is given the operator's AWS
	// settings (Input.AWS); other plugins never see them.
	ReachesAWS bool `json:"reachesAWS,omitempty"`
}

// Implements reports whether the plugin implements the stage.
func (p PluginInfo) Implements(n Name) bool {
	for _, s := range p.Stages {
		if s == n {
			return true
		}
	}
	return false
}

// Registration is the host's answer to a plugin's PluginInfo.
type Registration struct {
	Accepted bool   `json:"accepted"`
	Reason   string `json:"reason,omitempty"`
}

// EventKind says what an Event carries.
type EventKind string

const (
	EventLog        EventKind = "log"
	EventProgress   EventKind = "progress"
	EventDiagnostic EventKind = "diagnostic"
)

// Event is something a plugin reports while a stage runs.
type Event struct {
	Kind EventKind `json:"kind"`
	// Level is debug, info, warn or error for logs.
	Level   string `json:"level,omitempty"`
	Message string `json:"message,omitempty"`
	// Current and Total describe progress; Total 0 means unknown.
	Current    int64            `json:"current,omitempty"`
	Total      int64            `json:"total,omitempty"`
	Diagnostic *diag.Diagnostic `json:"diagnostic,omitempty"`
}
