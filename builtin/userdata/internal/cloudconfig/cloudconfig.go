// Package cloudconfig turns the merged constructs of every plugin into the
// cloud-init userdata (#cloud-config) of each kind of machine: the
// controllers, the etcd members and each node pool. It is the userdata
// plugin's logic, kept out of package main so it is tested without the SDK's
// server.
//
// What a machine gets:
//   - every File targeted at its role (Target{Role: worker} with no NodePool
//     means every pool), in write_files, sorted by path;
//   - every Unit and drop-in, at /etc/systemd/system/<unit> and
//     /etc/systemd/system/<unit>.d/<drop-in>.conf, and runcmd steps that
//     reload systemd, enable the enabled units and start them without
//     blocking cloud-init;
//   - the kubelet's flags in /etc/kubernetes/kubelet.env (KUBELET_ARGS), with
//     --node-labels and --register-with-taints built from the NodeLabels and
//     NodeTaints constructs and the node pool's labels and taints;
//   - on controllers, the API server static pod (builtin/internal/podspec)
//     and every Kubernetes manifest under /etc/kubernetes/addons/.
//
// Sensitive values never appear in plain text: a sensitive file's content
// must be made of ((secret:...)) markers, which are written as they are, and
// every file holding a secret or fact marker is listed, with its format, in
// the secrets plan (/etc/kube-aws/secrets.json) so that kube-aws-node
// substitutes them before any unit starts. The machine's artifacts (pinned
// binaries and images) are its artifacts plan, and runcmd calls
// kube-aws-node's steps for the plans the machine has, in the boot flow's
// order (runCmd), around systemd's reload and starts.
package cloudconfig

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/kube-aws/kube-aws/builtin/internal/podspec"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/core/stage"
)

// Plugin is the name diagnostics carry.
const Plugin = "userdata"

// Paths on the machines.
const (
	SystemdDir     = "/etc/systemd/system"
	KubeletEnvPath = "/etc/kubernetes/kubelet.env"
	ManifestDir    = "/etc/kubernetes/manifests"
	AddonsDir      = "/etc/kubernetes/addons"
)

// unitMode is the mode of every systemd unit and drop-in kube-aws writes.
const unitMode = "0600"

// Marker matches a redaction marker, ((secret:<plugin>/<json-pointer>)); it
// is core/config's own pattern so the two can never disagree on what a
// marker is.
var Marker = config.MarkerPattern

// machine is one userdata document: a role, or one node pool.
type machine struct {
	// File is the rendered file's name without folder and extension.
	File string
	Role construct.Role
	Pool *config.NodePool
	// PoolIndex is the pool's index in cluster.yaml's nodePools.
	PoolIndex int
}

// matches reports whether a construct aimed at t lands on the machine.
func (m machine) matches(t construct.Target) bool {
	if t.Role != m.Role {
		return false
	}
	return m.Pool == nil || t.NodePool == "" || t.NodePool == m.Pool.Name
}

func (m machine) String() string {
	if m.Pool != nil {
		return "node pool " + m.Pool.Name
	}
	return string(m.Role)
}

// document is a #cloud-config document, built as data.
type document struct {
	WriteFiles []writeFile `json:"write_files,omitempty"`
	RunCmd     [][]string  `json:"runcmd,omitempty"`
}

type writeFile struct {
	Path        string `json:"path"`
	Permissions string `json:"permissions"`
	Owner       string `json:"owner"`
	Content     string `json:"content"`
}

