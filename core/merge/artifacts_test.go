package merge

import (
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/construct"
)

const (
	sumA = "1ca4bc7eb9b3d6f1e205da9cfab437c89d3760d0765a29a6bcbccf4ad51a2cb1"
	sumB = "039d939d06dc4bfeaed7490cc358c6e58cb232792a8d4a0f63b8a089e688d684"
)

func kubelet(target construct.Target, sum string) construct.Artifact {
	return construct.Artifact{
		Target: target, Name: "kubelet", Version: "v1.34.4", Kind: construct.Binary,
		Files: []construct.ArtifactFile{{Name: "kubelet", Path: "/usr/local/bin/kubelet"}},
		Sources: map[string]construct.ArtifactSource{
			"amd64": {URL: "https://dl.k8s.io/v1.34.4/bin/linux/amd64/kubelet", SHA256: sum},
		},
	}
}

func TestArtifactsMerge(t *testing.T) {
	// The same release for two targets from two plugins: one entry per
	// target, each naming its plugin; Mirrored a plugin sent is dropped.
	a := kubelet(controller, sumA)
	src := a.Sources["amd64"]
	src.Mirrored = map[string]string{"kubelet": sumB}
	a.Sources["amd64"] = src
	out := mustMerge(t, two(
		construct.Set{Artifacts: []construct.Artifact{a, kubelet(worker, sumA)}},
		construct.Set{Artifacts: []construct.Artifact{kubelet(worker, sumA), kubelet(pool1, sumA)}},
	))
	var got []string
	for _, x := range out.Artifacts {
		got = append(got, x.Target.String()+":"+x.Plugin)
		if x.Sources["amd64"].Mirrored != nil {
			t.Errorf("Mirrored from a plugin kept: %+v", x.Sources)
		}
	}
	if strings.Join(got, " ") != "controller:alpha worker:alpha worker/pool1:beta" {
		t.Fatalf("merged artifacts: %v", got)
	}
	if a.Sources["amd64"].Mirrored == nil {
		t.Fatal("the plugin's own set was changed")
	}

	// Another release of the same name is a conflict, whatever the targets.
	_, diags := Merge(two(
		construct.Set{Artifacts: []construct.Artifact{kubelet(controller, sumA)}},
		construct.Set{Artifacts: []construct.Artifact{kubelet(worker, sumB)}},
	))
	checkConflict(t, diags, "beta", "constructs.artifacts[kubelet]", `"alpha"`, `"beta"`, "/sources/amd64/sha256", sumA, sumB)
}

func TestBadArtifacts(t *testing.T) {
	mod := func(f func(a *construct.Artifact)) construct.Artifact {
		a := kubelet(controller, sumA)
		f(&a)
		return a
	}
	image := construct.Artifact{Target: controller, Name: "pause", Version: "3.10.1", Kind: construct.Image,
		Reference: "registry.k8s.io/pause:3.10.1", Sources: map[string]construct.ArtifactSource{"amd64": {Digest: "sha256:" + sumA}}}
	cases := []struct {
		name string
		a    construct.Artifact
		want string
	}{
		{"no name", mod(func(a *construct.Artifact) { a.Name = "" }), "has no usable name"},
		{"name with a slash", mod(func(a *construct.Artifact) { a.Name = "k/let" }), "has no usable name"},
		{"no version", mod(func(a *construct.Artifact) { a.Version = ".." }), "has no usable version"},
		{"no sources", mod(func(a *construct.Artifact) { a.Sources = nil }), "has no source"},
		{"unknown architecture", mod(func(a *construct.Artifact) { a.Sources["x86"] = a.Sources["amd64"] }), `architecture "x86"`},
		{"unknown kind", mod(func(a *construct.Artifact) { a.Kind = "tarball" }), `kind "tarball"`},
		{"binary without files", mod(func(a *construct.Artifact) { a.Files = nil }), "without files"},
		{"relative install path", mod(func(a *construct.Artifact) { a.Files[0].Path = "bin/kubelet" }), `not an absolute clean path`},
		{"unpinned download", mod(func(a *construct.Artifact) { a.Sources["amd64"] = construct.ArtifactSource{URL: "https://x"} }), "sha256"},
		{"member of no file", mod(func(a *construct.Artifact) {
			a.Sources["amd64"] = construct.ArtifactSource{URL: "https://x", SHA256: sumA, Members: map[string]string{"etcd": "x/etcd"}}
		}), `member for "etcd"`},
		{"several files without members", mod(func(a *construct.Artifact) {
			a.Files = append(a.Files, construct.ArtifactFile{Name: "kubectl", Path: "/usr/local/bin/kubectl"})
		}), "name each file's member"},
		{"image without digest", func() construct.Artifact {
			i := image
			i.Sources = map[string]construct.ArtifactSource{"amd64": {URL: "https://x", SHA256: sumA}}
			return i
		}(), "digest"},
		{"image with a malformed digest", func() construct.Artifact {
			i := image
			i.Sources = map[string]construct.ArtifactSource{"amd64": {Digest: "sha256:abc"}}
			return i
		}(), "digest"},
		{"image without reference", func() construct.Artifact { i := image; i.Reference = ""; return i }(), "without a reference"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := Merge([]Contribution{{Plugin: "alpha", Set: &construct.Set{Artifacts: []construct.Artifact{tc.a}}}})
			checkConflict(t, diags, "alpha", "constructs.artifacts["+tc.a.Name+"]", tc.want)
		})
	}
	mirrorOnly := image
	mirrorOnly.Sources = map[string]construct.ArtifactSource{"amd64": {}}
	if _, diags := Merge([]Contribution{{Plugin: "alpha", Set: &construct.Set{Artifacts: []construct.Artifact{mirrorOnly}}}}); len(diags) != 0 {
		t.Fatalf("an image without an upstream pin (air-gapped only): %s", diags.Error())
	}
	if _, diags := Merge([]Contribution{{Plugin: "alpha", Set: &construct.Set{Artifacts: []construct.Artifact{image}}}}); len(diags) != 0 {
		t.Fatalf("a good image: %s", diags.Error())
	}
}
