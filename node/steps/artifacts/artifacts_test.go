package artifacts

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/command"
	"github.com/kube-aws/kube-aws/node/images"
	"github.com/kube-aws/kube-aws/node/step"
	"github.com/kube-aws/kube-aws/test/agenttest"
)

var motoURL string

func TestMain(m *testing.M) { agenttest.MotoMain(m, &motoURL) }

func targz(t *testing.T, files map[string]string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: "etcd-v3.6.5-linux-amd64/", Typeflag: tar.TypeDir, Mode: 0o755})
	for n, c := range files {
		tw.WriteHeader(&tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(c))})
		tw.Write([]byte(c))
	}
	tw.Close()
	zw.Close()
	return b.Bytes()
}

// imageArchive is an image tarball as the harness makes them:
// go-containerregistry's tarball.Write, tagged with the upstream name.
func imageArchive(t *testing.T, ref string) []byte { return imageArchiveOf(t, ref, nil) }

// imageArchiveOf is an image archive whose layer also holds extra, a
// file of that content.
func imageArchiveOf(t *testing.T, ref string, extra []byte) []byte {
	t.Helper()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		tw.WriteHeader(&tar.Header{Name: "pause", Typeflag: tar.TypeReg, Mode: 0o755, Size: 5})
		tw.Write([]byte("pause"))
		if extra != nil {
			tw.WriteHeader(&tar.Header{Name: "extra", Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(extra))})
			tw.Write(extra)
		}
		tw.Close()
		return io.NopCloser(bytes.NewReader(b.Bytes())), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := img.ConfigFile()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Config.Entrypoint = []string{"/pause"}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		t.Fatal(err)
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := tarball.Write(tag, img, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func put(t *testing.T, e *agent.Env, body []byte) (key, sum string) {
	t.Helper()
	sum = nodeplan.SHA256Hex(body)
	if err := e.Store.Put(t.Context(), e.Settings.Key(nodeplan.AssetKey(sum)), body, "application/octet-stream"); err != nil {
		t.Fatal(err)
	}
	return nodeplan.AssetKey(sum), sum
}

func writePlan(t *testing.T, e *agent.Env, p *nodeplan.ArtifactsPlan) {
	agenttest.WritePlan(t, e, nodeplan.ArtifactsPath, p)
}

// Air-gapped binaries and images from the assets, an upstream tarball's
// member, installed for real into a real containerd; a second run fetches
// nothing.
func TestArtifacts(t *testing.T) {
	e, out := agenttest.Machine(t, motoURL, "nodepool-a", "artifacts")
	sock := agenttest.Containerd(t)
	kubelet := []byte("#!/bin/sh\necho kubelet\n")
	kubeletKey, kubeletSum := put(t, e, kubelet)
	etcdTgz := targz(t, map[string]string{"etcd-v3.6.5-linux-amd64/etcd": "etcd binary", "etcd-v3.6.5-linux-amd64/etcdctl": "etcdctl binary"})
	var downloads atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		downloads.Add(1)
		w.Write(etcdTgz)
	}))
	defer srv.Close()
	const ref = "registry.k8s.io/pause:3.10.1"
	archive := imageArchive(t, ref)
	imageKey, imageSum := put(t, e, archive)
	other := strings.Repeat("b", 64)

	writePlan(t, e, &nodeplan.ArtifactsPlan{
		Binaries: []nodeplan.Binary{
			{Name: "kubelet", Path: "/usr/local/bin/kubelet", Sources: map[nodeplan.Arch]nodeplan.Source{
				nodeplan.AMD64: {AssetKey: kubeletKey, SHA256: kubeletSum},
				nodeplan.ARM64: {AssetKey: nodeplan.AssetKey(other), SHA256: other},
			}},
			{Name: "etcdctl", Path: "/usr/local/bin/etcdctl", Mode: "0750", Sources: map[nodeplan.Arch]nodeplan.Source{
				nodeplan.AMD64: {URL: srv.URL + "/etcd-v3.6.5-linux-amd64.tar.gz", SHA256: nodeplan.SHA256Hex(etcdTgz), Member: "./etcd-v3.6.5-linux-amd64/etcdctl"},
			}},
		},
		Images: []nodeplan.Image{{Name: "pause", Reference: ref, Sources: map[nodeplan.Arch]nodeplan.ImageSource{
			nodeplan.AMD64: {AssetKey: imageKey, SHA256: imageSum},
		}}},
	})
	var lists atomic.Int64
	client := &images.Client{Address: sock, Run: func(ctx context.Context, name string, args ...string) (string, error) {
		if slices.Contains(args, "list") {
			lists.Add(1)
		}
		return command.Exec(ctx, name, args...)
	}}
	opts := &Step{Arch: nodeplan.AMD64, Images: client, Timeout: time.Minute}
	if err := step.Run(t.Context(), e, opts); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// The imported names come from ctr import's own output: containerd
	// is asked for its images once, before.
	if lists.Load() != 1 {
		t.Errorf("ctr images list ran %d times, want 1", lists.Load())
	}
	if b, _ := os.ReadFile(e.Path("/usr/local/bin/kubelet")); !bytes.Equal(b, kubelet) {
		t.Errorf("kubelet = %q", b)
	}
	st, _ := os.Stat(e.Path("/usr/local/bin/etcdctl"))
	if b, _ := os.ReadFile(e.Path("/usr/local/bin/etcdctl")); string(b) != "etcdctl binary" || st.Mode().Perm() != 0o750 {
		t.Errorf("etcdctl = %q, mode %v", b, st.Mode())
	}
	have, err := client.Digests(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if have[ref] == "" {
		t.Fatalf("containerd does not have %s: %v", ref, have)
	}
	// The kubelet finds it by that name in k8s.io, unpacked.
	if out, err := command.Exec(t.Context(), "ctr", "--address", sock, "--namespace", "k8s.io", "images", "check", "name=="+ref); err != nil || !strings.Contains(out, "complete") {
		t.Errorf("ctr images check: %q %v", out, err)
	}
	// The imported archive left the download cache; the upstream tarball,
	// whose other members the next run may want, stayed.
	if p, ok := e.Store.Cached(imageSum); ok {
		t.Errorf("the imported image archive is still in the cache: %s", p)
	}
	if _, ok := e.Store.Cached(nodeplan.SHA256Hex(etcdTgz)); !ok {
		t.Error("the upstream tarball left the cache")
	}

	// Again: nothing downloaded or imported.
	out.Reset()
	if err := step.Run(t.Context(), e, opts); err != nil {
		t.Fatal(err)
	}
	if downloads.Load() != 1 {
		t.Errorf("the upstream tarball was downloaded %d times", downloads.Load())
	}
	for _, line := range []string{"kubelet: /usr/local/bin/kubelet is current", "etcdctl: /usr/local/bin/etcdctl is current", "pause: " + ref + " is present"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("second run lacks %q:\n%s", line, out)
		}
	}
}

