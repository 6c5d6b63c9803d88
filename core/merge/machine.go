package merge

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/nodeplan"
)

// unitAcc is a systemd unit being merged. A unit entry with content defines
// the unit; an entry without content only adds drop-ins (and may ask for the
// unit to be enabled) to a unit defined by another plugin or by the OS.
type unitAcc struct {
	target       construct.Target
	name         string
	first        string // the first plugin with an entry for the unit
	content      string
	contentOwner string // "" while no plugin has defined the unit itself
	enable       bool   // Enable of the plugin that defined the unit
	// enableByDropIn: a drop-ins-only entry asked for the unit to be enabled.
	// Enabling only ever adds, so OR-ing it in is independent of order.
	enableByDropIn bool
	dropIns        map[string]*dropInAcc
}

type dropInAcc struct {
	content, owner string
}

func unitPath(t construct.Target, name string) string {
	return fmt.Sprintf("constructs.units[%s:%s]", t, name)
}

func (m *merger) addUnit(plugin string, in *construct.Unit) {
	key := targetName{in.Target, in.Name}
	u := m.unitByKey[key]
	if u == nil {
		u = &unitAcc{target: in.Target, name: in.Name, first: plugin}
		m.unitByKey[key] = u
		m.units = append(m.units, u)
	}
	path := unitPath(in.Target, in.Name)
	switch {
	case in.Content == "":
		u.enableByDropIn = u.enableByDropIn || in.Enable
	case u.contentOwner == "":
		u.content, u.enable, u.contentOwner = in.Content, in.Enable, plugin
	default:
		first := u.contentOwner
		var diffs []string
		if u.content != in.Content {
			diffs = append(diffs, "content: "+describeTextDiff(first, u.content, plugin, in.Content))
		}
		if u.enable != in.Enable {
			diffs = append(diffs, fmt.Sprintf("enable: %q sets %t, %q sets %t", first, u.enable, plugin, in.Enable))
		}
		if len(diffs) > 0 {
			m.conflict(plugin, first, path,
				fmt.Sprintf("systemd unit %s on %s is defined differently by %s: %s",
					in.Name, in.Target, by(first, plugin), strings.Join(diffs, "; ")),
				resolveHint(first, plugin, "the unit")+"; to change another plugin's unit, contribute a drop-in (a unit entry with no content) instead")
		}
	}
	for _, i := range sortedIndex(len(in.DropIns), func(i int) string { return in.DropIns[i].Name }) {
		d := in.DropIns[i]
		if u.dropIns == nil {
			u.dropIns = map[string]*dropInAcc{}
		}
		prev := u.dropIns[d.Name]
		if prev == nil {
			u.dropIns[d.Name] = &dropInAcc{content: d.Content, owner: plugin}
			continue
		}
		if prev.content == d.Content {
			continue
		}
		m.conflict(plugin, prev.owner, fmt.Sprintf("%s.dropIns[%s]", path, d.Name),
			fmt.Sprintf("drop-in %s of systemd unit %s on %s is defined differently by %s: %s",
				d.Name, in.Name, in.Target, by(prev.owner, plugin), describeTextDiff(prev.owner, prev.content, plugin, d.Content)),
			resolveHint(prev.owner, plugin, "the drop-in")+", or give each plugin's drop-in its own name")
	}
}

// unit builds the merged unit; drop-ins are in name order, the order systemd
// applies them in. The unit names the plugin that defined it, else the
// first that added drop-ins; each drop-in names its own.
func (u *unitAcc) unit() construct.Unit {
	owner := u.contentOwner
	if owner == "" {
		owner = u.first
	}
	out := construct.Unit{Target: u.target, Name: u.name, Content: u.content, Enable: u.enable || u.enableByDropIn, Plugin: owner}
	if len(u.dropIns) > 0 {
		out.DropIns = make([]construct.DropIn, 0, len(u.dropIns))
		for _, n := range sortedKeys(u.dropIns) {
			out.DropIns = append(out.DropIns, construct.DropIn{Name: n, Content: u.dropIns[n].content, Plugin: u.dropIns[n].owner})
		}
	}
	return out
}

// dropped reports whether a pool's unit entry was left with nothing of its
// own: it repeated the unit for every worker (checkOverlaps).
func (u *unitAcc) dropped() bool {
	return u.content == "" && len(u.dropIns) == 0 && !u.enableByDropIn && !u.enable
}

type fileAcc struct {
	f     construct.File
	owner string
	// dropped: a pool's file identical to the one for every worker.
	dropped bool
}

func (f *fileAcc) file() construct.File {
	out := f.f
	out.Plugin = f.owner
	return out
}

func (m *merger) addFile(plugin string, in *construct.File) {
	if in.Format != "" && !nodeplan.ValidFormat(nodeplan.Format(in.Format)) {
		m.fatal(plugin, fmt.Sprintf("constructs.files[%s:%s]", in.Target, in.Path),
			fmt.Sprintf("plugin %q sends file %s with format %q", plugin, in.Path, in.Format),
			fmt.Sprintf("a file's format is one of %v: how the machine finds the markers in it", nodeplan.Formats))
		return
	}
	key := targetName{in.Target, in.Path}
	prev := m.fileByKey[key]
	if prev == nil {
		f := &fileAcc{f: *in, owner: plugin}
		m.fileByKey[key] = f
		m.files = append(m.files, f)
		return
	}
	first := prev.owner
	diffs := fileDiffs(first, &prev.f, plugin, in)
	if len(diffs) == 0 {
		return
	}
	m.conflict(plugin, first, fmt.Sprintf("constructs.files[%s:%s]", in.Target, in.Path),
		fmt.Sprintf("file %s on %s is defined differently by %s: %s", in.Path, in.Target, by(first, plugin), strings.Join(diffs, "; ")),
		resolveHint(first, plugin, "the file"))
}

