//go:build artifacts

// The checks of a built artifact folder (`make artifacts-test`): every
// binary reports its version, every image loads with go-containerregistry
// with the expected reference, platform, config and files, and the userland
// the images carry runs (iptables, conntrack, busybox) when chrooted into
// the image's file system. Too heavy for `make test`: they need the folder
// (`make artifacts`) and root (chroot, PID namespaces).
package artifacts_test

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/kube-aws/kube-aws/release/artifacts"
)

// checkArch is the architecture of the folder under test:
// KUBE_AWS_ARTIFACTS_ARCH, default amd64. Binaries of another architecture
// than the host's are checked by their ELF header instead of being run.
func checkArch() string {
	if a := os.Getenv("KUBE_AWS_ARTIFACTS_ARCH"); a != "" {
		return a
	}
	return "amd64"
}

func folder(t *testing.T) string {
	t.Helper()
	dir, err := artifacts.DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("artifact folder %s: %v: run `make artifacts` first (or set %s)", dir, err, artifacts.DirEnv)
	}
	return dir
}

func runnable() bool { return checkArch() == runtime.GOARCH }

// releases are the Kubernetes releases the folder under test holds:
// KUBE_AWS_ARTIFACTS_KUBERNETES as `make artifacts` read it, else every one
// the builder knows.
func releases(t *testing.T) []artifacts.KubernetesRelease {
	t.Helper()
	var versions []string
	if v := os.Getenv(artifacts.KubernetesEnv); v != "" {
		versions = strings.Split(v, ",")
	}
	rs, err := artifacts.Releases(versions)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// versionCheck runs a program with args and wants want in its output.
type versionCheck struct {
	file string // path in the folder (binaries) or in the image (images)
	args []string
	want string
}

func TestBinaries(t *testing.T) {
	dir, arch := folder(t), checkArch()
	plat := "linux-" + arch
	var cases []versionCheck
	for _, k := range releases(t) {
		cases = append(cases, versionCheck{"kubelet/" + k.Version + "/" + plat + "/kubelet", []string{"--version"}, "Kubernetes " + k.Version})
	}
	cases = append(cases, []versionCheck{
		{"etcd/v3.6.5/" + plat + "/etcd", []string{"--version"}, "etcd Version: 3.6.5"},
		{"etcd/v3.6.5/" + plat + "/etcdctl", []string{"version"}, "etcdctl version: 3.6.5"},
		{"etcd/v3.6.5/" + plat + "/etcdutl", []string{"version"}, "etcdutl version: 3.6.5"},
		// A CNI plugin run without CNI_COMMAND prints its "about" line.
		{"cni-plugins/v0.9.1/" + plat + "/flannel", nil, "CNI flannel plugin v0.9.1"},
		{"cni-plugins/v0.9.1/" + plat + "/bridge", nil, "CNI bridge plugin v0.9.1"},
		{"cni-plugins/v0.9.1/" + plat + "/host-local", nil, "CNI host-local plugin v0.9.1"},
		{"cni-plugins/v0.9.1/" + plat + "/loopback", nil, "CNI loopback plugin v0.9.1"},
		{"cni-plugins/v0.9.1/" + plat + "/portmap", nil, "CNI portmap plugin v0.9.1"},
	}...)
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			checkBinary(t, filepath.Join(dir, c.file), "", c)
		})
	}
}

// checkBinary checks one binary: static, of the folder's architecture, and
// (on a host of that architecture) reporting its version. root, when set, is
// the file system to chroot into.
func checkBinary(t *testing.T, p, root string, c versionCheck) {
	t.Helper()
	f, err := elf.Open(p)
	if err != nil {
		t.Fatalf("%s: %v", p, err)
	}
	machine := f.Machine
	interp := f.Section(".interp")
	f.Close()
	wantMachine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[checkArch()]
	if machine != wantMachine {
		t.Errorf("%s: ELF machine %v, want %v", p, machine, wantMachine)
	}
	if interp != nil {
		t.Errorf("%s: dynamically linked (has an ELF interpreter); every binary must be static", p)
	}
	if !runnable() {
		return
	}
	out := runIn(t, root, p, c.args...)
	if !strings.Contains(out, c.want) {
		t.Errorf("%s %s printed %q, want it to contain %q", p, strings.Join(c.args, " "), out, c.want)
	}
}