func TestArtifactsFailures(t *testing.T) {
	tests := []struct {
		name string
		plan func(e *agent.Env) *nodeplan.ArtifactsPlan
		arch nodeplan.Arch
		want string
		code int
	}{
		{
			name: "no source for this architecture",
			arch: nodeplan.ARM64,
			plan: func(e *agent.Env) *nodeplan.ArtifactsPlan {
				k, s := put(t, e, []byte("x"))
				return &nodeplan.ArtifactsPlan{Binaries: []nodeplan.Binary{{Name: "kubelet", Path: "/k", Sources: map[nodeplan.Arch]nodeplan.Source{nodeplan.AMD64: {AssetKey: k, SHA256: s}}}}}
			},
			want: "binaries[0] (kubelet) has no source for arm64",
			code: agent.ExitBadInput,
		},
		{
			name: "corrupted asset",
			plan: func(e *agent.Env) *nodeplan.ArtifactsPlan {
				sum := nodeplan.SHA256Hex([]byte("the real kubelet"))
				e.Store.Put(t.Context(), e.Settings.Key(nodeplan.AssetKey(sum)), []byte("tampered"), "")
				return &nodeplan.ArtifactsPlan{Binaries: []nodeplan.Binary{{Name: "kubelet", Path: "/k", Sources: map[nodeplan.Arch]nodeplan.Source{nodeplan.AMD64: {AssetKey: nodeplan.AssetKey(sum), SHA256: sum}}}}}
			},
			want: "binaries[0] (kubelet): s3://",
			code: agent.ExitFailed,
		},
		{
			name: "member missing",
			plan: func(e *agent.Env) *nodeplan.ArtifactsPlan {
				k, s := put(t, e, targz(t, map[string]string{"a/etcd": "x"}))
				return &nodeplan.ArtifactsPlan{Binaries: []nodeplan.Binary{{Name: "etcd", Path: "/e", Sources: map[nodeplan.Arch]nodeplan.Source{nodeplan.AMD64: {AssetKey: k, SHA256: s, Member: "a/etcdutl"}}}}}
			},
			want: "the archive has no file a/etcdutl",
			code: agent.ExitBadInput,
		},
		{
			name: "member of something not an archive",
			plan: func(e *agent.Env) *nodeplan.ArtifactsPlan {
				k, s := put(t, e, []byte("plain file, not a tar"))
				return &nodeplan.ArtifactsPlan{Binaries: []nodeplan.Binary{{Name: "etcd", Path: "/e", Sources: map[nodeplan.Arch]nodeplan.Source{nodeplan.AMD64: {AssetKey: k, SHA256: s, Member: "etcd"}}}}}
			},
			want: "not a tar archive",
			code: agent.ExitFailed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := agenttest.Machine(t, motoURL, "controller", "artifacts")
			writePlan(t, e, tt.plan(e))
			arch := tt.arch
			if arch == "" {
				arch = nodeplan.AMD64
			}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			err := step.Run(ctx, e, &Step{Arch: arch, Timeout: time.Minute})
			if err == nil || !strings.Contains(err.Error(), tt.want) || agent.ExitCode(err) != tt.code {
				t.Fatalf("err = %v (exit %d), want %q (exit %d)", err, agent.ExitCode(err), tt.want, tt.code)
			}
			for _, p := range []string{"/k", "/e"} {
				if _, err := os.Stat(e.Path(p)); err == nil {
					t.Errorf("%s installed despite the failure", p)
				}
			}
		})
	}
}