// Render builds userdata/controller.yaml, userdata/etcd.yaml and
// userdata/nodepool-<name>.yaml. Fatal diagnostics mean the files are
// incomplete and must not be used; the error return is for failures that are
// kube-aws's own fault.
func Render(c *config.Cluster, set *construct.Set) ([]stage.File, diag.List, error) {
	if set == nil {
		set = &construct.Set{}
	}
	var diags diag.List
	diags = append(diags, checkTargets(c, set)...)
	diags = append(diags, CheckUnits(set.Units)...)

	machines := []machine{{File: names.RoleController, Role: construct.Controller}, {File: names.RoleEtcd, Role: construct.Etcd}}
	for i := range c.NodePools {
		p := &c.NodePools[i]
		machines = append(machines, machine{File: names.NodePoolRole(p.Name), Role: construct.Worker, Pool: p, PoolIndex: i})
	}
	var files []stage.File
	sh := newShared()
	for _, m := range machines {
		content, d, err := renderMachine(c, set, m, sh)
		if err != nil {
			return nil, diags, err
		}
		diags = append(diags, d...)
		files = append(files, stage.File{Path: "userdata/" + m.File + ".yaml", Content: content, Mode: "0644"})
	}
	return files, diags.WithDefaults(Plugin, string(stage.Render)), nil
}

