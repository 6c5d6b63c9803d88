// Package merge combines the constructs every plugin returns from the
// initialise stage into one construct.Set, the input of every later stage.
//
// Plugins run concurrently on identical input, so nothing one plugin does can
// depend on what another did; the merge is where their contributions meet.
// Its rules (ARCHITECTURE.md, "Constructs and how they merge"):
//
//   - Two plugins that define the same thing (a CloudFormation logical ID in
//     the same section of the same stack, a stack tag or parameter source, a
//     systemd unit or drop-in, a file, a single-valued flag, an API server
//     volume, a node label or taint, an IAM statement Sid on one target, a
//     Helm release, a manifest) is accepted when both definitions are
//     identical (JSON compared semantically: key order, whitespace and number
//     spelling do not count) and is otherwise a fatal diagnostic that names
//     both plugins and what each set. Plugin order never silently decides a
//     conflict: swapping two plugins gives the same fatal.
//   - Stacks of the same name merge section by section; DependsOn is an
//     ordered set and the first non-empty Description describes the stack.
//   - List-valued flags (construct.ListValuedAPIServerFlags,
//     construct.ListValuedKubeletFlags) merge as ordered sets: split on
//     commas, first-seen order, duplicates dropped. In key=value lists
//     (feature-gates, runtime-config, node-labels) two values for one key
//     conflict, since the command line would let the last one win; an
//     admission plugin that one plugin enables and another disables
//     conflicts too.
//   - A unit entry without content adds drop-ins to the unit of that name,
//     and its Enable can only switch enabling on; two entries with content
//     must agree on content and Enable.
//   - IAM statements are concatenated in plugin order with exact duplicates
//     dropped.
//   - A pod role (construct.PodRole) is known by its name: two definitions
//     must be identical (service accounts and statements), else a fatal
//     names both plugins.
//   - A unit, drop-in, file or IAM statement Sid for every worker and the
//     same one for a single pool overlap on that pool: identical is fine (the
//     pool's copy is dropped), different is a conflict, as for one target.
//     Kubelet flags, node labels and taints are the exception: there the
//     more specific target wins on its pool, by design (docs/design.md).
//   - Patches (JSON merge patches, RFC 7386, applied with json-patch's
//     MergePatch) apply after everything else has merged, in plugin order; a
//     patch may not change a protected path (the pointer, anything under it,
//     or an object above it) or a resource's Type, and must name a resource
//     that exists. A refused patch is not applied. An RFC 6902 append to a
//     keyed list (KeyedLists: tags by Key...) sets the item of its key: the
//     same item twice is kept once, and two values for one key, from two
//     plugins or against the resource's maker, are a conflict naming both,
//     since CloudFormation refuses the list.
//   - A plugin may render a stack late (Options.Late: the iam plugin builds
//     the iam stack's roles in render, from the merged IAM statements).
//     Contributions to such a stack stay in the merged set, one entry per
//     contributing plugin (construct.Stack.Renderer names the renderer),
//     and patches to resources no plugin contributed are carried in the
//     set's Patches; the renderer folds both into the stack it builds with
//     Late, which applies the same rules. No plugin or stack name is known
//     to this package.
//   - An artifact (a pinned binary release or image) is known by its name:
//     every contribution of one name, for any target, must be the same
//     release (identical but for the target), else a fatal names both
//     plugins; one entry per target is kept.
//   - Every merged construct names the plugin that contributed it (its
//     Plugin field), whatever the plugin itself put there, so that a later
//     stage can name the owner of what it finds wrong.
//
// Every conflict is reported, not just the first, so one run shows the user
// every problem. Each is a fatal of the initialise stage, blamed on the later
// plugin and naming the other (diag.Diagnostic.ConflictsWith), with a path
// such as constructs.stacks[network].resources.VPC (for
// a patch, constructs.patches[i], i counting in that plugin's patches).
//
// The merged set is deterministic for the same input: merged slices are in
// plugin order, and within one plugin in name order (except IAM statements,
// Helm releases and manifests, whose order within a plugin is install order
// and is kept). Inputs are never modified and the result shares no memory
// with them. When Merge reports a fatal, the merged set keeps the earlier
// plugin's definition of each conflicting item and is only good for showing
// what was merged.
package merge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
)

// Contribution is one plugin's constructs, in plugin order.
type Contribution struct {
	Plugin string
	Set    *construct.Set
}

// Options are what a merge needs to know besides the contributions.
type Options struct {
	// Late lists the stacks plugins render late (stage.PluginInfo.LateStacks),
	// in plugin order.
	Late []LateStacks
}

// LateStacks are the stacks one plugin renders late.
type LateStacks struct {
	Plugin string
	Stacks []string
}