// An image archive that does not hold the name the plan gives is refused.
func TestImageNotInArchive(t *testing.T) {
	e, _ := agenttest.Machine(t, motoURL, "controller", "artifacts")
	sock := agenttest.Containerd(t)
	k, s := put(t, e, imageArchive(t, "registry.k8s.io/pause:3.9"))
	writePlan(t, e, &nodeplan.ArtifactsPlan{Images: []nodeplan.Image{{Name: "pause", Reference: "registry.k8s.io/pause:3.10.1",
		Sources: map[nodeplan.Arch]nodeplan.ImageSource{nodeplan.AMD64: {AssetKey: k, SHA256: s}}}}})
	err := step.Run(t.Context(), e, &Step{Arch: nodeplan.AMD64, Images: &images.Client{Run: command.Exec, Address: sock}, Timeout: time.Minute})
	if err == nil || !strings.Contains(err.Error(), "does not hold registry.k8s.io/pause:3.10.1") || agent.ExitCode(err) != agent.ExitBadInput {
		t.Fatalf("err = %v", err)
	}
}

// Upstream images are pulled by digest and named by their tag. No
// registry is reachable here, so ctr's command lines are checked.
func TestImagePull(t *testing.T) {
	e, _ := agenttest.Machine(t, motoURL, "controller", "artifacts")
	digest := "sha256:" + strings.Repeat("c", 64)
	writePlan(t, e, &nodeplan.ArtifactsPlan{Images: []nodeplan.Image{{Name: "coredns", Reference: "registry.k8s.io/coredns/coredns:v1.12.1",
		Sources: map[nodeplan.Arch]nodeplan.ImageSource{nodeplan.ARM64: {Digest: digest}}}}})
	var calls []string
	listed := "REF TYPE DIGEST SIZE PLATFORMS LABELS\n"
	run := func(_ context.Context, name string, args ...string) (string, error) {
		calls = append(calls, command.Line(name, args...))
		if args[len(args)-1] == "list" {
			return listed, nil
		}
		return "", nil
	}
	o := &Step{Arch: nodeplan.ARM64, Images: &images.Client{Run: run}, Timeout: time.Minute}
	if err := step.Run(t.Context(), e, o); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ctr --namespace k8s.io images list",
		"ctr --namespace k8s.io images pull --platform linux/arm64 registry.k8s.io/coredns/coredns@" + digest,
		"ctr --namespace k8s.io images tag --force registry.k8s.io/coredns/coredns@" + digest + " registry.k8s.io/coredns/coredns:v1.12.1",
	}
	if strings.Join(calls, "\n") != strings.Join(want, "\n") {
		t.Errorf("ctr calls:\n%s\nwant:\n%s", strings.Join(calls, "\n"), strings.Join(want, "\n"))
	}
	// Present with that digest: not pulled again.
	calls = nil
	listed += "registry.k8s.io/coredns/coredns:v1.12.1 application/vnd.oci.image.index.v1+json " + digest + " 20.1 MiB linux/amd64,linux/arm64 -\n"
	if err := step.Run(t.Context(), e, o); err != nil || len(calls) != 1 {
		t.Errorf("second run: %v, calls %v", err, calls)
	}
}

