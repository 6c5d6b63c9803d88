package artifacts

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

func TestDefaultExecName(t *testing.T) {
	for _, c := range []struct{ pkg, want string }{
		{"k8s.io/kubernetes/cmd/kubelet", "kubelet"},
		{"go.etcd.io/etcd/server/v3", "server"},
		{"go.etcd.io/etcd/etcdctl/v3", "etcdctl"},
		{"github.com/coredns/coredns", "coredns"},
		{"example.com/tool/v1", "v1"},   // v1 is no major version suffix
		{"example.com/tool/v0", "v0"},   // nor is v0
		{"example.com/tool/v02", "v02"}, // nor a leading zero
		{"v2", "v2"},                    // a lone element stays
	} {
		if got := defaultExecName(c.pkg); got != c.want {
			t.Errorf("defaultExecName(%q) = %q, want %q", c.pkg, got, c.want)
		}
	}
}

func TestReleases(t *testing.T) {
	for _, c := range []struct {
		versions []string
		want     []string
		wantErr  string
	}{
		{versions: nil, want: KubernetesVersions()},
		{versions: []string{"1.34.4"}, want: []string{"v1.34.4"}},
		{versions: []string{"v1.34.4", "1.33.13"}, want: []string{"v1.33.13", "v1.34.4"}},
		{versions: []string{"1.32.1", "v1.35.0"}, wantErr: "unknown Kubernetes version v1.32.1, v1.35.0: the builder knows v1.33.13, v1.34.4"},
		{versions: []string{"latest"}, wantErr: `Kubernetes version "latest"`},
	} {
		got, err := Releases(c.versions)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("Releases(%v) error %v, want %q", c.versions, err, c.wantErr)
			}
			continue
		}
		var vs []string
		for _, k := range got {
			vs = append(vs, k.Version)
		}
		if err != nil || !slices.Equal(vs, c.want) {
			t.Errorf("Releases(%v) = %v, %v; want %v", c.versions, vs, err, c.want)
		}
	}
}

func TestLookup(t *testing.T) {
	releases := KubernetesReleases()
	all, err := Lookup(releases, nil)
	if err != nil || len(all) != len(Catalogue(releases)) {
		t.Fatalf("Lookup(nil) = %d artifacts, %v; want all %d", len(all), err, len(Catalogue(releases)))
	}
	for _, c := range []struct {
		names   []string
		want    []string
		wantErr string
	}{
		{names: []string{"pause", "etcd"}, want: []string{"pause 3.10.1", "etcd v3.6.5"}},
		// A name of an artifact that follows Kubernetes selects it for
		// every release.
		{names: []string{"kubelet"}, want: []string{"kubelet v1.33.13", "kubelet v1.34.4"}},
		{names: []string{"pause", "kube-dns", "weave"}, wantErr: "unknown artifact kube-dns, weave: the folder holds kubelet, kube-apiserver"},
	} {
		got, err := Lookup(releases, c.names)
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("Lookup(%v) error %v, want %q", c.names, err, c.wantErr)
			}
			continue
		}
		var names []string
		for _, a := range got {
			names = append(names, a.Name+" "+a.Version)
		}
		if err != nil || !slices.Equal(names, c.want) {
			t.Errorf("Lookup(%v) = %v, %v; want %v", c.names, names, err, c.want)
		}
	}
}

