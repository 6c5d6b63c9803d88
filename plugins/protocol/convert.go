package protocol

import (
	"encoding/json"
	"maps"
	"time"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
	pb "github.com/kube-aws/kube-aws/plugins/proto/v1"
)

// The converters below are written out field by field rather than going
// through JSON: a plugin process pays for every conversion on every stage
// call, and reflection-based JSON round trips would dominate the cost of a
// trivial plugin. convert_test.go checks that every field of every type
// survives the round trip, so a field added to core without a line here
// fails the tests.
//
// Empty slices, maps and byte strings become nil on the way back: proto3
// cannot tell them apart, and neither can the JSON that core serialises to
// (every such field is omitempty).

func raw(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	// Without room beyond its length, an append to the message copies it:
	// the requests to the plugins of one process share one decoded
	// construct set (requestCodec).
	return json.RawMessage(b[:len(b):len(b)])
}

func bytesOf(r json.RawMessage) []byte {
	if len(r) == 0 {
		return nil
	}
	return []byte(r)
}

// convMap maps a map's values, keeping nil for empty input.
func convMap[A, B any](m map[string]A, f func(A) B) map[string]B {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]B, len(m))
	for k, v := range m {
		out[k] = f(v)
	}
	return out
}

func rawMapToPB(m map[string]json.RawMessage) map[string][]byte {
	return convMap(m, func(v json.RawMessage) []byte { return v })
}

func rawMapFromPB(m map[string][]byte) map[string]json.RawMessage {
	return convMap(m, func(v []byte) json.RawMessage { return v[:len(v):len(v)] })
}

func strMap(m map[string]string) map[string]string {
	return convMap(m, func(v string) string { return v })
}

// Parameter sources travel in their "<stack>.<output>" form.
func sourcesToPB(m map[string]names.Source) map[string]string {
	return convMap(m, names.Source.String)
}

func sourcesFromPB(m map[string]string) map[string]names.Source {
	return convMap(m, names.ParseSource)
}

func strs(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return append([]string(nil), s...)
}