// The dry run compares each binary with the file in place and asks
// containerd for its images; it downloads, installs, pulls and imports
// nothing.
func TestDryRun(t *testing.T) {
	kubelet := []byte("#!/bin/sh\necho kubelet\n")
	etcdTgz := targz(t, map[string]string{"etcd-v3.6.5-linux-amd64/etcdctl": "etcdctl binary"})
	var downloads atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		downloads.Add(1)
		w.Write(etcdTgz)
	}))
	defer srv.Close()
	coredns := "sha256:" + strings.Repeat("c", 64)
	pauseSum := strings.Repeat("d", 64)
	plan := &nodeplan.ArtifactsPlan{
		Binaries: []nodeplan.Binary{
			{Name: "kubelet", Path: "/usr/local/bin/kubelet", Sources: map[nodeplan.Arch]nodeplan.Source{
				nodeplan.AMD64: {AssetKey: nodeplan.AssetKey(nodeplan.SHA256Hex(kubelet)), SHA256: nodeplan.SHA256Hex(kubelet)}}},
			{Name: "etcdctl", Path: "/usr/local/bin/etcdctl", Sources: map[nodeplan.Arch]nodeplan.Source{
				nodeplan.AMD64: {URL: srv.URL + "/etcd.tar.gz", SHA256: nodeplan.SHA256Hex(etcdTgz), Member: "etcd-v3.6.5-linux-amd64/etcdctl"}}},
		},
		Images: []nodeplan.Image{
			{Name: "coredns", Reference: "registry.k8s.io/coredns/coredns:v1.12.1", Sources: map[nodeplan.Arch]nodeplan.ImageSource{nodeplan.AMD64: {Digest: coredns}}},
			{Name: "pause", Reference: "registry.k8s.io/pause:3.10.1", Sources: map[nodeplan.Arch]nodeplan.ImageSource{nodeplan.AMD64: {AssetKey: nodeplan.AssetKey(pauseSum), SHA256: pauseSum}}},
		},
	}
	const header = "REF TYPE DIGEST SIZE PLATFORMS LABELS\n"
	file := func(e *agent.Env, p string, b []byte, mode os.FileMode) {
		os.MkdirAll(e.Path(filepath.Dir(p)), 0o755)
		os.WriteFile(e.Path(p), b, mode)
	}
	tests := []struct {
		name   string
		setup  func(e *agent.Env)
		listed string
		arch   nodeplan.Arch
		want   agenttest.Want
	}{
		{
			name: "nothing installed", listed: header,
			want: agenttest.Want{Changes: []string{
				"install /usr/local/bin/kubelet: kubelet from " + plan.Binaries[0].Sources[nodeplan.AMD64].AssetKey,
				"install /usr/local/bin/etcdctl: etcdctl from " + srv.URL + "/etcd.tar.gz (etcd-v3.6.5-linux-amd64/etcdctl)",
				"pull registry.k8s.io/coredns/coredns:v1.12.1: coredns: registry.k8s.io/coredns/coredns@" + coredns,
				"import registry.k8s.io/pause:3.10.1: pause from assets/" + pauseSum,
			}},
		},
		{
			name: "all in place, one mode changed by hand",
			setup: func(e *agent.Env) {
				file(e, "/usr/local/bin/kubelet", kubelet, 0o644)
				file(e, "/usr/local/bin/etcdctl", []byte("etcdctl binary"), 0o755)
				file(e, nodeplan.StateDir+"/cache/"+nodeplan.SHA256Hex(etcdTgz), etcdTgz, 0o600)
				file(e, nodeplan.StateDir+"/images/"+pauseSum, []byte("registry.k8s.io/pause:3.10.1"), 0o644)
			},
			listed: header + "registry.k8s.io/coredns/coredns:v1.12.1 application/vnd.oci.image.index.v1+json " + coredns + " 20.1 MiB linux/amd64 -\n" +
				"registry.k8s.io/pause:3.10.1 application/vnd.oci.image.index.v1+json sha256:" + strings.Repeat("e", 64) + " 300 KiB linux/amd64 -\n",
			want: agenttest.Want{Changes: []string{"chmod /usr/local/bin/kubelet: kubelet: mode 0755"}},
		},
		{
			name: "an archive not in the cache is not downloaded to compare",
			setup: func(e *agent.Env) {
				file(e, "/usr/local/bin/kubelet", kubelet, 0o755)
				file(e, "/usr/local/bin/etcdctl", []byte("etcdctl binary"), 0o755)
			},
			listed: header,
			want: agenttest.Want{Changes: []string{
				"install /usr/local/bin/etcdctl: etcdctl from " + srv.URL + "/etcd.tar.gz (etcd-v3.6.5-linux-amd64/etcdctl)",
				"pull registry.k8s.io/coredns/coredns:v1.12.1: coredns: registry.k8s.io/coredns/coredns@" + coredns,
				"import registry.k8s.io/pause:3.10.1: pause from assets/" + pauseSum,
			}},
		},
		{name: "no source for this architecture", arch: nodeplan.ARM64, want: agenttest.Want{Err: "binaries[0] (kubelet) has no source for arm64", Code: agent.ExitBadInput}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := agenttest.Machine(t, motoURL, "controller", "artifacts")
			writePlan(t, e, plan)
			if tt.setup != nil {
				tt.setup(e)
			}
			var calls []string
			run := func(_ context.Context, name string, args ...string) (string, error) {
				calls = append(calls, command.Line(name, args...))
				return tt.listed, nil
			}
			arch := tt.arch
			if arch == "" {
				arch = nodeplan.AMD64
			}
			d, _ := agenttest.DryEnv(t, e)
			agenttest.ExpectDryRun(t, d, &Step{Arch: arch, Images: &images.Client{Run: run}, Timeout: time.Minute}, tt.want)
			if len(calls) > 1 || downloads.Load() != 0 {
				t.Errorf("ctr was asked %v; %d downloads", calls, downloads.Load())
			}
		})
	}
}

