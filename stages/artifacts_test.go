package stages

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
)

func TestResolveArtifacts(t *testing.T) {
	sum := strings.Repeat("a", 64)
	etcd := func() construct.Artifact {
		return construct.Artifact{Target: construct.Target{Role: construct.Etcd}, Name: "etcd", Version: "v3.6.5", Kind: construct.Binary, Plugin: "etcd",
			Files: []construct.ArtifactFile{{Name: "etcd", Path: "/usr/local/bin/etcd"}, {Name: "etcdctl", Path: "/usr/local/bin/etcdctl"}},
			Sources: map[string]construct.ArtifactSource{"amd64": {URL: "https://x/etcd.tgz", SHA256: sum,
				Members: map[string]string{"etcd": "d/etcd", "etcdctl": "d/etcdctl"}}}}
	}
	pause := func() construct.Artifact {
		return construct.Artifact{Target: construct.Target{Role: construct.Worker}, Name: "pause", Version: "3.10.1", Kind: construct.Image, Plugin: "kubernetes",
			Reference: "registry.k8s.io/pause:3.10.1", Sources: map[string]construct.ArtifactSource{"amd64": {Digest: "sha256:" + sum}}}
	}
	cluster := func(mirror string) *config.Cluster {
		return &config.Cluster{Artifacts: config.Artifacts{Mirror: mirror},
			Etcd:      config.MachineSet{InstanceType: "t3.small"},
			NodePools: []config.NodePool{{Name: "x86", InstanceType: "m5.large"}, {Name: "graviton", InstanceType: "m7g.large"}}}
	}

	t.Run("upstream: an architecture without a source", func(t *testing.T) {
		set := &construct.Set{Artifacts: []construct.Artifact{etcd(), pause()}}
		diags := resolveArtifacts(cluster(""), t.TempDir(), set)
		if len(diags) != 1 || diags[0].Plugin != "kubernetes" || !strings.Contains(diags[0].Message, "pause 3.10.1 has no source for arm64, which machines of worker run on") {
			t.Fatalf("diagnostics:\n%s", diags.Error())
		}
	})

	t.Run("upstream: an image without a pinned digest is for the mirror only", func(t *testing.T) {
		p := pause()
		p.Sources = map[string]construct.ArtifactSource{"amd64": {}, "arm64": {}}
		diags := resolveArtifacts(cluster(""), t.TempDir(), &construct.Set{Artifacts: []construct.Artifact{p}})
		if len(diags) != 2 || diags[0].Plugin != "kubernetes" || !strings.Contains(diags[0].Message, "has no pinned upstream digest for amd64") ||
			!strings.Contains(diags[0].Hint, "artifacts.mirror") {
			t.Fatalf("diagnostics:\n%s", diags.Error())
		}
	})

	t.Run("mirror: every file hashed, every missing one listed", func(t *testing.T) {
		dir := t.TempDir()
		write := func(rel, content string) string {
			p := filepath.Join(dir, "mirror", filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			h := sha256.Sum256([]byte(content))
			return hex.EncodeToString(h[:])
		}
		etcdSum := write("etcd/v3.6.5/linux-amd64/etcd", "etcd binary")
		ctlSum := write("etcd/v3.6.5/linux-amd64/etcdctl", "etcdctl binary")
		pauseSum := write("pause/3.10.1/linux-amd64/image.tar", "pause image")
		set := &construct.Set{Artifacts: []construct.Artifact{etcd(), pause()}}
		diags := resolveArtifacts(cluster("mirror"), dir, set)
		if len(diags) != 1 || !strings.Contains(diags[0].Message, "lacks 1 file(s)") ||
			!strings.Contains(diags[0].Message, filepath.Join(dir, "mirror/pause/3.10.1/linux-arm64/image.tar")+" (pause 3.10.1, plugin kubernetes): missing") {
			t.Fatalf("diagnostics:\n%s", diags.Error())
		}
		if got := set.Artifacts[0].Sources["amd64"].Mirrored; got["etcd"] != etcdSum || got["etcdctl"] != ctlSum {
			t.Errorf("etcd mirrored: %v", got)
		}
		if got := set.Artifacts[1].Sources["amd64"].Mirrored; got[construct.MirrorImageFile] != pauseSum {
			t.Errorf("pause mirrored: %v", got)
		}

		write("pause/3.10.1/linux-arm64/image.tar", "pause image for arm64")
		set = &construct.Set{Artifacts: []construct.Artifact{etcd(), pause()}}
		if diags := resolveArtifacts(cluster("mirror"), dir, set); len(diags) != 0 {
			t.Fatalf("diagnostics:\n%s", diags.Error())
		}
		// The mirror is the source of an architecture upstream has none for.
		if src, ok := set.Artifacts[1].Sources["arm64"]; !ok || src.Mirrored[construct.MirrorImageFile] == "" {
			t.Errorf("arm64 pause not taken from the mirror: %+v", set.Artifacts[1].Sources)
		}
	})
}