// Merge is MergeWith without late stacks.
func Merge(contribs []Contribution) (*construct.Set, diag.List) {
	return MergeWith(contribs, Options{})
}

// MergeWith merges contributions in order and returns the merged set plus
// every conflict found (all of them, not the first). The merged set carries
// the accumulated protected paths, and of the patches only those aimed at
// a resource of a late stack that no plugin contributed, in plugin order:
// every other patch has been applied to the resource it targets.
func MergeWith(contribs []Contribution, opts Options) (*construct.Set, diag.List) {
	m := newMerger(contribs)
	for i, c := range contribs {
		m.pluginIndex[c.Plugin] = i
	}
	m.setLate(opts.Late)
	for _, c := range contribs {
		if c.Set != nil {
			m.add(c.Plugin, c.Set)
		}
	}
	m.checkAdmissionPlugins()
	m.applyPatches()
	m.checkOverlaps()
	return m.result(), m.diags
}

// setLate records which plugin renders which stack late; two plugins
// claiming one stack is a conflict like any other.
func (m *merger) setLate(late []LateStacks) {
	m.late = map[string]string{}
	for _, l := range late {
		for _, st := range l.Stacks {
			if prev, ok := m.late[st]; ok && prev != l.Plugin {
				m.conflictLater(prev, l.Plugin, "lateStacks",
					fmt.Sprintf("stack %q is rendered late by %s: only one plugin can build a stack", st, by(prev, l.Plugin)),
					fmt.Sprintf("disable one of %q and %q", prev, l.Plugin))
				continue
			}
			m.late[st] = l.Plugin
		}
	}
}

// later is the one of two plugins that comes later in plugin order: the one
// a conflict is blamed on.
func (m *merger) later(a, b string) string {
	if m.pluginIndex[a] > m.pluginIndex[b] {
		return a
	}
	return b
}

type merger struct {
	diags       diag.List
	slab        []byte
	pluginIndex map[string]int

	stacks      []*stackAcc
	stackByName map[string]*stackAcc

	late map[string]string // late stack -> the plugin that renders it

	patches       []pendingPatch
	deferred      []construct.Patch // to resources of late stacks not yet made, carried to render
	protected     []protectedAcc
	protectedSeen map[protectedKey]bool

	units     []*unitAcc
	unitByKey map[targetName]*unitAcc

	files     []*fileAcc
	fileByKey map[targetName]*fileAcc

	apiFlags     flagSet
	kubeletFlags flagSet

	volumes     []*volumeAcc
	volumeByKey map[string]*volumeAcc

	labels     []*labelAcc
	labelByKey map[targetName]*labelAcc
	taints     []*taintAcc
	taintByKey map[taintKey]*taintAcc

	iam        []iamAcc
	iamSeen    map[string]bool
	podMeta    []construct.PodMetadataAccess
	podMetaBy  map[podMetaKey]bool
	podRoles   []podRoleAcc
	podRoleBy  map[string]int
	iamBySid   map[targetName]int
	helm       []*helmAcc
	helmByKey  map[[2]string]*helmAcc
	manifests  []*manifestAcc
	manifestBy map[string]*manifestAcc

	artifacts      []artifactAcc
	artifactByName map[string]*artifactAcc
	artifactSeen   map[targetName]bool
}

// targetName keys everything that is per target: a unit, a file, a flag.
type targetName struct {
	target construct.Target
	name   string
}

// newMerger sizes its indexes from the totals of all contributions: with
// hundreds of node pools, growing maps is a visible part of a merge.
func newMerger(contribs []Contribution) *merger {
	var stacks, units, files, kubelet, labels, iam int
	for _, c := range contribs {
		if s := c.Set; s != nil {
			stacks += len(s.Stacks)
			units += len(s.Units)
			files += len(s.Files)
			kubelet += len(s.KubeletFlags)
			labels += len(s.NodeLabels)
			iam += len(s.IAM)
		}
	}
	return &merger{
		pluginIndex:   make(map[string]int, len(contribs)),
		stackByName:   make(map[string]*stackAcc, stacks),
		protectedSeen: map[protectedKey]bool{},
		unitByKey:     make(map[targetName]*unitAcc, units),
		fileByKey:     make(map[targetName]*fileAcc, files),
		apiFlags:      newFlagSet(construct.ListValuedAPIServerFlags, false, 0),
		kubeletFlags:  newFlagSet(construct.ListValuedKubeletFlags, true, kubelet),
		volumeByKey:   map[string]*volumeAcc{},
		labelByKey:    make(map[targetName]*labelAcc, labels),
		taintByKey:    map[taintKey]*taintAcc{},
		iamSeen:       make(map[string]bool, iam),
		iamBySid:      map[targetName]int{},
		podMetaBy:     map[podMetaKey]bool{},
		podRoleBy:     map[string]int{},
		helmByKey:     map[[2]string]*helmAcc{},
		manifestBy:    map[string]*manifestAcc{},

		artifactByName: map[string]*artifactAcc{},
		artifactSeen:   map[targetName]bool{},
	}
}