// Binaries and images are put in place at once: the images, which take
// longest, do not wait for the binaries (here a binary's download cannot
// finish until an image is being pulled), and the members of one archive
// installed side by side download it once.
func TestBinariesAndImagesAtOnce(t *testing.T) {
	e, out := agenttest.Machine(t, motoURL, "nodepool-a", "artifacts")
	cniTgz := targz(t, map[string]string{"./bridge": "bridge binary", "./flannel": "flannel binary", "./loopback": "loopback binary"})
	pulling := make(chan struct{})
	var once sync.Once
	var downloads atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		downloads.Add(1)
		select {
		case <-pulling:
		case <-time.After(10 * time.Second):
			http.Error(w, "no image was being pulled while binaries downloaded", http.StatusTeapot)
			return
		}
		w.Write(cniTgz)
	}))
	defer srv.Close()
	var plan nodeplan.ArtifactsPlan
	for _, n := range []string{"bridge", "flannel", "loopback"} {
		plan.Binaries = append(plan.Binaries, nodeplan.Binary{Name: "cni-plugins " + n, Path: "/opt/cni/bin/" + n, Sources: map[nodeplan.Arch]nodeplan.Source{
			nodeplan.AMD64: {URL: srv.URL + "/cni.tgz", SHA256: nodeplan.SHA256Hex(cniTgz), Member: "./" + n}}})
	}
	digest := "sha256:" + strings.Repeat("c", 64)
	plan.Images = []nodeplan.Image{{Name: "coredns", Reference: "registry.k8s.io/coredns/coredns:v1.12.1",
		Sources: map[nodeplan.Arch]nodeplan.ImageSource{nodeplan.AMD64: {Digest: digest}}}}
	writePlan(t, e, &plan)
	run := func(ctx context.Context, name string, args ...string) (string, error) {
		if slices.Contains(args, "pull") {
			once.Do(func() { close(pulling) })
			// The pull lasts until the binaries are in.
			for _, n := range []string{"bridge", "flannel", "loopback"} {
				for {
					if _, err := os.Stat(e.Path("/opt/cni/bin/" + n)); err == nil {
						break
					}
					select {
					case <-ctx.Done():
						return "", ctx.Err()
					case <-time.After(10 * time.Millisecond):
					}
				}
			}
		}
		return "REF TYPE DIGEST SIZE PLATFORMS LABELS\n", nil
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := step.Run(ctx, e, &Step{Arch: nodeplan.AMD64, Images: &images.Client{Run: run}, Timeout: time.Minute}); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, n := range []string{"bridge", "flannel", "loopback"} {
		if b, _ := os.ReadFile(e.Path("/opt/cni/bin/" + n)); string(b) != n+" binary" {
			t.Errorf("%s = %q", n, b)
		}
	}
	if downloads.Load() != 1 {
		t.Errorf("the archive of three binaries was downloaded %d times, want 1", downloads.Load())
	}
}

