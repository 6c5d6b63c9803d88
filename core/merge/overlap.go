package merge

import (
	"fmt"
	"strings"

	"github.com/kube-aws/kube-aws/core/construct"
)

// checkOverlaps compares what plugins contribute for every worker with what
// they contribute for one node pool: both land on that pool's machines, so a
// unit, drop-in, file or IAM statement Sid given for both is one thing given
// twice. Identical is fine, and the pool's copy is dropped so the machine
// gets it once; different is a conflict naming both plugins, blamed on the
// later one. It runs once everything has merged, so the result does not
// depend on which of the two came first. Kubelet flags, labels and taints
// are left alone: for them the pool's value is meant to win on the pool.
func (m *merger) checkOverlaps() {
	broadUnits := map[string]*unitAcc{}
	for _, u := range m.units {
		if u.target.Role == construct.Worker && u.target.NodePool == "" {
			broadUnits[u.name] = u
		}
	}
	for _, u := range m.units {
		if b := broadUnits[u.name]; b != nil && u.target.NodePool != "" && u.target.Role == construct.Worker {
			m.overlapUnit(b, u)
		}
	}

	broadFiles := map[string]*fileAcc{}
	for _, f := range m.files {
		if f.f.Target.Role == construct.Worker && f.f.Target.NodePool == "" {
			broadFiles[f.f.Path] = f
		}
	}
	for _, f := range m.files {
		b := broadFiles[f.f.Path]
		if b == nil || f.f.Target.NodePool == "" || f.f.Target.Role != construct.Worker {
			continue
		}
		diffs := fileDiffs(b.owner, &b.f, f.owner, &f.f)
		if len(diffs) == 0 {
			f.dropped = true
			continue
		}
		m.overlapFatal(b.owner, f.owner, fmt.Sprintf("constructs.files[%s:%s]", f.f.Target, f.f.Path),
			fmt.Sprintf("file %s", f.f.Path), f.f.Target, strings.Join(diffs, "; "), "the file")
	}

	broadSids := map[string]iamAcc{}
	for _, s := range m.iam {
		if s.s.Sid != "" && s.s.Target.Role == construct.Worker && s.s.Target.NodePool == "" {
			broadSids[s.s.Sid] = s
		}
	}
	for _, s := range m.iam {
		b, ok := broadSids[s.s.Sid]
		if !ok || s.s.Target.NodePool == "" || s.s.Target.Role != construct.Worker {
			continue
		}
		// The iam plugin puts both in the pool's policy: the same
		// statement twice is deduplicated there, two different ones with
		// one Sid are refused by IAM.
		if iamKey(withTarget(b.s, s.s.Target)) == s.key {
			continue
		}
		m.overlapFatal(b.owner, s.owner, fmt.Sprintf("constructs.iam[%s:%s]", s.s.Target, s.s.Sid),
			"IAM statement "+s.s.Sid, s.s.Target,
			fmt.Sprintf("%q sets %s, %q sets %s", b.owner, showIAM(b.s), s.owner, showIAM(s.s)), "the statement")
	}
}

func withTarget(s construct.IAMStatement, t construct.Target) construct.IAMStatement {
	s.Target = t
	return s
}

// overlapUnit compares a unit for one pool (u) with the same unit for every
// worker (b): their content and their drop-ins of the same name.
func (m *merger) overlapUnit(b, u *unitAcc) {
	if b.contentOwner != "" && u.contentOwner != "" {
		var diffs []string
		if b.content != u.content {
			diffs = append(diffs, "content: "+describeTextDiff(b.contentOwner, b.content, u.contentOwner, u.content))
		}
		if b.enable != u.enable {
			diffs = append(diffs, fmt.Sprintf("enable: %q sets %t, %q sets %t", b.contentOwner, b.enable, u.contentOwner, u.enable))
		}
		if len(diffs) == 0 {
			u.content, u.contentOwner, u.enable = "", "", false
		} else {
			m.overlapFatal(b.contentOwner, u.contentOwner, unitPath(u.target, u.name), "systemd unit "+u.name, u.target,
				strings.Join(diffs, "; "), "the unit")
		}
	}
	for _, n := range sortedKeys(u.dropIns) {
		bd, ok := b.dropIns[n]
		if !ok {
			continue
		}
		ud := u.dropIns[n]
		if bd.content == ud.content {
			delete(u.dropIns, n)
			continue
		}
		m.overlapFatal(bd.owner, ud.owner, fmt.Sprintf("%s.dropIns[%s]", unitPath(u.target, u.name), n),
			fmt.Sprintf("drop-in %s of systemd unit %s", n, u.name), u.target,
			describeTextDiff(bd.owner, bd.content, ud.owner, ud.content), "the drop-in")
	}
}

// overlapFatal reports something set for every worker by one plugin and
// for one pool by another (or the same) plugin, differently.
func (m *merger) overlapFatal(broadOwner, poolOwner, path, what string, pool construct.Target, diff, noun string) {
	whom := fmt.Sprintf("plugin %q for every worker and plugin %q for %s", broadOwner, poolOwner, pool)
	if broadOwner == poolOwner {
		whom = fmt.Sprintf("plugin %q for every worker and again for %s", broadOwner, pool)
	}
	m.conflictLater(broadOwner, poolOwner, path,
		fmt.Sprintf("%s is defined by %s, differently, and both land on node pool %s: %s", what, whom, pool.NodePool, diff),
		resolveHint(broadOwner, poolOwner, noun)+", or give the pool's its own name")
}