// runIn runs a program (a host path, or a path inside root when root is
// set, chrooted there) and returns its combined output.
func runIn(t *testing.T, root, prog string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, prog, args...)
	if root != "" {
		cmd = exec.CommandContext(ctx, "chroot", append([]string{root, prog}, args...)...)
	}
	cmd.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s (root %q): %v\n%s", prog, strings.Join(args, " "), root, err, out)
	}
	return string(out)
}

// imageCase is what one image must be.
type imageCase struct {
	name, version, ref string
	entrypoint         []string
	user               string
	env                []string // entries the config must hold
	ports              []string
	files              []string // paths the layers must hold
	caps               []string // paths with cap_net_bind_service
	selfCheck          versionCheck
	chrooted           []versionCheck // run chrooted in the image file system
}

const pathEnv = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

var baseFiles = []string{"etc/passwd", "etc/group", "etc/nsswitch.conf", "etc/ssl/certs/ca-certificates.crt", "tmp"}

var iptablesChecks = []versionCheck{
	{"/usr/sbin/iptables", []string{"--version"}, "iptables v1.8.9 (nf_tables)"},
	{"/usr/sbin/iptables-restore", []string{"--version"}, "iptables-restore v1.8.9 (nf_tables)"},
	{"/usr/sbin/ip6tables-save", []string{"--version"}, "ip6tables-save v1.8.9 (nf_tables)"},
}