// convSlice maps a slice, keeping nil for empty input.
func convSlice[A, B any](in []A, f func(A) B) []B {
	if len(in) == 0 {
		return nil
	}
	out := make([]B, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

// ---- diagnostics ----

// DiagnosticToPB converts a diagnostic to the wire.
func DiagnosticToPB(d diag.Diagnostic) *pb.Diagnostic {
	return &pb.Diagnostic{
		Severity:      string(d.Severity),
		Plugin:        d.Plugin,
		Stage:         d.Stage,
		Path:          d.Path,
		File:          d.File,
		Line:          int32(d.Line),
		Column:        int32(d.Column),
		Message:       d.Message,
		Hint:          d.Hint,
		Code:          d.Code,
		ReportedBy:    d.ReportedBy,
		ConflictsWith: d.ConflictsWith,
	}
}

// DiagnosticFromPB converts a diagnostic from the wire.
func DiagnosticFromPB(d *pb.Diagnostic) diag.Diagnostic {
	if d == nil {
		return diag.Diagnostic{}
	}
	return diag.Diagnostic{
		Severity:      diag.Severity(d.GetSeverity()),
		Plugin:        d.GetPlugin(),
		Stage:         d.GetStage(),
		Path:          d.GetPath(),
		File:          d.GetFile(),
		Line:          int(d.GetLine()),
		Column:        int(d.GetColumn()),
		Message:       d.GetMessage(),
		Hint:          d.GetHint(),
		Code:          d.GetCode(),
		ReportedBy:    d.GetReportedBy(),
		ConflictsWith: d.GetConflictsWith(),
	}
}

func diagsToPB(l diag.List) []*pb.Diagnostic { return convSlice(l, DiagnosticToPB) }

func diagsFromPB(l []*pb.Diagnostic) diag.List {
	if len(l) == 0 {
		return nil
	}
	return diag.List(convSlice(l, DiagnosticFromPB))
}

// ---- plugin info, registration, events ----

// InfoToPB converts a plugin's self-description to the wire.
func InfoToPB(i stage.PluginInfo) *pb.PluginInfo {
	return &pb.PluginInfo{
		Name:             i.Name,
		Version:          i.Version,
		Description:      i.Description,
		ProtocolVersions: convSlice(i.ProtocolVersions, func(v int) int32 { return int32(v) }),
		Stages:           convSlice(i.Stages, func(n stage.Name) string { return string(n) }),
		ValuesSchemaJson: bytesOf(i.ValuesSchema),
		Capabilities:     strs(i.Capabilities),
		LateStacks:       strs(i.LateStacks),
		ReachesAws:       i.ReachesAWS,
	}
}

// InfoFromPB converts a plugin's self-description from the wire.
func InfoFromPB(i *pb.PluginInfo) stage.PluginInfo {
	return stage.PluginInfo{
		Name:             i.GetName(),
		Version:          i.GetVersion(),
		Description:      i.GetDescription(),
		ProtocolVersions: convSlice(i.GetProtocolVersions(), func(v int32) int { return int(v) }),
		Stages:           convSlice(i.GetStages(), func(s string) stage.Name { return stage.Name(s) }),
		ValuesSchema:     raw(i.GetValuesSchemaJson()),
		Capabilities:     strs(i.GetCapabilities()),
		LateStacks:       strs(i.GetLateStacks()),
		ReachesAWS:       i.GetReachesAws(),
	}
}

// EventToPB converts a stage event to the wire.
func EventToPB(e stage.Event) *pb.Event {
	out := &pb.Event{
		Kind:    string(e.Kind),
		Level:   e.Level,
		Message: e.Message,
		Current: e.Current,
		Total:   e.Total,
	}
	if e.Diagnostic != nil {
		out.Diagnostic = DiagnosticToPB(*e.Diagnostic)
	}
	return out
}

// EventFromPB converts a stage event from the wire.
func EventFromPB(e *pb.Event) stage.Event {
	out := stage.Event{
		Kind:    stage.EventKind(e.GetKind()),
		Level:   e.GetLevel(),
		Message: e.GetMessage(),
		Current: e.GetCurrent(),
		Total:   e.GetTotal(),
	}
	if e.GetDiagnostic() != nil {
		d := DiagnosticFromPB(e.GetDiagnostic())
		out.Diagnostic = &d
	}
	return out
}

// ---- stage input and result ----

// InputToPB converts a stage input to the wire. hostServiceID is the broker
// id on which the Host service is served for this call.
func InputToPB(in *stage.Input, hostServiceID uint32) *pb.StageRequest {
	if in == nil {
		return &pb.StageRequest{HostServiceId: hostServiceID}
	}
	req := &pb.StageRequest{
		Stage:         string(in.Stage),
		ConfigJson:    bytesOf(in.Config),
		Capabilities:  strMap(in.Capabilities),
		Constructs:    SetToPB(in.Constructs),
		Rendered:      renderedToPB(in.Rendered),
		Deploy:        deployToPB(in.Deploy),
		Secrets:       strMap(in.Secrets),
		WorkDir:       in.WorkDir,
		HostServiceId: hostServiceID,
		Aws:           awsToPB(in.AWS),
	}
	req.Values = valuesToPB(in.Values)
	return req
}

func valuesToPB(values map[string]stage.PluginValues) map[string]*pb.PluginValues {
	return convMap(values, func(v stage.PluginValues) *pb.PluginValues {
		return &pb.PluginValues{ValuesJson: bytesOf(v.Values), NodePoolsJson: rawMapToPB(v.NodePools)}
	})
}

// InputFromPB converts a stage input from the wire and returns the broker id
// of the Host service.
func InputFromPB(req *pb.StageRequest) (*stage.Input, uint32) {
	in := &stage.Input{
		Stage:        stage.Name(req.GetStage()),
		Config:       raw(req.GetConfigJson()),
		Capabilities: strMap(req.GetCapabilities()),
		Constructs:   SetFromPB(req.GetConstructs()),
		Rendered:     renderedFromPB(req.GetRendered()),
		Deploy:       deployFromPB(req.GetDeploy()),
		Secrets:      strMap(req.GetSecrets()),
		WorkDir:      req.GetWorkDir(),
		AWS:          awsFromPB(req.GetAws()),
	}
	if len(req.GetValues()) > 0 {
		in.Values = make(map[string]stage.PluginValues, len(req.GetValues()))
		for k, v := range req.GetValues() {
			in.Values[k] = stage.PluginValues{Values: raw(v.GetValuesJson()), NodePools: rawMapFromPB(v.GetNodePoolsJson())}
		}
	}
	return in, req.GetHostServiceId()
}

// ResultToPB converts a stage result to the wire.
func ResultToPB(r *stage.Result) *pb.StageResult {
	if r == nil {
		return &pb.StageResult{}
	}
	return &pb.StageResult{
		ValuesJson:      bytesOf(r.Values),
		Constructs:      SetToPB(r.Constructs),
		Files:           convSlice(r.Files, fileToPB),
		Stacks:          convSlice(r.Stacks, stackSpecToPB),
		Deploy:          deployToPB(r.Deploy),
		Diff:            diffToPB(r.Diff),
		Destroy:         destroyToPB(r.Destroy),
		Diagnostics:     diagsToPB(r.Diagnostics),
		AdminCredential: credentialToPB(r.AdminCredential),
	}
}

// ResultFromPB converts a stage result from the wire.
func ResultFromPB(r *pb.StageResult) *stage.Result {
	return &stage.Result{
		Values:          raw(r.GetValuesJson()),
		Constructs:      SetFromPB(r.GetConstructs()),
		Files:           convSlice(r.GetFiles(), fileFromPB),
		Stacks:          convSlice(r.GetStacks(), stackSpecFromPB),
		Deploy:          deployFromPB(r.GetDeploy()),
		Diff:            diffFromPB(r.GetDiff()),
		Destroy:         destroyFromPB(r.GetDestroy()),
		Diagnostics:     diagsFromPB(r.GetDiagnostics()),
		AdminCredential: credentialFromPB(r.GetAdminCredential()),
	}
}

func fileToPB(f stage.File) *pb.File {
	return &pb.File{Path: f.Path, Content: f.Content, Mode: f.Mode, Plugin: f.Plugin}
}

func fileFromPB(f *pb.File) stage.File {
	var content []byte
	if len(f.GetContent()) > 0 {
		content = f.GetContent()
	}
	return stage.File{Path: f.GetPath(), Content: content, Mode: f.GetMode(), Plugin: f.GetPlugin()}
}

func stackSpecToPB(s stage.StackSpec) *pb.StackSpec {
	return &pb.StackSpec{
		Name:             s.Name,
		Template:         s.Template,
		DependsOn:        strs(s.DependsOn),
		ParameterSources: sourcesToPB(s.ParameterSources),
		UploadByUrl:      s.UploadByURL,
		Tags:             strMap(s.Tags),
	}
}

func stackSpecFromPB(s *pb.StackSpec) stage.StackSpec {
	return stage.StackSpec{
		Name:             s.GetName(),
		Template:         s.GetTemplate(),
		DependsOn:        strs(s.GetDependsOn()),
		ParameterSources: sourcesFromPB(s.GetParameterSources()),
		UploadByURL:      s.GetUploadByUrl(),
		Tags:             strMap(s.GetTags()),
	}
}

func renderedToPB(r *stage.Rendered) *pb.Rendered {
	if r == nil {
		return nil
	}
	return &pb.Rendered{
		Dir: r.Dir,
		Files: convSlice(r.Files, func(f stage.ManifestFile) *pb.ManifestFile {
			return &pb.ManifestFile{Path: f.Path, Sha256: f.SHA256, Size: f.Size, Plugin: f.Plugin, Version: f.Version}
		}),
		Stacks: convSlice(r.Stacks, stackSpecToPB),
	}
}

func renderedFromPB(r *pb.Rendered) *stage.Rendered {
	if r == nil {
		return nil
	}
	return &stage.Rendered{
		Dir: r.GetDir(),
		Files: convSlice(r.GetFiles(), func(f *pb.ManifestFile) stage.ManifestFile {
			return stage.ManifestFile{Path: f.GetPath(), SHA256: f.GetSha256(), Size: f.GetSize(), Plugin: f.GetPlugin(), Version: f.GetVersion()}
		}),
		Stacks: convSlice(r.GetStacks(), stackSpecFromPB),
	}
}

func deployToPB(d *stage.DeployResult) *pb.DeployResult {
	if d == nil {
		return nil
	}
	return &pb.DeployResult{
		Stacks: convSlice(d.Stacks, func(s stage.StackStatus) *pb.StackStatus {
			return &pb.StackStatus{Name: s.Name, Id: s.ID, Status: s.Status, Outputs: strMap(s.Outputs), Changed: s.Changed}
		}),
		Outputs: strMap(d.Outputs),
	}
}

func deployFromPB(d *pb.DeployResult) *stage.DeployResult {
	if d == nil {
		return nil
	}
	return &stage.DeployResult{
		Stacks: convSlice(d.GetStacks(), func(s *pb.StackStatus) stage.StackStatus {
			return stage.StackStatus{Name: s.GetName(), ID: s.GetId(), Status: s.GetStatus(), Outputs: strMap(s.GetOutputs()), Changed: s.GetChanged()}
		}),
		Outputs: strMap(d.GetOutputs()),
	}
}

func awsToPB(a *stage.AWSSettings) *pb.AWSSettings {
	if a == nil {
		return nil
	}
	return &pb.AWSSettings{Profile: a.Profile, Region: a.Region, EndpointUrl: a.EndpointURL,
		TimeoutMillis: a.Timeout.Milliseconds(), Yes: a.Yes, ForceUnlock: a.ForceUnlock,
		AllowIssuerChange: a.AllowIssuerChange}
}

func awsFromPB(a *pb.AWSSettings) *stage.AWSSettings {
	if a == nil {
		return nil
	}
	return &stage.AWSSettings{Profile: a.GetProfile(), Region: a.GetRegion(), EndpointURL: a.GetEndpointUrl(),
		Timeout: time.Duration(a.GetTimeoutMillis()) * time.Millisecond, Yes: a.GetYes(), ForceUnlock: a.GetForceUnlock(),
		AllowIssuerChange: a.GetAllowIssuerChange()}
}

func diffToPB(d *stage.DiffResult) *pb.DiffResult {
	if d == nil {
		return nil
	}
	return &pb.DiffResult{
		Stacks: convSlice(d.Stacks, func(s stage.StackDiff) *pb.StackDiff {
			return &pb.StackDiff{Stack: s.Stack, StackName: s.StackName, Status: s.Status, Action: s.Action,
				Changes: convSlice(s.Changes, func(c stage.ResourceChange) *pb.ResourceChange {
					return &pb.ResourceChange{Action: c.Action, LogicalId: c.LogicalID, PhysicalId: c.PhysicalID,
						ResourceType: c.ResourceType, Replacement: c.Replacement}
				})}
		}),
		Orphans: strs(d.Orphans),
		Changed: d.Changed,
		Machines: convSlice(d.Machines, func(m stage.MachineDiff) *pb.MachineDiff {
			return &pb.MachineDiff{Stack: m.Stack, Role: m.Role, Group: m.Group, InstanceId: m.InstanceID, Address: m.Address, Reasons: strs(m.Reasons)}
		}),
	}
}

func diffFromPB(d *pb.DiffResult) *stage.DiffResult {
	if d == nil {
		return nil
	}
	out := &stage.DiffResult{
		Stacks: convSlice(d.GetStacks(), func(s *pb.StackDiff) stage.StackDiff {
			return stage.StackDiff{Stack: s.GetStack(), StackName: s.GetStackName(), Status: s.GetStatus(), Action: s.GetAction(),
				Changes: convSlice(s.GetChanges(), func(c *pb.ResourceChange) stage.ResourceChange {
					return stage.ResourceChange{Action: c.GetAction(), LogicalID: c.GetLogicalId(), PhysicalID: c.GetPhysicalId(),
						ResourceType: c.GetResourceType(), Replacement: c.GetReplacement()}
				})}
		}),
		Orphans: strs(d.GetOrphans()),
		Changed: d.GetChanged(),
		Machines: convSlice(d.GetMachines(), func(m *pb.MachineDiff) stage.MachineDiff {
			return stage.MachineDiff{Stack: m.GetStack(), Role: m.GetRole(), Group: m.GetGroup(), InstanceID: m.GetInstanceId(), Address: m.GetAddress(), Reasons: strs(m.GetReasons())}
		}),
	}
	if out.Stacks == nil {
		out.Stacks = []stage.StackDiff{} // "stacks" is always in the JSON
	}
	return out
}

func destroyToPB(d *stage.DestroyResult) *pb.DestroyResult {
	if d == nil {
		return nil
	}
	return &pb.DestroyResult{Deleted: strs(d.Deleted), Absent: strs(d.Absent), Orphans: strs(d.Orphans)}
}

func destroyFromPB(d *pb.DestroyResult) *stage.DestroyResult {
	if d == nil {
		return nil
	}
	return &stage.DestroyResult{Deleted: strs(d.GetDeleted()), Absent: strs(d.GetAbsent()), Orphans: strs(d.GetOrphans())}
}

func credentialToPB(c *stage.Credential) *pb.Credential {
	if c == nil {
		return nil
	}
	return &pb.Credential{CaCertPem: c.CACert, CertPem: c.Cert, KeyPem: c.Key}
}

func credentialFromPB(c *pb.Credential) *stage.Credential {
	if c == nil {
		return nil
	}
	return &stage.Credential{CACert: c.GetCaCertPem(), Cert: c.GetCertPem(), Key: c.GetKeyPem()}
}

// ---- constructs ----

func targetToPB(t construct.Target) *pb.Target {
	return &pb.Target{Role: string(t.Role), NodePool: t.NodePool}
}

func targetFromPB(t *pb.Target) construct.Target {
	return construct.Target{Role: construct.Role(t.GetRole()), NodePool: t.GetNodePool()}
}

func flagToPB(f construct.Flag) *pb.Flag {
	return &pb.Flag{Name: f.Name, Value: f.Value, Plugin: f.Plugin}
}

func flagFromPB(f *pb.Flag) construct.Flag {
	return construct.Flag{Name: f.GetName(), Value: f.GetValue(), Plugin: f.GetPlugin()}
}

// SetToPB converts a construct set to the wire; nil stays nil.
func SetToPB(s *construct.Set) *pb.ConstructSet {
	if s == nil {
		return nil
	}
	out := &pb.ConstructSet{
		Stacks: convSlice(s.Stacks, func(st construct.Stack) *pb.Stack {
			return &pb.Stack{
				Name:             st.Name,
				Description:      st.Description,
				DependsOn:        strs(st.DependsOn),
				ResourcesJson:    rawMapToPB(st.Resources),
				OutputsJson:      rawMapToPB(st.Outputs),
				ParametersJson:   rawMapToPB(st.Parameters),
				ConditionsJson:   rawMapToPB(st.Conditions),
				MappingsJson:     rawMapToPB(st.Mappings),
				Tags:             strMap(st.Tags),
				ParameterSources: sourcesToPB(st.ParameterSources),
				Plugin:           st.Plugin,
				Renderer:         st.Renderer,
			}
		}),
		Patches: convSlice(s.Patches, func(p construct.Patch) *pb.Patch {
			return &pb.Patch{Stack: p.Stack, LogicalId: p.LogicalID, MergeJson: bytesOf(p.Merge),
				OperationsJson: bytesOf(p.Operations), Plugin: p.Plugin}
		}),
		Protected: convSlice(s.Protected, func(p construct.Protected) *pb.Protected {
			return &pb.Protected{Stack: p.Stack, LogicalId: p.LogicalID, Pointer: p.Pointer, Reason: p.Reason, Plugin: p.Plugin}
		}),
		Units: convSlice(s.Units, func(u construct.Unit) *pb.Unit {
			return &pb.Unit{
				Target:  targetToPB(u.Target),
				Name:    u.Name,
				Content: u.Content,
				Enable:  u.Enable,
				DropIns: convSlice(u.DropIns, func(d construct.DropIn) *pb.DropIn {
					return &pb.DropIn{Name: d.Name, Content: d.Content, Plugin: d.Plugin}
				}),
				Plugin: u.Plugin,
			}
		}),
		Files: convSlice(s.Files, func(f construct.File) *pb.FileConstruct {
			return &pb.FileConstruct{Target: targetToPB(f.Target), Path: f.Path, Mode: f.Mode, Owner: f.Owner, Content: f.Content, Sensitive: f.Sensitive, Format: f.Format, Plugin: f.Plugin}
		}),
		KubeletFlags: convSlice(s.KubeletFlags, func(f construct.TargetedFlag) *pb.TargetedFlag {
			return &pb.TargetedFlag{Target: targetToPB(f.Target), Flag: flagToPB(f.Flag)}
		}),
		NodeLabels: convSlice(s.NodeLabels, func(l construct.NodeLabel) *pb.NodeLabel {
			return &pb.NodeLabel{Target: targetToPB(l.Target), Key: l.Key, Value: l.Value, Plugin: l.Plugin}
		}),
		NodeTaints: convSlice(s.NodeTaints, func(l construct.NodeTaint) *pb.NodeTaint {
			return &pb.NodeTaint{Target: targetToPB(l.Target), Key: l.Key, Value: l.Value, Effect: l.Effect, Plugin: l.Plugin}
		}),
		Iam: convSlice(s.IAM, iamToPB),
		PodMetadata: convSlice(s.PodMetadata, func(r construct.PodMetadataAccess) *pb.PodMetadataAccess {
			return &pb.PodMetadataAccess{Target: targetToPB(r.Target), Reason: r.Reason, Plugin: r.Plugin}
		}),
		PodRoles: convSlice(s.PodRoles, func(r construct.PodRole) *pb.PodRole {
			return &pb.PodRole{Name: r.Name, ServiceAccounts: strs(r.ServiceAccounts), Statements: convSlice(r.Statements, iamToPB), Reason: r.Reason, Plugin: r.Plugin}
		}),
		HelmReleases: convSlice(s.HelmReleases, func(h construct.HelmRelease) *pb.HelmRelease {
			return &pb.HelmRelease{
				Name:      h.Name,
				Namespace: h.Namespace,
				Chart: &pb.Chart{
					Path:       h.Chart.Path,
					Repository: h.Chart.Repository,
					Name:       h.Chart.Name,
					Version:    h.Chart.Version,
				},
				ValuesJson: bytesOf(h.Values),
				Plugin:     h.Plugin,
				ValuesFrom: h.ValuesFrom,
			}
		}),
		Manifests: convSlice(s.Manifests, func(m construct.Manifest) *pb.Manifest {
			return &pb.Manifest{Name: m.Name, Content: m.Content, Plugin: m.Plugin}
		}),
		Artifacts: convSlice(s.Artifacts, artifactToPB),
	}
	if len(s.APIServer.Flags) > 0 || len(s.APIServer.Volumes) > 0 {
		out.ApiServer = &pb.APIServer{
			Flags: convSlice(s.APIServer.Flags, flagToPB),
			Volumes: convSlice(s.APIServer.Volumes, func(v construct.Volume) *pb.Volume {
				return &pb.Volume{Name: v.Name, HostPath: v.HostPath, MountPath: v.MountPath, ReadOnly: v.ReadOnly}
			}),
		}
	}
	return out
}

// SetFromPB converts a construct set from the wire; nil stays nil.
func SetFromPB(s *pb.ConstructSet) *construct.Set {
	if s == nil {
		return nil
	}
	return &construct.Set{
		Stacks: convSlice(s.GetStacks(), func(st *pb.Stack) construct.Stack {
			return construct.Stack{
				Name:             st.GetName(),
				Description:      st.GetDescription(),
				DependsOn:        strs(st.GetDependsOn()),
				Resources:        rawMapFromPB(st.GetResourcesJson()),
				Outputs:          rawMapFromPB(st.GetOutputsJson()),
				Parameters:       rawMapFromPB(st.GetParametersJson()),
				Conditions:       rawMapFromPB(st.GetConditionsJson()),
				Mappings:         rawMapFromPB(st.GetMappingsJson()),
				Tags:             strMap(st.GetTags()),
				ParameterSources: sourcesFromPB(st.GetParameterSources()),
				Plugin:           st.GetPlugin(),
				Renderer:         st.GetRenderer(),
			}
		}),
		Patches: convSlice(s.GetPatches(), func(p *pb.Patch) construct.Patch {
			return construct.Patch{Stack: p.GetStack(), LogicalID: p.GetLogicalId(), Merge: raw(p.GetMergeJson()),
				Operations: raw(p.GetOperationsJson()), Plugin: p.GetPlugin()}
		}),
		Protected: convSlice(s.GetProtected(), func(p *pb.Protected) construct.Protected {
			return construct.Protected{Stack: p.GetStack(), LogicalID: p.GetLogicalId(), Pointer: p.GetPointer(), Reason: p.GetReason(), Plugin: p.GetPlugin()}
		}),
		Units: convSlice(s.GetUnits(), func(u *pb.Unit) construct.Unit {
			return construct.Unit{
				Target:  targetFromPB(u.GetTarget()),
				Name:    u.GetName(),
				Content: u.GetContent(),
				Enable:  u.GetEnable(),
				DropIns: convSlice(u.GetDropIns(), func(d *pb.DropIn) construct.DropIn {
					return construct.DropIn{Name: d.GetName(), Content: d.GetContent(), Plugin: d.GetPlugin()}
				}),
				Plugin: u.GetPlugin(),
			}
		}),
		Files: convSlice(s.GetFiles(), func(f *pb.FileConstruct) construct.File {
			return construct.File{Target: targetFromPB(f.GetTarget()), Path: f.GetPath(), Mode: f.GetMode(), Owner: f.GetOwner(), Content: f.GetContent(), Sensitive: f.GetSensitive(), Format: f.GetFormat(), Plugin: f.GetPlugin()}
		}),
		APIServer: construct.APIServer{
			Flags: convSlice(s.GetApiServer().GetFlags(), flagFromPB),
			Volumes: convSlice(s.GetApiServer().GetVolumes(), func(v *pb.Volume) construct.Volume {
				return construct.Volume{Name: v.GetName(), HostPath: v.GetHostPath(), MountPath: v.GetMountPath(), ReadOnly: v.GetReadOnly()}
			}),
		},
		KubeletFlags: convSlice(s.GetKubeletFlags(), func(f *pb.TargetedFlag) construct.TargetedFlag {
			return construct.TargetedFlag{Target: targetFromPB(f.GetTarget()), Flag: flagFromPB(f.GetFlag())}
		}),
		NodeLabels: convSlice(s.GetNodeLabels(), func(l *pb.NodeLabel) construct.NodeLabel {
			return construct.NodeLabel{Target: targetFromPB(l.GetTarget()), Key: l.GetKey(), Value: l.GetValue(), Plugin: l.GetPlugin()}
		}),
		NodeTaints: convSlice(s.GetNodeTaints(), func(l *pb.NodeTaint) construct.NodeTaint {
			return construct.NodeTaint{Target: targetFromPB(l.GetTarget()), Key: l.GetKey(), Value: l.GetValue(), Effect: l.GetEffect(), Plugin: l.GetPlugin()}
		}),
		IAM: convSlice(s.GetIam(), iamFromPB),
		PodMetadata: convSlice(s.GetPodMetadata(), func(r *pb.PodMetadataAccess) construct.PodMetadataAccess {
			return construct.PodMetadataAccess{Target: targetFromPB(r.GetTarget()), Reason: r.GetReason(), Plugin: r.GetPlugin()}
		}),
		PodRoles: convSlice(s.GetPodRoles(), func(r *pb.PodRole) construct.PodRole {
			return construct.PodRole{Name: r.GetName(), ServiceAccounts: strs(r.GetServiceAccounts()), Statements: convSlice(r.GetStatements(), iamFromPB), Reason: r.GetReason(), Plugin: r.GetPlugin()}
		}),
		HelmReleases: convSlice(s.GetHelmReleases(), func(h *pb.HelmRelease) construct.HelmRelease {
			c := h.GetChart()
			return construct.HelmRelease{
				Name:       h.GetName(),
				Namespace:  h.GetNamespace(),
				Chart:      construct.Chart{Path: c.GetPath(), Repository: c.GetRepository(), Name: c.GetName(), Version: c.GetVersion()},
				Values:     raw(h.GetValuesJson()),
				Plugin:     h.GetPlugin(),
				ValuesFrom: h.GetValuesFrom(),
			}
		}),
		Manifests: convSlice(s.GetManifests(), func(m *pb.Manifest) construct.Manifest {
			return construct.Manifest{Name: m.GetName(), Content: m.GetContent(), Plugin: m.GetPlugin()}
		}),
		Artifacts: convSlice(s.GetArtifacts(), artifactFromPB),
	}
}

func artifactToPB(a construct.Artifact) *pb.Artifact {
	out := &pb.Artifact{
		Target: targetToPB(a.Target), Name: a.Name, Version: a.Version, Kind: string(a.Kind),
		Reference: a.Reference, Plugin: a.Plugin,
		Files: convSlice(a.Files, func(f construct.ArtifactFile) *pb.ArtifactFile {
			return &pb.ArtifactFile{Name: f.Name, Path: f.Path, Mode: f.Mode}
		}),
	}
	if a.Sources != nil {
		out.Sources = make(map[string]*pb.ArtifactSource, len(a.Sources))
		for arch, s := range a.Sources {
			out.Sources[arch] = &pb.ArtifactSource{Url: s.URL, Sha256: s.SHA256, Members: s.Members, Digest: s.Digest, Mirrored: s.Mirrored}
		}
	}
	return out
}

func artifactFromPB(a *pb.Artifact) construct.Artifact {
	out := construct.Artifact{
		Target: targetFromPB(a.GetTarget()), Name: a.GetName(), Version: a.GetVersion(), Kind: construct.ArtifactKind(a.GetKind()),
		Reference: a.GetReference(), Plugin: a.GetPlugin(),
		Files: convSlice(a.GetFiles(), func(f *pb.ArtifactFile) construct.ArtifactFile {
			return construct.ArtifactFile{Name: f.GetName(), Path: f.GetPath(), Mode: f.GetMode()}
		}),
	}
	if len(a.GetSources()) > 0 {
		out.Sources = make(map[string]construct.ArtifactSource, len(a.GetSources()))
		for arch, s := range a.GetSources() {
			out.Sources[arch] = construct.ArtifactSource{URL: s.GetUrl(), SHA256: s.GetSha256(), Members: nilIfEmpty(s.GetMembers()),
				Digest: s.GetDigest(), Mirrored: nilIfEmpty(s.GetMirrored())}
		}
	}
	return out
}

// nilIfEmpty keeps an empty map nil, as JSON and protobuf both leave it, and
// copies any other: the requests to the plugins of one process share one
// decoded construct set (requestCodec).
func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

func iamToPB(st construct.IAMStatement) *pb.IAMStatement {
	return &pb.IAMStatement{
		Target:        targetToPB(st.Target),
		Sid:           st.Sid,
		Effect:        st.Effect,
		Actions:       strs(st.Actions),
		Resources:     strs(st.Resources),
		ConditionJson: bytesOf(st.Condition),
		Plugin:        st.Plugin,
	}
}

func iamFromPB(st *pb.IAMStatement) construct.IAMStatement {
	return construct.IAMStatement{
		Target:    targetFromPB(st.GetTarget()),
		Sid:       st.GetSid(),
		Effect:    st.GetEffect(),
		Actions:   strs(st.GetActions()),
		Resources: strs(st.GetResources()),
		Condition: raw(st.GetConditionJson()),
		Plugin:    st.GetPlugin(),
	}
}
