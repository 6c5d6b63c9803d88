package stages

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

// resolveArtifacts checks that every architecture a target's machines run
// has its artifacts, and in air-gapped mode (artifacts.mirror) takes every
// artifact's files from the mirror folder, recording each file's sha256 in
// the merged set (ArtifactSource.Mirrored) so render and deploy name the
// same content-addressed keys. It runs once, after the merge of
// initialise, so a missing file is found before anything is rendered, and
// lists every missing path at once.
func resolveArtifacts(c *config.Cluster, clusterDir string, set *construct.Set) diag.List {
	if c == nil || set == nil || len(set.Artifacts) == 0 {
		return nil
	}
	mirror := c.Artifacts.MirrorDir(clusterDir)
	var diags diag.List
	var missing []string
	missingSeen := map[string]bool{}
	sums := map[string]string{}
	for i := range set.Artifacts {
		a := &set.Artifacts[i]
		for _, arch := range c.Architectures(string(a.Target.Role), a.Target.NodePool) {
			src, ok := a.Sources[arch]
			if mirror == "" {
				if ok && a.Kind == construct.Image && src.Digest == "" {
					diags = append(diags, diag.Diagnostic{Severity: diag.Fatal, Plugin: a.Plugin, Stage: string(stage.Initialise),
						Path:    fmt.Sprintf("constructs.artifacts[%s]", a.Name),
						Message: fmt.Sprintf("image %s (%s) has no pinned upstream digest for %s, so machines of %s can only take it from an artifact folder", a.Reference, a.Name, arch, a.Target),
						Hint:    "set artifacts.mirror in cluster.yaml to a folder holding it (docs/artifacts.md), or use a version of plugin " + a.Plugin + " that pins its digest"})
					continue
				}
				if !ok {
					diags = append(diags, diag.Diagnostic{Severity: diag.Fatal, Plugin: a.Plugin, Stage: string(stage.Initialise),
						Path:    fmt.Sprintf("constructs.artifacts[%s]", a.Name),
						Message: fmt.Sprintf("artifact %s %s has no source for %s, which machines of %s run on", a.Name, a.Version, arch, a.Target),
						Hint:    fmt.Sprintf("choose instance types of another architecture for %s, or a version of plugin %s that ships %s %s for %s", a.Target, a.Plugin, a.Name, a.Version, arch)})
				}
				continue
			}
			for _, file := range a.MirrorFiles() {
				rel := a.MirrorPath(arch, file)
				full := filepath.Join(mirror, filepath.FromSlash(rel))
				sum, done := sums[full]
				if !done {
					var err error
					if sum, err = fileSHA256(full); err != nil {
						if !missingSeen[full] {
							missingSeen[full] = true
							missing = append(missing, fmt.Sprintf("%s (%s %s, plugin %s): %v", full, a.Name, a.Version, a.Plugin, reason(err)))
						}
						continue
					}
					sums[full] = sum
				}
				if src.Mirrored == nil {
					src.Mirrored = map[string]string{}
				}
				src.Mirrored[file] = sum
			}
			if src.Mirrored != nil {
				if a.Sources == nil {
					a.Sources = map[string]construct.ArtifactSource{}
				}
				a.Sources[arch] = src
			}
		}
	}
	if len(missing) > 0 {
		diags = append(diags, diag.Diagnostic{Severity: diag.Fatal, Stage: string(stage.Initialise), Path: "artifacts.mirror",
			Message: fmt.Sprintf("the artifact folder %s lacks %d file(s) the machines install:\n  %s", mirror, len(missing), strings.Join(missing, "\n  ")),
			Hint:    "fill the folder as docs/artifacts.md describes (make artifacts builds it), or remove artifacts.mirror from cluster.yaml to download from upstream"})
	}
	return diags
}

func reason(err error) string {
	if os.IsNotExist(err) {
		return "missing"
	}
	return err.Error()
}

// fileSHA256 hashes a regular file of the mirror folder.
func fileSHA256(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !st.Mode().IsRegular() {
		return "", fmt.Errorf("not a regular file")
	}
	return fileutil.SHA256(path)
}