// add merges one plugin's set into the accumulated result.
func (m *merger) add(plugin string, s *construct.Set) {
	for _, i := range sortedIndex(len(s.Stacks), func(i int) string { return s.Stacks[i].Name }) {
		m.addStack(plugin, &s.Stacks[i], checkBodies)
	}
	for i, p := range s.Patches {
		m.patches = append(m.patches, pendingPatch{plugin: plugin, index: i, patch: p})
	}
	for i, p := range s.Protected {
		m.addProtected(plugin, i, p)
	}
	for _, i := range sortedIndex(len(s.Units), func(i int) string { return targetKey(s.Units[i].Target, s.Units[i].Name) }) {
		m.addUnit(plugin, &s.Units[i])
	}
	for _, i := range sortedIndex(len(s.Files), func(i int) string { return targetKey(s.Files[i].Target, s.Files[i].Path) }) {
		m.addFile(plugin, &s.Files[i])
	}
	for _, i := range sortedIndex(len(s.APIServer.Flags), func(i int) string { return normFlagName(s.APIServer.Flags[i].Name) }) {
		m.addFlag(&m.apiFlags, plugin, construct.Target{}, s.APIServer.Flags[i])
	}
	for _, i := range sortedIndex(len(s.APIServer.Volumes), func(i int) string { return s.APIServer.Volumes[i].Name }) {
		m.addVolume(plugin, s.APIServer.Volumes[i])
	}
	for _, i := range sortedIndex(len(s.KubeletFlags), func(i int) string {
		return targetKey(s.KubeletFlags[i].Target, normFlagName(s.KubeletFlags[i].Name))
	}) {
		m.addFlag(&m.kubeletFlags, plugin, s.KubeletFlags[i].Target, s.KubeletFlags[i].Flag)
	}
	for _, i := range sortedIndex(len(s.NodeLabels), func(i int) string { return targetKey(s.NodeLabels[i].Target, s.NodeLabels[i].Key) }) {
		m.addLabel(plugin, s.NodeLabels[i])
	}
	for _, i := range sortedIndex(len(s.NodeTaints), func(i int) string {
		t := s.NodeTaints[i]
		return targetKey(t.Target, t.Key+"\x00"+t.Effect)
	}) {
		m.addTaint(plugin, s.NodeTaints[i])
	}
	for i := range s.IAM {
		m.addIAM(plugin, i, s.IAM[i])
	}
	for _, r := range s.PodMetadata {
		m.addPodMetadata(plugin, r)
	}
	for _, i := range sortedIndex(len(s.PodRoles), func(i int) string { return s.PodRoles[i].Name }) {
		m.addPodRole(plugin, s.PodRoles[i])
	}
	for i := range s.HelmReleases {
		m.addHelm(plugin, i, s.HelmReleases[i])
	}
	for i := range s.Manifests {
		m.addManifest(plugin, s.Manifests[i])
	}
	for _, i := range sortedIndex(len(s.Artifacts), func(i int) string { return targetKey(s.Artifacts[i].Target, s.Artifacts[i].Name) }) {
		m.addArtifact(plugin, s.Artifacts[i])
	}
}