func renderMachine(c *config.Cluster, set *construct.Set, m machine, sh *shared) ([]byte, diag.List, error) {
	var diags diag.List
	var entries []writeFile
	// origin remembers what wrote each path, for the duplicate-path fatal;
	// plugin is the construct's owner ("" for what userdata adds itself).
	// formats and owners say how the machine reads a file's markers, and
	// whose file it is.
	origin := map[string]string{}
	formats := map[string]string{}
	add := func(f writeFile, what, plugin string) {
		if plugin != "" {
			what += fmt.Sprintf(" of plugin %q", plugin)
		}
		if prev, ok := origin[f.Path]; ok {
			diags = append(diags, diag.Fatalf("%s and %s both write %s on %s", prev, what, f.Path, m).
				WithHint("two plugins may not write the same file; drop one or use a systemd drop-in").About(plugin))
			return
		}
		origin[f.Path] = what
		entries = append(entries, f)
	}

	for _, f := range set.Files {
		if !m.matches(f.Target) {
			continue
		}
		where := fmt.Sprintf("constructs.files[%s:%s]", f.Target, f.Path)
		if !path.IsAbs(f.Path) {
			diags = append(diags, diag.Fatalf("file %q for %s: path must be absolute", f.Path, f.Target).At(where).About(f.Plugin))
			continue
		}
		mode := f.Mode
		if mode == "" {
			mode = "0644"
			if f.Sensitive {
				mode = "0600"
			}
		}
		// A sensitive file read whole is the marker and nothing else; one
		// with a structured format holds at least one marker.
		if whole := f.Format == "" || f.Format == string(nodeplan.FormatWhole); f.Sensitive && (!Marker.MatchString(f.Content) ||
			whole && strings.TrimSpace(Marker.ReplaceAllString(f.Content, "")) != "") {
			{
				// The content is never quoted here: it may be the secret.
				diags = append(diags, diag.Fatalf("sensitive file %s for %s holds plain text; userdata never carries sensitive content in plain text", f.Path, f.Target).
					At(where).WithHint("give the secret in cluster.yaml (valueFrom, or a property marked x-kube-aws-sensitive) and write its ((secret:...)) marker as the file's content").About(f.Plugin))
				continue
			}
		}
		formats[path.Clean(f.Path)] = f.Format
		if f.Format == "" && f.Sensitive {
			formats[path.Clean(f.Path)] = string(nodeplan.FormatWhole)
		}
		add(writeFile{Path: path.Clean(f.Path), Permissions: mode, Owner: owner(f.Owner), Content: f.Content}, "file "+where, f.Plugin)
	}

	var enable, restart []string
	var hasUnits bool
	for _, u := range set.Units {
		if !m.matches(u.Target) {
			continue
		}
		hasUnits = true
		where := fmt.Sprintf("unit %s (%s)", u.Name, unitPath(u))
		// Units and drop-ins are root's alone (0600): only systemd reads
		// them, and the CIS Kubernetes Benchmark asks it of the kubelet's
		// unit (4.1.1), which carries the machine's facts and flags.
		if u.Content != "" {
			add(writeFile{Path: SystemdDir + "/" + u.Name, Permissions: unitMode, Owner: owner(""), Content: u.Content}, where, u.Plugin)
		}
		for _, d := range u.DropIns {
			add(writeFile{Path: DropInPath(u.Name, d.Name), Permissions: unitMode, Owner: owner(""), Content: d.Content}, where, d.Plugin)
		}
		switch {
		case u.Enable:
			enable = append(enable, u.Name)
		case u.Content == "" && len(u.DropIns) > 0:
			// Drop-ins for a unit the OS already runs only take effect on
			// restart; try-restart leaves a stopped unit stopped.
			restart = append(restart, u.Name)
		}
	}

	if m.Role != construct.Etcd || targetsKubelet(set, m) {
		env, d := kubeletEnv(set, m, len(set.APIServer.Flags) > 0)
		diags = append(diags, d...)
		formats[KubeletEnvPath] = string(nodeplan.FormatEnv)
		add(writeFile{Path: KubeletEnvPath, Permissions: "0644", Owner: owner(""), Content: env}, "the kubelet's flags", "")
	}

	if m.Role == construct.Controller {
		if len(set.APIServer.Flags) > 0 {
			pod, err := podspec.StaticPod(set.APIServer.Flags, set.APIServer.Volumes, c.KubernetesVersion)
			if err != nil {
				diags = append(diags, diag.Fatalf("kube-apiserver static pod: %v", err).At("constructs.apiServer"))
			} else {
				formats[podspec.ManifestPath] = string(nodeplan.FormatYAML)
				add(writeFile{Path: podspec.ManifestPath, Permissions: "0600", Owner: owner(""), Content: string(pod)}, "the API server static pod", "")
			}
		}
		addons := addonsPlan(set)
		for _, mf := range set.Manifests {
			where := fmt.Sprintf("constructs.manifests[%s]", mf.Name)
			name, err := manifestFile(mf.Name)
			if err != nil {
				diags = append(diags, diag.Fatalf("manifest %q: %v", mf.Name, err).At(where).About(mf.Plugin))
				continue
			}
			formats[AddonsDir+"/"+name] = string(nodeplan.FormatYAML)
			add(writeFile{Path: AddonsDir + "/" + name, Permissions: "0644", Owner: owner(""), Content: mf.Content}, "manifest "+where, mf.Plugin)
			addons.Manifests = append(addons.Manifests, nodeplan.Manifest{Path: AddonsDir + "/" + name, Plugin: mf.Plugin})
		}
		if addons.ReleasesFrom != "" || len(addons.Manifests) > 0 {
			content, err := encodePlan(addons)
			if err != nil {
				return nil, diags, fmt.Errorf("add-ons plan of %s: %w", m, err)
			}
			add(writeFile{Path: nodeplan.AddonsPath, Permissions: "0644", Owner: owner(""), Content: content}, "the add-ons plan", "")
		}
	}

	// The plans kube-aws-node reads that are this plugin's: the files
	// holding markers, and the artifacts.
	secrets := secretsPlan(entries, formats)
	if len(secrets.Files) > 0 {
		content, err := encodePlan(secrets)
		if err != nil {
			return nil, diags, fmt.Errorf("secrets plan of %s: %w", m, err)
		}
		add(writeFile{Path: nodeplan.SecretsPath, Permissions: "0644", Owner: owner(""), Content: content}, "the secrets plan", "")
	}
	content, d, err := sh.artifacts(set, m)
	diags = append(diags, d...)
	if err != nil {
		return nil, diags, err
	}
	if content != "" {
		add(writeFile{Path: nodeplan.ArtifactsPath, Permissions: "0644", Owner: owner(""), Content: content}, "the artifacts plan", "")
	}

	sort.SliceStable(entries, func(i, j int) bool { return entries[i].Path < entries[j].Path })
	doc := document{WriteFiles: entries, RunCmd: runCmd(entries, hasUnits, restart, enable)}
	out, err := sh.enc.marshal(doc)
	if err != nil {
		return nil, diags, fmt.Errorf("userdata for %s: %w", m, err)
	}
	head := "#cloud-config\n" + sh.summary(c, set, m).Comment()
	return append([]byte(head), out...), diags, nil
}