func kubeImage(k artifacts.KubernetesRelease, n string, caps bool, extra ...string) imageCase {
	c := imageCase{
		name: n, version: k.Version, ref: "registry.k8s.io/" + n + ":" + k.Version,
		env:       []string{pathEnv, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		files:     append(append([]string{"usr/local/bin/" + n}, baseFiles...), extra...),
		selfCheck: versionCheck{"/usr/local/bin/" + n, []string{"--version"}, "Kubernetes " + k.Version},
	}
	if caps {
		c.caps = []string{"usr/local/bin/" + n}
	}
	return c
}

func imageCases(releases []artifacts.KubernetesRelease) []imageCase {
	var cases []imageCase
	for _, k := range releases {
		proxy := kubeImage(k, "kube-proxy", false, "usr/sbin/iptables", "usr/sbin/xtables-nft-multi", "usr/sbin/conntrack")
		proxy.chrooted = append(slices.Clone(iptablesChecks), versionCheck{"/usr/sbin/conntrack", []string{"--version"}, "conntrack v1.4.7"})
		cases = append(cases,
			kubeImage(k, "kube-apiserver", true),
			kubeImage(k, "kube-controller-manager", false),
			kubeImage(k, "kube-scheduler", false),
			proxy,
			imageCase{
				name: "cloud-controller-manager", version: k.CloudProviderAWS, ref: "registry.k8s.io/provider-aws/cloud-controller-manager:" + k.CloudProviderAWS,
				entrypoint: []string{"/bin/aws-cloud-controller-manager"},
				env:        []string{pathEnv, "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
				files:      append([]string{"bin/aws-cloud-controller-manager"}, baseFiles...),
				selfCheck:  versionCheck{"/bin/aws-cloud-controller-manager", []string{"--version"}, "Kubernetes " + k.CloudProviderAWS},
			})
	}
	return append(cases, []imageCase{
		{
			name: "pause", version: "3.10.1", ref: "registry.k8s.io/pause:3.10.1",
			entrypoint: []string{"/pause"}, user: "65535:65535", env: []string{pathEnv},
			files:     []string{"pause"},
			selfCheck: versionCheck{"/pause", []string{"-v"}, "v3.10.1"},
		},
		{
			name: "coredns", version: "v1.12.1", ref: "registry.k8s.io/coredns/coredns:v1.12.1",
			entrypoint: []string{"/coredns"}, user: "nonroot:nonroot", env: []string{pathEnv},
			ports: []string{"53/tcp", "53/udp"},
			files: append([]string{"coredns", "home/nonroot"}, baseFiles...), caps: []string{"coredns"},
			selfCheck: versionCheck{"/coredns", []string{"-version"}, "CoreDNS-1.12.1"},
		},
		{
			name: "flannel", version: "v0.27.4", ref: "ghcr.io/flannel-io/flannel:v0.27.4",
			entrypoint: []string{"/opt/bin/flanneld"}, env: []string{pathEnv},
			files:     append([]string{"opt/bin/flanneld", "usr/sbin/iptables", "bin/busybox", "bin/cp", "bin/sh"}, baseFiles...),
			selfCheck: versionCheck{"/opt/bin/flanneld", []string{"--version"}, "v0.27.4"},
			chrooted: append(slices.Clone(iptablesChecks),
				// The chart's install-cni init container runs cp from this image.
				versionCheck{"/bin/sh", []string{"-c", "cp /etc/group /tmp/g && cat /tmp/g"}, "nonroot:x:65532:"}),
		},
	}...)
}

func TestImages(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the image checks chroot into image file systems: run them as root (make artifacts-test)")
	}
	dir, arch := folder(t), checkArch()
	for _, c := range imageCases(releases(t)) {
		t.Run(c.name+"/"+c.version, func(t *testing.T) {
			p := filepath.Join(dir, c.name, c.version, "linux-"+arch, "image.tar")
			img := loadImage(t, p, c.ref)
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.OS != "linux" || cf.Architecture != arch {
				t.Errorf("platform %s/%s, want linux/%s", cf.OS, cf.Architecture, arch)
			}
			if !slices.Equal(cf.Config.Entrypoint, c.entrypoint) {
				t.Errorf("entrypoint %q, want %q", cf.Config.Entrypoint, c.entrypoint)
			}
			if cf.Config.User != c.user {
				t.Errorf("user %q, want %q", cf.Config.User, c.user)
			}
			for _, e := range c.env {
				if !slices.Contains(cf.Config.Env, e) {
					t.Errorf("env %q lacks %q", cf.Config.Env, e)
				}
			}
			for _, port := range c.ports {
				if _, ok := cf.Config.ExposedPorts[port]; !ok {
					t.Errorf("exposed ports %v lack %s", cf.Config.ExposedPorts, port)
				}
			}
			root := t.TempDir()
			caps := extract(t, img, root)
			for _, f := range c.files {
				if _, err := os.Lstat(filepath.Join(root, f)); err != nil {
					t.Errorf("the image holds no /%s", f)
				}
			}
			for _, f := range c.caps {
				if !caps[f] {
					t.Errorf("/%s lacks cap_net_bind_service=+ep", f)
				}
			}
			checkBinary(t, filepath.Join(root, c.selfCheck.file), "", c.selfCheck)
			if !runnable() {
				return
			}
			for _, v := range c.chrooted {
				if out := runIn(t, root, v.file, v.args...); !strings.Contains(out, v.want) {
					t.Errorf("chroot %s %s printed %q, want %q", v.file, strings.Join(v.args, " "), out, v.want)
				}
			}
		})
	}
}

// loadImage opens the image archive p, which must hold ref alone.
func loadImage(t *testing.T, p, ref string) v1.Image {
	t.Helper()
	img, err := artifacts.OpenImage(p, t.TempDir(), ref)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// extract writes the image's flattened file system to root and returns the
// files that carry cap_net_bind_service.
func extract(t *testing.T, img v1.Image, root string) map[string]bool {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	caps := map[string]bool{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return caps
		}
		if err != nil {
			t.Fatal(err)
		}
		rel := filepath.Clean(hdr.Name)
		if strings.HasPrefix(rel, "..") || filepath.IsAbs(rel) {
			t.Fatalf("layer entry %q escapes the image root", hdr.Name)
		}
		p := filepath.Join(root, rel)
		if c, ok := hdr.PAXRecords["SCHILY.xattr.security.capability"]; ok && hasNetBindService(c) {
			caps[filepath.ToSlash(rel)] = true
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, os.FileMode(hdr.Mode).Perm())
		case tar.TypeSymlink:
			os.MkdirAll(filepath.Dir(p), 0o755)
			err = os.Symlink(hdr.Linkname, p)
		case tar.TypeReg:
			os.MkdirAll(filepath.Dir(p), 0o755)
			var f *os.File
			if f, err = os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(hdr.Mode).Perm()); err == nil {
				_, err = io.Copy(f, tr)
				f.Close()
			}
		default:
			t.Fatalf("layer entry %s has unexpected type %q", hdr.Name, hdr.Typeflag)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// hasNetBindService reads a security.capability xattr value (struct
// vfs_cap_data): the effective flag and CAP_NET_BIND_SERVICE (bit 10)
// permitted.
func hasNetBindService(v string) bool {
	b := []byte(v)
	if len(b) < 8 {
		return false
	}
	magic := uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
	permitted := uint32(b[4]) | uint32(b[5])<<8 | uint32(b[6])<<16 | uint32(b[7])<<24
	return magic&1 == 1 && permitted&(1<<10) != 0
}

// TestPause runs the pause image's /pause as PID 1 of a new PID namespace,
// as a sandbox runs it: a process orphaned inside the namespace is reaped
// once it exits, and SIGTERM and SIGINT end pause with status 0.
func TestPause(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("the pause check makes PID namespaces: run it as root (make artifacts-test)")
	}
	if !runnable() {
		t.Fatalf("the pause check runs the %s image: run it on an %s host", checkArch(), checkArch())
	}
	dir := folder(t)
	root := t.TempDir()
	extract(t, loadImage(t, filepath.Join(dir, "pause/3.10.1/linux-"+checkArch()+"/image.tar"), "registry.k8s.io/pause:3.10.1"), root)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			var stderr bytes.Buffer
			cmd := exec.Command(filepath.Join(root, "pause"))
			cmd.Stderr = &stderr
			cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			defer cmd.Process.Kill()
			pid := cmd.Process.Pid
			waitFor(t, 5*time.Second, "pause to install its signal handlers", func() bool { return handlesSignals(pid) })

			// An orphan inside the namespace: sh starts sleep and exits, so
			// sleep is re-parented to the namespace's PID 1, pause.
			orphan := exec.Command("nsenter", "--target", strconv.Itoa(pid), "--pid", "--", "/bin/sh", "-c", "sleep 2 </dev/null >/dev/null 2>&1 & exit 0")
			if out, err := orphan.CombinedOutput(); err != nil {
				t.Fatalf("nsenter: %v\n%s", err, out)
			}
			waitFor(t, 5*time.Second, "the orphan to be re-parented to pause", func() bool { return len(children(pid, false)) > 0 })
			waitFor(t, 10*time.Second, "pause to reap the orphan", func() bool { return len(children(pid, false)) == 0 && len(children(pid, true)) == 0 })

			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("pause exited with %v after %v, want status 0\n%s", err, sig, stderr.String())
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("pause still runs 5s after %v", sig)
			}
			if strings.Contains(stderr.String(), "should be the first process") {
				t.Errorf("pause did not see itself as PID 1: %s", stderr.String())
			}
		})
	}
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// handlesSignals reports whether pid has a handler for SIGTERM (SigCgt).
func handlesSignals(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "SigCgt:"); ok {
			mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && mask&(1<<(uint(syscall.SIGTERM)-1)) != 0
		}
	}
	return false
}

// children lists the host PIDs whose parent is pid: the zombies among them
// when zombies is set, the live ones otherwise.
func children(pid int, zombies bool) []int {
	des, _ := os.ReadDir("/proc")
	var out []int
	for _, d := range des {
		child, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/status")
		if err != nil {
			continue
		}
		var ppid int
		var state string
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "PPid:"); ok {
				ppid, _ = strconv.Atoi(strings.TrimSpace(v))
			}
			if v, ok := strings.CutPrefix(l, "State:"); ok {
				state = strings.TrimSpace(v)
			}
		}
		if ppid == pid && strings.HasPrefix(state, "Z") == zombies {
			out = append(out, child)
		}
	}
	return out
}