// result assembles the merged set from the accumulators.
func (m *merger) result() *construct.Set {
	out := &construct.Set{}
	for _, st := range m.stacks {
		if r := m.late[st.s.Name]; r != "" {
			entries := st.byOwner(r, m.pluginIndex)
			if len(entries) == 0 {
				entries = []construct.Stack{{Name: st.s.Name, Plugin: r, Renderer: r}}
			}
			out.Stacks = append(out.Stacks, entries...)
			continue
		}
		out.Stacks = append(out.Stacks, st.s)
	}
	// A late stack nobody contributed to is still there, so that a later
	// stage knows it exists (a parameter source may name it) and who makes it.
	for _, st := range sortedKeys(m.late) {
		if m.stackByName[st] == nil {
			out.Stacks = append(out.Stacks, construct.Stack{Name: st, Plugin: m.late[st], Renderer: m.late[st]})
		}
	}
	out.Patches = m.deferred
	for _, p := range m.protected {
		pr := p.p
		pr.Plugin = p.owner
		out.Protected = append(out.Protected, pr)
	}
	for _, u := range m.units {
		if !u.dropped() {
			out.Units = append(out.Units, u.unit())
		}
	}
	for _, f := range m.files {
		if !f.dropped {
			out.Files = append(out.Files, f.file())
		}
	}
	out.APIServer.Flags = m.apiFlags.flags()
	for _, v := range m.volumes {
		out.APIServer.Volumes = append(out.APIServer.Volumes, v.v)
	}
	for _, f := range m.kubeletFlags.order {
		out.KubeletFlags = append(out.KubeletFlags, construct.TargetedFlag{Target: f.target, Flag: f.flag()})
	}
	for _, l := range m.labels {
		nl := l.l
		nl.Plugin = l.owner
		out.NodeLabels = append(out.NodeLabels, nl)
	}
	for _, t := range m.taints {
		nt := t.t
		nt.Plugin = t.owner
		out.NodeTaints = append(out.NodeTaints, nt)
	}
	for _, s := range m.iam {
		st := s.s
		st.Plugin = s.owner
		out.IAM = append(out.IAM, st)
	}
	out.PodMetadata = m.podMeta
	for _, r := range m.podRoles {
		out.PodRoles = append(out.PodRoles, r.r)
	}
	for _, h := range m.helm {
		out.HelmReleases = append(out.HelmReleases, h.h)
	}
	for _, x := range m.manifests {
		mf := x.m
		mf.Plugin = x.owner
		out.Manifests = append(out.Manifests, mf)
	}
	for _, a := range m.artifacts {
		out.Artifacts = append(out.Artifacts, a.a)
	}
	return out
}

// fatal records a merge conflict. Plugin is the later plugin: the one whose
// contribution could not be merged.
func (m *merger) fatal(plugin, path, msg, hint string) {
	m.diags = append(m.diags, fatalDiag(plugin, path, msg, hint))
}

// conflict records a conflict between two plugins: blamed on plugin, the
// later one, whose contribution could not be merged, and naming other, so
// that the heading of the fatal shows both.
func (m *merger) conflict(plugin, other, path, msg, hint string) {
	m.diags = append(m.diags, fatalDiag(plugin, path, msg, hint).ConflictWith(other))
}

// conflictLater records a conflict between plugins a and b, blamed on the
// later of the two in plugin order.
func (m *merger) conflictLater(a, b, path, msg, hint string) {
	if m.later(a, b) == a {
		a, b = b, a
	}
	m.conflict(b, a, path, msg, hint)
}

func fatalDiag(plugin, path, msg, hint string) diag.Diagnostic {
	return diag.Diagnostic{
		Severity: diag.Fatal,
		Plugin:   plugin,
		Stage:    string(stage.Initialise),
		Path:     path,
		Message:  msg,
		Hint:     hint,
	}
}

// by names who set something twice: two plugins, or one plugin twice.
func by(first, second string) string {
	if first == second {
		return fmt.Sprintf("plugin %q twice", first)
	}
	return fmt.Sprintf("plugins %q and %q", first, second)
}

// resolveHint is the advice for two plugins that set one thing differently.
func resolveHint(first, second, what string) string {
	if first == second {
		return fmt.Sprintf("plugin %q contributes %s twice with different values: keep one", first, what)
	}
	return fmt.Sprintf("remove %s from one of %q and %q, or make both set the same value (through the plugins' values in cluster.yaml)", what, first, second)
}

func targetKey(t construct.Target, name string) string {
	return string(t.Role) + "\x00" + t.NodePool + "\x00" + name
}

// sortedIndex returns the indexes 0..n-1 ordered by key, stably, so a
// plugin's contribution merges in name order without reordering its slice.
func sortedIndex(n int, key func(int) string) []int {
	idx := make([]int, n)
	keys := make([]string, n)
	sorted := true
	for i := range idx {
		idx[i] = i
		keys[i] = key(i)
		if i > 0 && keys[i] < keys[i-1] {
			sorted = false
		}
	}
	if !sorted {
		sort.SliceStable(idx, func(a, b int) bool { return keys[idx[a]] < keys[idx[b]] })
	}
	return idx
}

func cloneRaw(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	return append(json.RawMessage(nil), b...)
}

// slabSize is the unit in which copies of resource bodies are allocated:
// one allocation for many small bodies instead of one each.
const slabSize = 64 << 10

// copyRaw copies b into the merger's slab. The copy's capacity ends at its
// length, so appending to it never writes into the next body.
func (m *merger) copyRaw(b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	if len(b) > slabSize/4 {
		return cloneRaw(b)
	}
	if cap(m.slab)-len(m.slab) < len(b) {
		m.slab = make([]byte, 0, slabSize)
	}
	start := len(m.slab)
	m.slab = append(m.slab, b...)
	return json.RawMessage(m.slab[start:len(m.slab):len(m.slab)])
}

func cloneStrings(s []string) []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s...)
}

func isBlank(b []byte) bool { return len(bytes.TrimSpace(b)) == 0 }
