package nodeplan

import (
	"bufio"
	"bytes"
	"fmt"
	"sort"
	"strings"
)

// Summary is what a role's userdata says of itself in comments after the
// #cloud-config line: the Kubernetes version its machines run and, per
// plugin, a digest of what that plugin puts on them (files, units, flags,
// labels, taints, artifacts). kube-aws compares the summary of the userdata
// a machine booted from with a new render's to say why the machine is
// replaced: "plugin dex changed", "kubernetesVersion 1.33.13 -> 1.34.4".
// cloud-init and kube-aws-node skip comments.
type Summary struct {
	KubernetesVersion string
	// Plugins maps a plugin to the first 12 hexadecimal digits of the
	// sha256 of its part.
	Plugins map[string]string
}

const summaryPrefix = "# kube-aws "

// Comment is the summary as comment lines, each ending in a newline.
func (s Summary) Comment() string {
	var b strings.Builder
	if s.KubernetesVersion != "" {
		fmt.Fprintf(&b, "%skubernetesVersion=%s\n", summaryPrefix, s.KubernetesVersion)
	}
	names := make([]string, 0, len(s.Plugins))
	for p := range s.Plugins {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		fmt.Fprintf(&b, "%splugin %s=%s\n", summaryPrefix, p, s.Plugins[p])
	}
	return b.String()
}

// ParseSummary reads the summary comments of a userdata; a userdata
// without them (rendered by an older kube-aws) gives an empty Summary.
func ParseSummary(userdata []byte) Summary {
	s := Summary{Plugins: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(userdata))
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "#") {
			break
		}
		rest, ok := strings.CutPrefix(line, summaryPrefix)
		if !ok {
			continue
		}
		if v, ok := strings.CutPrefix(rest, "kubernetesVersion="); ok {
			s.KubernetesVersion = v
		} else if kv, ok := strings.CutPrefix(rest, "plugin "); ok {
			if k, v, ok := strings.Cut(kv, "="); ok {
				s.Plugins[k] = v
			}
		}
	}
	return s
}

// Changes says what differs from old to s, one phrase each, in a stable
// order: the Kubernetes version, then plugins changed, added and removed.
func (s Summary) Changes(old Summary) []string {
	var out []string
	if s.KubernetesVersion != old.KubernetesVersion && old.KubernetesVersion != "" {
		out = append(out, fmt.Sprintf("kubernetesVersion %s -> %s", old.KubernetesVersion, s.KubernetesVersion))
	}
	var changed, added, removed []string
	for p, d := range s.Plugins {
		switch od, ok := old.Plugins[p]; {
		case !ok:
			added = append(added, p)
		case od != d:
			changed = append(changed, p)
		}
	}
	for p := range old.Plugins {
		if _, ok := s.Plugins[p]; !ok {
			removed = append(removed, p)
		}
	}
	for _, g := range []struct {
		what  string
		names []string
	}{{"changed", changed}, {"added", added}, {"removed", removed}} {
		if len(g.names) == 0 {
			continue
		}
		sort.Strings(g.names)
		word := "plugin"
		if len(g.names) > 1 {
			word = "plugins"
		}
		out = append(out, fmt.Sprintf("%s %s %s", word, strings.Join(g.names, ", "), g.what))
	}
	return out
}