// Two images of one archive: it is downloaded and imported once, streamed
// into ctr, and never written to the download cache.
func TestArchiveOfTwoImagesIsImportedOnce(t *testing.T) {
	e, out := agenttest.Machine(t, motoURL, "nodepool-a", "artifacts")
	archive := imageArchive(t, "registry.k8s.io/pause:3.10.1")
	key, sum := put(t, e, archive)
	refs := []string{"example.com/one:1", "example.com/two:2"}
	var plan nodeplan.ArtifactsPlan
	for _, r := range refs {
		plan.Images = append(plan.Images, nodeplan.Image{Name: r, Reference: r,
			Sources: map[nodeplan.Arch]nodeplan.ImageSource{nodeplan.AMD64: {AssetKey: key, SHA256: sum}}})
	}
	writePlan(t, e, &plan)
	var imports, others atomic.Int64
	run := func(ctx context.Context, name string, args ...string) (string, error) {
		if !slices.Contains(args, "list") || others.Add(1) > 1 {
			return "", fmt.Errorf("ctr %v: only the first list is expected", args)
		}
		return "REF TYPE DIGEST SIZE PLATFORMS LABELS\n", nil
	}
	input := func(ctx context.Context, stdin io.Reader, name string, args ...string) (string, error) {
		imports.Add(1)
		b, err := io.ReadAll(stdin)
		if err != nil || !bytes.Equal(b, archive) || args[len(args)-1] != "-" {
			return "", fmt.Errorf("ctr %v read %d bytes of the archive: %v", args, len(b), err)
		}
		// A fake containerd: the archive holds both names.
		return "unpacking example.com/one:1 (sha256:" + strings.Repeat("d", 64) + ")...done\nunpacking example.com/two:2 (sha256:" + strings.Repeat("e", 64) + ")...done\n", nil
	}
	if err := step.Run(t.Context(), e, &Step{Arch: nodeplan.AMD64, Images: &images.Client{Run: run, RunInput: input}, Timeout: time.Minute}); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if imports.Load() != 1 {
		t.Errorf("the archive was imported %d times for its two images, want 1", imports.Load())
	}
	if entries, _ := os.ReadDir(e.Store.CacheDir); len(entries) != 0 {
		t.Errorf("the download cache holds %d files, want none: archives are streamed", len(entries))
	}
	for _, r := range refs {
		if !strings.Contains(out.String(), r+": imported "+r+" from "+key+", "+fmt.Sprint(len(archive))+" bytes") {
			t.Errorf("no import line for %s:\n%s", r, out)
		}
	}
}