// TestCatalogueLayout checks the folder layout the cluster design fixes:
// every artifact's path and every image's reference, for a folder holding
// both Kubernetes releases, and that what the releases share is there once.
func TestCatalogueLayout(t *testing.T) {
	want := map[string]string{
		"etcd/v3.6.5/linux-amd64":        "etcd etcdctl etcdutl",
		"cni-plugins/v0.9.1/linux-amd64": "flannel bridge host-local loopback portmap",
		"pause/3.10.1/linux-amd64":       "image.tar registry.k8s.io/pause:3.10.1",
		"coredns/v1.12.1/linux-amd64":    "image.tar registry.k8s.io/coredns/coredns:v1.12.1",
		"flannel/v0.27.4/linux-amd64":    "image.tar ghcr.io/flannel-io/flannel:v0.27.4",
	}
	for _, k := range []struct{ version, ccm string }{{"v1.33.13", "v1.33.4"}, {"v1.34.4", "v1.34.3"}} {
		want["kubelet/"+k.version+"/linux-amd64"] = "kubelet"
		for _, n := range []string{"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kube-proxy"} {
			want[n+"/"+k.version+"/linux-amd64"] = "image.tar registry.k8s.io/" + n + ":" + k.version
		}
		want["cloud-controller-manager/"+k.ccm+"/linux-amd64"] = "image.tar registry.k8s.io/provider-aws/cloud-controller-manager:" + k.ccm
	}
	got := map[string]string{}
	all := Catalogue(KubernetesReleases())
	for _, a := range all {
		v := strings.Join(a.Files, " ")
		if a.Image != "" {
			v += " " + a.Image
		}
		if _, dup := got[a.Dir("", "amd64")]; dup {
			t.Errorf("%s is in the catalogue twice", a.Dir("", "amd64"))
		}
		got[a.Dir("", "amd64")] = v
		if a.image == nil && len(a.binaries) != len(a.Files) {
			t.Errorf("%s: %d files but %d binary sources", a.Name, len(a.Files), len(a.binaries))
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s holds %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("the catalogue has %d artifacts, want %d: %v", len(got), len(want), got)
	}

	// Every release's artifacts come from its own builds, each with a
	// scratch module in this checkout; the shared ones from one build.
	builds, _ := needs(all)
	wantBuilds := []string{"cloud-provider-aws-v1.33.4", "cloud-provider-aws-v1.34.3", "cni-plugins", "coredns", "etcd",
		"flannel", "kubernetes-v1.33.13", "kubernetes-v1.34.4", "pause"}
	if !slices.Equal(builds, wantBuilds) {
		t.Errorf("builds %v, want %v", builds, wantBuilds)
	}
	for _, b := range builds {
		if _, err := os.Stat(filepath.Join("modules", goBuilds[b].module, "go.mod")); err != nil {
			t.Errorf("build %s: %v", b, err)
		}
	}
	if m := goBuilds["kubernetes-v1.33.13"]; m.module != "kubernetes-1.33" || !slices.Contains(m.ldflags, "-X k8s.io/component-base/version.gitMinor=33") ||
		!slices.Contains(m.ldflags, "-X k8s.io/client-go/pkg/version.gitVersion=v1.33.13") {
		t.Errorf("the 1.33 build %+v", m)
	}
}

// TestScratchModulesPinTheirRelease: each release's scratch modules build
// exactly that release: k8s.io/kubernetes at its version with every staging
// module replaced by the same patch, and the cloud provider's own release.
func TestScratchModulesPinTheirRelease(t *testing.T) {
	for _, k := range KubernetesReleases() {
		_, suffix := k.minor()
		b, err := os.ReadFile(filepath.Join("modules", "kubernetes-"+suffix, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		mod := string(b)
		staging := "v0." + strings.TrimPrefix(k.Version, "v1.")
		if !strings.Contains(mod, "\tk8s.io/kubernetes "+k.Version+" ") {
			t.Errorf("modules/kubernetes-%s does not require k8s.io/kubernetes %s", suffix, k.Version)
		}
		replaced := regexp.MustCompile(`(?m)^\t(k8s\.io/\S+) => (k8s\.io/\S+) (\S+)$`).FindAllStringSubmatch(mod, -1)
		for _, r := range replaced {
			if r[1] != r[2] || r[3] != staging {
				t.Errorf("modules/kubernetes-%s replaces %s by %s %s, want its %s twin", suffix, r[1], r[2], r[3], staging)
			}
		}
		if len(replaced) < 30 {
			t.Errorf("modules/kubernetes-%s replaces %d staging modules, want all 31", suffix, len(replaced))
		}
		c, err := os.ReadFile(filepath.Join("modules", "cloud-provider-aws-"+suffix, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(c), "\tk8s.io/cloud-provider-aws "+k.CloudProviderAWS+" ") {
			t.Errorf("modules/cloud-provider-aws-%s does not require k8s.io/cloud-provider-aws %s", suffix, k.CloudProviderAWS)
		}
	}
}

// readLayer returns a zstd-compressed layer's headers and file contents.
func readLayer(t *testing.T, p string) ([]*tar.Header, map[string]string) {
	t.Helper()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := zstd.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	tr := tar.NewReader(zr)
	var hdrs []*tar.Header
	content := map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return hdrs, content
		}
		if err != nil {
			t.Fatal(err)
		}
		hdrs = append(hdrs, h)
		b, _ := io.ReadAll(tr)
		content[h.Name] = string(b)
	}
}

func TestWriteLayer(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.WriteFile(bin, []byte("binary"), 0o700); err != nil {
		t.Fatal(err)
	}
	entries := []entry{
		{path: "/usr/local/bin/tool", typ: tar.TypeReg, mode: 0o755, src: bin, caps: capNetBindService},
		{path: "/etc/passwd", typ: tar.TypeReg, mode: 0o644, data: []byte("root:x:0:0::/:/sbin/nologin\n")},
		{path: "/usr/sbin/iptables", typ: tar.TypeSymlink, mode: 0o777, link: "iptables-nft"},
		{path: "/home/nonroot", typ: tar.TypeDir, mode: 0o700, uid: 65532, gid: 65532},
	}
	a, b := filepath.Join(dir, "a.tar.gz"), filepath.Join(dir, "b.tar.gz")
	if err := writeLayer(a, entries); err != nil {
		t.Fatal(err)
	}
	// The same entries in another order make the same bytes: digests are
	// stable, so machines never fetch an unchanged layer again.
	if err := writeLayer(b, []entry{entries[3], entries[2], entries[1], entries[0]}); err != nil {
		t.Fatal(err)
	}
	sa, _ := fileutil.SHA256(a)
	sb, _ := fileutil.SHA256(b)
	if sa != sb {
		t.Errorf("the same entries in another order give another layer: %s != %s", sa, sb)
	}

	hdrs, content := readLayer(t, a)
	var names []string
	byName := map[string]*tar.Header{}
	for _, h := range hdrs {
		names = append(names, h.Name)
		byName[h.Name] = h
		if !h.ModTime.Equal(epoch) {
			t.Errorf("%s dated %v, want %v", h.Name, h.ModTime, epoch)
		}
	}
	wantNames := []string{"etc/", "etc/passwd", "home/", "home/nonroot/", "usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/tool", "usr/sbin/", "usr/sbin/iptables"}
	if !slices.Equal(names, wantNames) {
		t.Errorf("layer entries %q, want %q (sorted, with parents)", names, wantNames)
	}
	if h := byName["usr/local/bin/tool"]; h.Mode != 0o755 || content[h.Name] != "binary" {
		t.Errorf("tool: mode %o content %q, want 755 \"binary\"", h.Mode, content[h.Name])
	}
	// setcap cap_net_bind_service=+ep writes exactly these 20 bytes.
	wantCap := "\x01\x00\x00\x02\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
	if got := byName["usr/local/bin/tool"].PAXRecords["SCHILY.xattr.security.capability"]; got != wantCap {
		t.Errorf("tool capability xattr %q, want %q", got, wantCap)
	}
	if _, ok := byName["etc/passwd"].PAXRecords["SCHILY.xattr.security.capability"]; ok {
		t.Error("passwd carries a capability")
	}
	if h := byName["usr/sbin/iptables"]; h.Typeflag != tar.TypeSymlink || h.Linkname != "iptables-nft" {
		t.Errorf("iptables: type %q link %q", h.Typeflag, h.Linkname)
	}
	if h := byName["home/nonroot/"]; h.Uid != 65532 || h.Gid != 65532 || h.Mode != 0o700 {
		t.Errorf("home/nonroot: %d:%d mode %o, want 65532:65532 700", h.Uid, h.Gid, h.Mode)
	}
	if h := byName["usr/"]; h.Uid != 0 || h.Mode != 0o755 || h.Typeflag != tar.TypeDir {
		t.Errorf("added parent usr/: uid %d mode %o type %q, want root 755 dir", h.Uid, h.Mode, h.Typeflag)
	}
}

func TestWriteLayerMissingSource(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l.tar.gz")
	err := writeLayer(p, []entry{{path: "/x", typ: tar.TypeReg, mode: 0o755, src: "/nonexistent/binary"}})
	if err == nil || !strings.Contains(err.Error(), "/x") {
		t.Fatalf("error %v, want one naming the entry", err)
	}
	if _, err := os.Stat(p); !os.IsNotExist(err) {
		t.Errorf("a failed layer left %s behind", p)
	}
}

func TestReadStamp(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(t *testing.T, state, out string)
		inputs string
		fresh  bool
	}{
		{name: "unchanged", inputs: "in", fresh: true},
		{name: "other inputs", inputs: "other"},
		{name: "output removed", inputs: "in", change: func(t *testing.T, _, out string) { os.Remove(out) }},
		{name: "output rewritten", inputs: "in", change: func(t *testing.T, _, out string) {
			os.WriteFile(out, []byte("changed!"), 0o644)
			os.Chtimes(out, time.Now().Add(time.Hour), time.Now().Add(time.Hour))
		}},
		{name: "output grew", inputs: "in", change: func(t *testing.T, _, out string) {
			fi, _ := os.Stat(out)
			os.WriteFile(out, []byte("content and more"), 0o644)
			os.Chtimes(out, fi.ModTime(), fi.ModTime())
		}},
		{name: "stamp corrupt", inputs: "in", change: func(t *testing.T, state, _ string) {
			os.WriteFile(stampFile(state, "step"), []byte("{not json"), 0o644)
		}},
		{name: "stamp missing", inputs: "in", change: func(t *testing.T, state, _ string) { os.Remove(stampFile(state, "step")) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			state := t.TempDir()
			out := filepath.Join(state, "out")
			if err := os.WriteFile(out, []byte("content"), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := writeStamp(state, "step", "in", []string{out}, nil, time.Second); err != nil {
				t.Fatal(err)
			}
			if c.change != nil {
				c.change(t, state, out)
			}
			s, fresh := readStamp(state, "step", c.inputs)
			if fresh != c.fresh {
				t.Fatalf("fresh = %v, want %v", fresh, c.fresh)
			}
			if fresh {
				if sum, err := s.sha256Of(out); err != nil || sum != "ed7002b439e9ac845f22357d822bac1444730fbdb6016d3ec9432297b9ec9f73" {
					t.Errorf("sha256Of = %q, %v", sum, err)
				}
			}
		})
	}
}

func TestPruneTree(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"bin/busybox", "bin/other", "usr/share/doc/x/copyright", "var/lib/dpkg/status", "usr/share/ca-certificates/mozilla/A.crt", "etc/protocols"} {
		os.MkdirAll(filepath.Join(root, filepath.Dir(f)), 0o755)
		os.WriteFile(filepath.Join(root, f), []byte(f), 0o644)
	}
	if err := pruneTree(root, []string{"bin/busybox"}); err != nil {
		t.Fatal(err)
	}
	var left []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if !d.IsDir() {
			rel, _ := filepath.Rel(root, p)
			left = append(left, rel)
		}
		return nil
	})
	if !slices.Equal(left, []string{"bin/busybox"}) {
		t.Errorf("left %q, want only bin/busybox", left)
	}
	if err := pruneTree(root, []string{"usr/sbin/iptables"}); err == nil || !strings.Contains(err.Error(), "usr/sbin/iptables") {
		t.Errorf("keeping a path the packages lack: error %v, want one naming it", err)
	}
}

