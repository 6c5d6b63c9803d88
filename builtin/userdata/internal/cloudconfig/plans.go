package cloudconfig

import (
	"fmt"
	"sort"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
)

// NodeAgent is the command runcmd calls: boot puts the folder of the running
// kube-aws-node first on PATH (docs/node-agent.md).
const NodeAgent = "kube-aws-node"

// secretsPlan lists every file of the machine that holds a secret or fact
// marker, with the format the machine substitutes it by: the construct's
// Format, whole for a sensitive file that gives none. A file with no format
// is written as it is: text in it that looks like a marker (a script that
// mentions one) is never substituted.
func secretsPlan(entries []writeFile, formats map[string]string) *nodeplan.SecretsPlan {
	plan := &nodeplan.SecretsPlan{}
	for _, e := range entries {
		if f := formats[e.Path]; f != "" && nodeplan.AnyMarkerPattern.MatchString(e.Content) {
			plan.Files = append(plan.Files, nodeplan.SecretFile{Path: e.Path, Format: nodeplan.Format(f)})
		}
	}
	return plan
}

// addonsPlan is the controllers' addons.json without its manifests: the
// admin kubeconfig the pki plugin writes, and, when plugins contributed Helm
// releases, the helm plugin's release list. That list is rendered while this
// plugin renders, so the plan names it by the fact the control-plane stack's
// bootstrap passes (deploy fills in the key of what it uploaded).
func addonsPlan(set *construct.Set) *nodeplan.AddonsPlan {
	plan := &nodeplan.AddonsPlan{Kubeconfig: names.KubeconfigAdmin}
	if len(set.HelmReleases) > 0 {
		plan.ReleasesFrom = "{" + names.FactAddonsKey + "}"
	}
	return plan
}

// artifactsPlan is the machine's artifacts.json: every artifact aimed at it,
// each file of a binary release a binary, from the mirror's upload
// (assets/<sha256>) in air-gapped mode, else from upstream.
func artifactsPlan(set *construct.Set, m machine) (*nodeplan.ArtifactsPlan, diag.List) {
	plan := &nodeplan.ArtifactsPlan{}
	var diags diag.List
	seen := map[string]bool{}
	for _, a := range set.Artifacts {
		if !m.matches(a.Target) || seen[a.Name] {
			continue
		}
		seen[a.Name] = true
		archs := make([]string, 0, len(a.Sources))
		for arch := range a.Sources {
			archs = append(archs, arch)
		}
		sort.Strings(archs)
		switch a.Kind {
		case construct.Binary:
			for _, f := range a.Files {
				b := nodeplan.Binary{Name: a.Name + " " + f.Name, Path: f.Path, Mode: f.Mode, Sources: map[nodeplan.Arch]nodeplan.Source{}}
				if len(a.Files) == 1 {
					b.Name = a.Name
				}
				for _, arch := range archs {
					src := a.Sources[arch]
					if sum, ok := src.Mirrored[f.Name]; ok {
						b.Sources[nodeplan.Arch(arch)] = nodeplan.Source{AssetKey: nodeplan.AssetKey(sum), SHA256: sum}
					} else if src.URL != "" {
						b.Sources[nodeplan.Arch(arch)] = nodeplan.Source{URL: src.URL, SHA256: src.SHA256, Member: src.Members[f.Name]}
					}
				}
				plan.Binaries = append(plan.Binaries, b)
			}
		case construct.Image:
			im := nodeplan.Image{Name: a.Name, Reference: a.Reference, Sources: map[nodeplan.Arch]nodeplan.ImageSource{}}
			for _, arch := range archs {
				src := a.Sources[arch]
				if sum, ok := src.Mirrored[construct.MirrorImageFile]; ok {
					im.Sources[nodeplan.Arch(arch)] = nodeplan.ImageSource{AssetKey: nodeplan.AssetKey(sum), SHA256: sum}
				} else if src.Digest != "" {
					im.Sources[nodeplan.Arch(arch)] = nodeplan.ImageSource{Digest: src.Digest}
				}
			}
			plan.Images = append(plan.Images, im)
		}
	}
	if err := plan.Validate(); err != nil {
		diags = append(diags, diag.Fatalf("artifacts plan of %s: %v", m, err).At("constructs.artifacts"))
	}
	return plan, diags
}

// artifactsFile is the content of the machine's artifacts plan, "" when it
// has no artifacts or its plan is refused (a fatal in the diagnostics).
func artifactsFile(set *construct.Set, m machine) (string, diag.List, error) {
	plan, diags := artifactsPlan(set, m)
	if len(plan.Binaries)+len(plan.Images) == 0 || diags.HasFatal() {
		return "", diags, nil
	}
	content, err := encodePlan(plan)
	if err != nil {
		return "", diags, fmt.Errorf("artifacts plan of %s: %w", m, err)
	}
	return content, diags, nil
}

// encodePlan is a plan as the content of its file.
func encodePlan(p nodeplan.Plan) (string, error) {
	b, err := nodeplan.Encode(p)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// runCmd is the machine's runcmd: kube-aws-node's steps that runcmd calls,
// for the plans the machine has, in the order core/nodeplan derives from
// the steps' needs, with systemd's reload, restarts and starts at the
// point the steps before it prepare the units for (nodeplan.Units).
func runCmd(entries []writeFile, hasUnits bool, restart, enable []string) [][]string {
	has := map[string]bool{}
	for _, e := range entries {
		has[e.Path] = true
	}
	var out [][]string
	for _, s := range nodeplan.Steps() {
		switch {
		case s.Name == nodeplan.Units:
			if hasUnits {
				out = append(out, []string{"systemctl", "daemon-reload"})
			}
			if len(restart) > 0 {
				out = append(out, append([]string{"systemctl", "try-restart", "--no-block"}, restart...))
			}
			if len(enable) > 0 {
				// --no-reload: systemd has just read the units
				// (daemon-reload above, or none changed), and enable
				// otherwise reloads it all again, seconds on a busy
				// machine; start needs no .wants link read.
				out = append(out, append([]string{"systemctl", "enable", "--no-reload"}, enable...))
				// --no-block: a unit that waits for something later in the
				// boot must not hold the boot hostage.
				out = append(out, append([]string{"systemctl", "start", "--no-block"}, enable...))
			}
		case s.RunCmd && has[s.Plan]:
			out = append(out, []string{NodeAgent, s.Name})
		}
	}
	return out
}