// An archive that is not the one the plan names gets no name in a real
// containerd, whether ctr reaches the archive's end only with the bytes
// held back until the check (an archive larger than them), or before them
// (an archive padded past them, whose images are removed again); the right
// archive, padded, is imported.
func TestWrongImageArchiveGetsNoName(t *testing.T) {
	const ref = "registry.k8s.io/pause:3.10.1"
	noise := make([]byte, 3*holdBack)
	rnd := rand.New(rand.NewPCG(3, 4))
	for i := range noise {
		noise[i] = byte(rnd.Uint32())
	}
	archive := imageArchiveOf(t, ref, noise)
	padded := append(slices.Clone(archive), make([]byte, 2*holdBack)...)
	tests := []struct {
		name      string
		served    []byte
		planned   []byte
		wantError string
	}{
		{name: "replaced archive", served: imageArchiveOf(t, ref, noise[1:]), planned: archive, wantError: "has sha256"},
		{name: "replaced archive, padded past the held bytes", served: append(slices.Clone(archive), make([]byte, 2*holdBack+512)...), planned: padded, wantError: "has sha256"},
		{name: "the planned archive, padded past the held bytes", served: padded, planned: padded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, out := agenttest.Machine(t, motoURL, "controller", "artifacts")
			sock := agenttest.Containerd(t)
			sum := nodeplan.SHA256Hex(tt.planned)
			if err := e.Store.Put(t.Context(), e.Settings.Key(nodeplan.AssetKey(sum)), tt.served, "application/octet-stream"); err != nil {
				t.Fatal(err)
			}
			writePlan(t, e, &nodeplan.ArtifactsPlan{Images: []nodeplan.Image{{Name: "pause", Reference: ref,
				Sources: map[nodeplan.Arch]nodeplan.ImageSource{nodeplan.AMD64: {AssetKey: nodeplan.AssetKey(sum), SHA256: sum}}}}})
			client := &images.Client{Run: command.Exec, Address: sock}
			err := step.Run(t.Context(), e, &Step{Arch: nodeplan.AMD64, Images: client, Timeout: time.Minute})
			have, listErr := client.Digests(t.Context())
			if listErr != nil {
				t.Fatal(listErr)
			}
			if tt.wantError == "" {
				if err != nil || have[ref] == "" {
					t.Fatalf("err = %v, containerd has %v\n%s", err, have, out)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantError) || agent.ExitCode(err) != agent.ExitFailed {
				t.Errorf("err = %v (exit %d), want %q", err, agent.ExitCode(err), tt.wantError)
			}
			if have[ref] != "" {
				t.Errorf("containerd named the wrong archive's image %s (%s)", ref, have[ref])
			}
		})
	}
}