// sourceRoot is this checkout.
func sourceRoot(t *testing.T) string {
	t.Helper()
	root, err := SourceRoot(context.Background(), "", ".")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestBuildPause runs the whole pipeline on the one artifact that needs no
// Debian package: a real go build (cross-compiled for arm64), an image
// assembled and written, a second build that finds everything up to date,
// and a rebuild of an artifact whose output was damaged.
func TestBuildPause(t *testing.T) {
	src := sourceRoot(t)
	for _, arch := range Architectures {
		t.Run(arch, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "folder")
			opts := Options{Source: src, Dir: dir, Arch: arch, Only: []string{"pause"}}
			res, err := Build(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Artifacts) != 1 || res.Artifacts[0].Cached || len(res.Artifacts[0].Files) != 1 {
				t.Fatalf("result %+v, want one freshly built artifact with one file", res)
			}
			img := filepath.Join(dir, "pause/3.10.1/linux-"+arch+"/image.tar")
			if f := res.Artifacts[0].Files[0]; f.Path != "pause/3.10.1/linux-"+arch+"/image.tar" || f.Size == 0 {
				t.Errorf("file %+v", f)
			}

			// The binary is of the target architecture: cross-compiled on
			// an amd64 host for arm64.
			bin := filepath.Join(dir+".state", "build", "pause", "linux-"+arch, "pause")
			ef, err := elf.Open(bin)
			if err != nil {
				t.Fatal(err)
			}
			wantMachine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
			if ef.Machine != wantMachine {
				t.Errorf("pause binary for %s is %v, want %v", arch, ef.Machine, wantMachine)
			}
			ef.Close()

			image, err := OpenImage(img, t.TempDir(), "registry.k8s.io/pause:3.10.1")
			if err != nil {
				t.Fatal(err)
			}
			cf, err := image.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.Architecture != arch || cf.OS != "linux" || !slices.Equal(cf.Config.Entrypoint, []string{"/pause"}) || cf.Config.User != "65535:65535" {
				t.Errorf("config %s/%s entrypoint %q user %q", cf.OS, cf.Architecture, cf.Config.Entrypoint, cf.Config.User)
			}

			// Second build: every step up to date, the image untouched.
			before, _ := os.Stat(img)
			res, err = Build(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range res.Steps {
				if !s.Cached {
					t.Errorf("second build ran step %s again", s.ID)
				}
			}
			after, _ := os.Stat(img)
			if !after.ModTime().Equal(before.ModTime()) {
				t.Error("second build rewrote the image")
			}

			// A damaged output is rebuilt, byte for byte the same.
			sum, _ := fileutil.SHA256(img)
			if err := os.WriteFile(img, []byte("damaged"), 0o644); err != nil {
				t.Fatal(err)
			}
			if res, err = Build(context.Background(), opts); err != nil {
				t.Fatal(err)
			}
			if res.Artifacts[0].Cached {
				t.Error("a damaged image was not rebuilt")
			}
			if again, _ := fileutil.SHA256(img); again != sum {
				t.Errorf("rebuilt image %s differs from the first build %s: the build is not reproducible", again, sum)
			}
		})
	}
}