// DropInPath is where a unit's drop-in goes; ".conf" is added when missing
// because systemd ignores drop-ins with any other suffix.
func DropInPath(unitName, dropIn string) string {
	if !strings.HasSuffix(dropIn, ".conf") {
		dropIn += ".conf"
	}
	return SystemdDir + "/" + unitName + ".d/" + dropIn
}

func owner(o string) string {
	if o == "" {
		return "root:root"
	}
	return o
}

// manifestFile turns a manifest's name into its file name under AddonsDir.
func manifestFile(name string) (string, error) {
	if name == "" || strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return "", fmt.Errorf("name must be a plain file name")
	}
	switch path.Ext(name) {
	case ".yaml", ".yml", ".json":
		return name, nil
	}
	return name + ".yaml", nil
}

func targetsKubelet(set *construct.Set, m machine) bool {
	for _, f := range set.KubeletFlags {
		if m.matches(f.Target) {
			return true
		}
	}
	for _, l := range set.NodeLabels {
		if m.matches(l.Target) {
			return true
		}
	}
	for _, t := range set.NodeTaints {
		if m.matches(t.Target) {
			return true
		}
	}
	return false
}

// checkTargets makes sure every construct lands somewhere: a construct for a
// node pool that cluster.yaml does not have would silently do nothing.
func checkTargets(c *config.Cluster, set *construct.Set) diag.List {
	pools := map[string]bool{}
	for _, p := range c.NodePools {
		pools[p.Name] = true
	}
	var diags diag.List
	check := func(t construct.Target, what, where, plugin string) {
		n := len(diags)
		defer func() {
			for i := n; i < len(diags); i++ {
				diags[i] = diags[i].About(plugin)
			}
		}()
		switch {
		case t.Role != construct.Controller && t.Role != construct.Etcd && t.Role != construct.Worker:
			diags = append(diags, diag.Fatalf("%s targets role %q", what, t.Role).At(where).
				WithHint("use controller, etcd or worker"))
		case t.NodePool != "" && t.Role != construct.Worker:
			diags = append(diags, diag.Fatalf("%s targets node pool %q with role %s", what, t.NodePool, t.Role).At(where).
				WithHint("a node pool target needs role worker"))
		case t.NodePool != "" && !pools[t.NodePool]:
			diags = append(diags, diag.Fatalf("%s targets node pool %q, which cluster.yaml does not define", what, t.NodePool).At(where).
				WithHint("add the pool to nodePools or fix the name"))
		}
	}
	for _, f := range set.Files {
		check(f.Target, "file "+f.Path, fmt.Sprintf("constructs.files[%s:%s]", f.Target, f.Path), f.Plugin)
	}
	for _, u := range set.Units {
		check(u.Target, "unit "+u.Name, unitPath(u), u.Plugin)
	}
	for _, f := range set.KubeletFlags {
		check(f.Target, "kubelet flag --"+f.Name, fmt.Sprintf("constructs.kubeletFlags[%s:%s]", f.Target, f.Name), f.Plugin)
	}
	for _, l := range set.NodeLabels {
		check(l.Target, "node label "+l.Key, fmt.Sprintf("constructs.nodeLabels[%s:%s]", l.Target, l.Key), l.Plugin)
	}
	for _, t := range set.NodeTaints {
		check(t.Target, "node taint "+t.Key, fmt.Sprintf("constructs.nodeTaints[%s:%s:%s]", t.Target, t.Key, t.Effect), t.Plugin)
	}
	return diags
}
