package cloudconfig

import (
	"encoding/binary"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/nodeplan"
)

// shared is what one render works out once for every machine that would
// work it out alike. The node pools' machines mostly get the same
// constructs: building, checking and encoding the same artifacts plan, and
// encoding the same constructs for the summary's digests, once per pool made
// those the largest part of the userdata plugin's work that grows with the
// pools. A result is keyed by which constructs land on the machine (their
// indexes in the set), which is all it depends on.
type shared struct {
	enc       *encoder
	plans     map[string]string
	summaries map[string]map[string]string
}

func newShared() *shared {
	return &shared{enc: newEncoder(), plans: map[string]string{}, summaries: map[string]map[string]string{}}
}

// artifacts is artifactsFile, once per set of artifacts. A plan with
// diagnostics is not kept: they name the machine.
func (sh *shared) artifacts(set *construct.Set, m machine) (string, diag.List, error) {
	var key []byte
	for i, a := range set.Artifacts {
		if m.matches(a.Target) {
			key = binary.AppendUvarint(key, uint64(i))
		}
	}
	if content, ok := sh.plans[string(key)]; ok {
		return content, nil, nil
	}
	content, diags, err := artifactsFile(set, m)
	if err == nil && len(diags) == 0 {
		sh.plans[string(key)] = content
	}
	return content, diags, err
}

// summary is summary(c, set, m), its digests worked out once per role and
// set of constructs landing on the machine.
func (sh *shared) summary(c *config.Cluster, set *construct.Set, m machine) nodeplan.Summary {
	key := append([]byte(m.Role), 0)
	list := func(n int, target func(int) construct.Target) {
		for i := range n {
			if m.matches(target(i)) {
				key = binary.AppendUvarint(key, uint64(i))
			}
		}
		// The list's length ends it (every index is below it), so no
		// two lists run together.
		key = binary.AppendUvarint(key, uint64(n))
	}
	list(len(set.Files), func(i int) construct.Target { return set.Files[i].Target })
	list(len(set.Units), func(i int) construct.Target { return set.Units[i].Target })
	list(len(set.KubeletFlags), func(i int) construct.Target { return set.KubeletFlags[i].Target })
	list(len(set.NodeLabels), func(i int) construct.Target { return set.NodeLabels[i].Target })
	list(len(set.NodeTaints), func(i int) construct.Target { return set.NodeTaints[i].Target })
	list(len(set.Artifacts), func(i int) construct.Target { return set.Artifacts[i].Target })
	if plugins, ok := sh.summaries[string(key)]; ok {
		return nodeplan.Summary{KubernetesVersion: c.KubernetesVersion, Plugins: plugins}
	}
	s := summary(c, set, m)
	sh.summaries[string(key)] = s.Plugins
	return s
}