// TestBuildNoticesSourceChanges builds pause from a copy of the builder and
// its module, then changes the program: the Go build and the image are made
// again, while a change to nothing they depend on changes nothing.
func TestBuildNoticesSourceChanges(t *testing.T) {
	src := sourceRoot(t)
	copyRoot := t.TempDir()
	builder := filepath.Join("release", "artifacts")
	for _, rel := range []string{
		filepath.Join(builder, "modules", "pause", "go.mod"),
		filepath.Join(builder, "modules", "pause", "main.go"),
	} {
		copyFile(t, filepath.Join(src, rel), filepath.Join(copyRoot, rel))
	}
	gofiles, _ := filepath.Glob(filepath.Join(src, builder, "*.go"))
	for _, f := range gofiles {
		copyFile(t, f, filepath.Join(copyRoot, builder, filepath.Base(f)))
	}
	opts := Options{Source: copyRoot, Dir: filepath.Join(t.TempDir(), "folder"), Only: []string{"pause"}}
	build := func() map[string]bool {
		t.Helper()
		res, err := Build(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		cached := map[string]bool{}
		for _, s := range res.Steps {
			cached[s.ID] = s.Cached
		}
		return cached
	}
	build()

	// A test file of the builder is no input.
	os.WriteFile(filepath.Join(copyRoot, builder, "extra_test.go"), []byte("package artifacts\n"), 0o644)
	if c := build(); !c["gobuild-pause-linux-amd64"] || !c["artifact-pause-3.10.1-linux-amd64"] {
		t.Errorf("a new test file rebuilt: %v", c)
	}

	main := filepath.Join(copyRoot, builder, "modules", "pause", "main.go")
	b, _ := os.ReadFile(main)
	os.WriteFile(main, append(b, []byte("\n// changed\n")...), 0o644)
	if c := build(); c["gobuild-pause-linux-amd64"] || c["artifact-pause-3.10.1-linux-amd64"] {
		t.Errorf("a changed module source was not rebuilt: %v", c)
	}

	// The builder's own source is an input of every step.
	os.WriteFile(filepath.Join(copyRoot, builder, "zz.go"), []byte("package artifacts\n"), 0o644)
	if c := build(); c["gobuild-pause-linux-amd64"] || c["artifact-pause-3.10.1-linux-amd64"] {
		t.Errorf("a changed builder was not rebuilt: %v", c)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestBuildErrors(t *testing.T) {
	src := sourceRoot(t)
	dir := filepath.Join(t.TempDir(), "folder")
	for _, c := range []struct {
		name string
		opts Options
		want string
	}{
		{"architecture", Options{Source: src, Dir: dir, Arch: "s390x"}, `architecture "s390x": the builder makes amd64, arm64`},
		{"no folder", Options{Source: src}, "no artifact folder given"},
		{"not a checkout", Options{Source: t.TempDir(), Dir: dir}, "is not a kube-aws checkout"},
		{"unknown artifact", Options{Source: src, Dir: dir, Only: []string{"calico"}}, "unknown artifact calico"},
		{"go missing", Options{Source: src, Dir: dir, Go: "/nonexistent/go"}, "is Go installed and on PATH?"},
		{"debian sources missing", Options{Source: src, Dir: dir, Only: []string{"coredns"}, DebianSources: "/nonexistent/debian.sources"},
			"debian sources /nonexistent/debian.sources"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Build(context.Background(), c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("failed builds wrote into the folder: %v", entries)
	}
}

func TestGoBuildFailureNamesModule(t *testing.T) {
	src := sourceRoot(t)
	copyRoot := t.TempDir()
	builder := filepath.Join("release", "artifacts")
	copyFile(t, filepath.Join(src, builder, "modules", "pause", "go.mod"), filepath.Join(copyRoot, builder, "modules", "pause", "go.mod"))
	os.WriteFile(filepath.Join(copyRoot, builder, "modules", "pause", "main.go"), []byte("package main\nfunc main() { undefined() }\n"), 0o644)
	dir := filepath.Join(t.TempDir(), "folder")
	var log bytes.Buffer
	_, err := Build(context.Background(), Options{Source: copyRoot, Dir: dir, Only: []string{"pause"}, Log: &log})
	if err == nil || !strings.Contains(err.Error(), "go build pause for linux-amd64 failed in") || !strings.Contains(err.Error(), "undefined: undefined") {
		t.Fatalf("error %v, want the module and the compiler's message", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "pause")); !os.IsNotExist(err) {
		t.Error("a failed build left an artifact in the folder")
	}
	if _, err := os.Stat(filepath.Join(dir+".state", "build", "pause", "linux-amd64.tmp")); !os.IsNotExist(err) {
		t.Error("a failed build left its temporary output behind")
	}
}