// fileDiffs says how two definitions of one file differ, or nothing.
func fileDiffs(first string, p *construct.File, plugin string, in *construct.File) []string {
	var diffs []string
	if p.Content != in.Content {
		if p.Sensitive || in.Sensitive {
			// Never quote sensitive content, not even in a diagnostic.
			diffs = append(diffs, "content differs (sensitive, not shown)")
		} else {
			diffs = append(diffs, "content: "+describeTextDiff(first, p.Content, plugin, in.Content))
		}
	}
	if !sameMode(p.Mode, in.Mode) {
		diffs = append(diffs, fmt.Sprintf("mode: %q sets %q, %q sets %q", first, p.Mode, plugin, in.Mode))
	}
	if p.Owner != in.Owner {
		diffs = append(diffs, fmt.Sprintf("owner: %q sets %q, %q sets %q", first, p.Owner, plugin, in.Owner))
	}
	if p.Sensitive != in.Sensitive {
		diffs = append(diffs, fmt.Sprintf("sensitive: %q sets %t, %q sets %t", first, p.Sensitive, plugin, in.Sensitive))
	}
	if p.Format != in.Format {
		diffs = append(diffs, fmt.Sprintf("format: %q sets %q, %q sets %q", first, p.Format, plugin, in.Format))
	}
	return diffs
}

// sameMode compares octal modes by value, so "644" and "0644" agree.
func sameMode(a, b string) bool {
	if a == b {
		return true
	}
	x, errA := strconv.ParseUint(a, 8, 32)
	y, errB := strconv.ParseUint(b, 8, 32)
	return errA == nil && errB == nil && x == y
}

type volumeAcc struct {
	v     construct.Volume
	owner string
}

func (m *merger) addVolume(plugin string, in construct.Volume) {
	prev := m.volumeByKey[in.Name]
	if prev == nil {
		v := &volumeAcc{v: in, owner: plugin}
		m.volumeByKey[in.Name] = v
		m.volumes = append(m.volumes, v)
		return
	}
	if prev.v == in {
		return
	}
	show := func(v construct.Volume) string {
		return fmt.Sprintf("hostPath %q mountPath %q readOnly %t", v.HostPath, v.MountPath, v.ReadOnly)
	}
	m.conflict(plugin, prev.owner, fmt.Sprintf("constructs.apiServer.volumes[%s]", in.Name),
		fmt.Sprintf("API server volume %q is defined differently by %s: %q sets %s, %q sets %s",
			in.Name, by(prev.owner, plugin), prev.owner, show(prev.v), plugin, show(in)),
		resolveHint(prev.owner, plugin, "the volume")+", or give each volume its own name")
}

type labelAcc struct {
	l     construct.NodeLabel
	owner string
}

func (m *merger) addLabel(plugin string, in construct.NodeLabel) {
	key := targetName{in.Target, in.Key}
	prev := m.labelByKey[key]
	if prev == nil {
		l := &labelAcc{l: in, owner: plugin}
		m.labelByKey[key] = l
		m.labels = append(m.labels, l)
		return
	}
	if prev.l.Value == in.Value {
		return
	}
	m.conflict(plugin, prev.owner, fmt.Sprintf("constructs.nodeLabels[%s:%s]", in.Target, in.Key),
		fmt.Sprintf("node label %s on %s is set differently by %s: %q sets %q, %q sets %q",
			in.Key, in.Target, by(prev.owner, plugin), prev.owner, prev.l.Value, plugin, in.Value),
		resolveHint(prev.owner, plugin, "the label"))
}

type taintKey struct {
	target      construct.Target
	key, effect string
}

type taintAcc struct {
	t     construct.NodeTaint
	owner string
}

func (m *merger) addTaint(plugin string, in construct.NodeTaint) {
	key := taintKey{in.Target, in.Key, in.Effect}
	prev := m.taintByKey[key]
	if prev == nil {
		t := &taintAcc{t: in, owner: plugin}
		m.taintByKey[key] = t
		m.taints = append(m.taints, t)
		return
	}
	if prev.t.Value == in.Value {
		return
	}
	m.conflict(plugin, prev.owner, fmt.Sprintf("constructs.nodeTaints[%s:%s:%s]", in.Target, in.Key, in.Effect),
		fmt.Sprintf("node taint %s:%s on %s is set differently by %s: %q sets value %q, %q sets value %q",
			in.Key, in.Effect, in.Target, by(prev.owner, plugin), prev.owner, prev.t.Value, plugin, in.Value),
		resolveHint(prev.owner, plugin, "the taint"))
}

// podMetaKey is one plugin's request for one target.
type podMetaKey struct {
	target construct.Target
	plugin string
}

// addPodMetadata keeps every plugin's request for pod access to the
// metadata service, one per target and plugin: requests never conflict
// (there is none for less access, so the most open wins), and the merged
// set names each plugin that opened a target.
func (m *merger) addPodMetadata(plugin string, in construct.PodMetadataAccess) {
	key := podMetaKey{in.Target, plugin}
	if m.podMetaBy[key] {
		return
	}
	m.podMetaBy[key] = true
	in.Plugin = plugin
	m.podMeta = append(m.podMeta, in)
}
