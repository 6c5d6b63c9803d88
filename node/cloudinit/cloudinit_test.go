package cloudinit

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

func gz(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}

// writeFilesCases is userdata whose write_files exercise every rule;
// {{D}} is the folder the files go to.
var writeFilesCases = `#cloud-config
write_files:
- path: {{D}}/plain.txt
  content: |
    hello
    world
- path: {{D}}/no-content
- path: {{D}}/b64
  encoding: b64
  content: ` + base64.StdEncoding.EncodeToString([]byte("binary\x00\xff\n")) + `
- path: {{D}}/gzb64
  encoding: gzip+base64
  content: ` + base64.StdEncoding.EncodeToString(gz("zipped\n")) + `
- path: {{D}}/gz-binary
  encoding: gz
  content: !!binary ` + base64.StdEncoding.EncodeToString(gz("yaml binary\n")) + `
- path: {{D}}/GZ+B64-upper
  encoding: GZ+B64
  content: ` + base64.StdEncoding.EncodeToString(gz("upper\n")) + `
- path: {{D}}/unknown-encoding
  encoding: rot13
  content: kept as text
- path: {{D}}/octal-int
  permissions: 0600
  content: a
- path: {{D}}/octal-string
  permissions: '0640'
  content: b
- path: {{D}}/decimal-int
  permissions: 493
  content: c
- path: {{D}}/yaml12-octal
  permissions: 0o751
  content: d
- path: {{D}}/undecodable
  permissions: rwxr-xr-x
  content: e
- path: {{D}}/setgid
  permissions: '2755'
  content: f
- path: {{D}}/owned
  owner: nobody:nogroup
  content: g
- path: {{D}}/user-only
  owner: nobody
  content: h
- path: {{D}}/none-owner
  owner: none:-1
  content: i
- path: {{D}}/appended
  content: "one\n"
- path: {{D}}/appended
  append: true
  content: "two\n"
- path: {{D}}/appended
  append: "yes"
  content: "three\n"
- path: {{D}}/deferred
  defer: true
  content: "written last\n"
- path: {{D}}/deferred
  content: "written first\n"
- path: {{D}}/sub/dir/../deep/file
  content: j
- content: no path, skipped
- path: {{D}}/overwritten
  content: "long first content\n"
- path: {{D}}/overwritten
  content: "short\n"
`

type entry struct {
	mode     fs.FileMode
	uid, gid uint32
	content  string
}

func tree(t *testing.T, dir string) map[string]entry {
	t.Helper()
	out := map[string]entry{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		e := entry{mode: info.Mode(), uid: st.Uid, gid: st.Gid}
		if info.Mode().IsRegular() {
			b, _ := os.ReadFile(p)
			e.content = string(b)
		}
		rel, _ := filepath.Rel(dir, p)
		out[rel] = e
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The files kube-aws-node writes are the files cloud-init writes, byte for
// byte, mode, owner and folders included: both apply the same userdata.
func TestWriteFilesAsCloudInit(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test compares owners with cloud-init's: run it as root (make test does, as CI does)")
	}
	py := "/usr/bin/python3"
	if out, err := exec.Command(py, "-c", "import cloudinit.config.cc_write_files").CombinedOutput(); err != nil {
		t.Fatalf("cloud-init's Python modules are needed to compare with (apt-get install cloud-init): %v\n%s", err, out)
	}
	base := t.TempDir()
	ours, theirs := filepath.Join(base, "ours"), filepath.Join(base, "theirs")
	// The same umask as cloud-init runs with; files and folders depend on it.
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)

	u, err := Parse([]byte(strings.ReplaceAll(writeFilesCases, "{{D}}", ours)))
	if err != nil {
		t.Fatal(err)
	}
	var logged []string
	if err := u.Write("/", func(s string) { logged = append(logged, s) }); err != nil {
		t.Fatal(err)
	}
	if len(logged) != len(u.WriteFiles) {
		t.Errorf("logged %d files, wrote %d", len(logged), len(u.WriteFiles))
	}
	ud := filepath.Join(base, "userdata")
	if err := os.WriteFile(ud, []byte(strings.ReplaceAll(writeFilesCases, "{{D}}", theirs)), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "testdata/cloudinit_write_files.py", ud)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("cloud-init: %v\n%s", err, out)
	}
	got, want := tree(t, ours), tree(t, theirs)
	var names []string
	for n := range want {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) < 20 {
		t.Fatalf("cloud-init wrote only %d files: %v", len(names), names)
	}
	for _, n := range names {
		if got[n] != want[n] {
			t.Errorf("%s: kube-aws-node wrote %+v, cloud-init %+v", n, got[n], want[n])
		}
	}
	for n := range got {
		if _, ok := want[n]; !ok {
			t.Errorf("%s: written by kube-aws-node only", n)
		}
	}
	// What cloud-init only warns about is reported too.
	warnings := strings.Join(u.Warnings, "\n")
	for _, w := range []string{"no path", `unknown encoding "rot13"`, `undecodable permissions "rwxr-xr-x"`} {
		if !strings.Contains(warnings, w) {
			t.Errorf("no warning %q in:\n%s", w, warnings)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"no header", "write_files: []\n", "line 1: the userdata must start with #cloud-config"},
		{"shell script", "#!/bin/sh\necho hi\n", `starts with "#!/bin/sh"`},
		{"not yaml", "#cloud-config\nwrite_files: [\n", "not YAML"},
		{"other module", "#cloud-config\npackages: [jq]\n", "line 2: module \"packages\": kube-aws-node applies only write_files and runcmd"},
		{"not a mapping", "#cloud-config\n- a\n", "line 2: the userdata must be a mapping"},
		{"write_files not a list", "#cloud-config\nwrite_files: {}\n", "write_files must be a list"},
		{"entry not a mapping", "#cloud-config\nwrite_files:\n- /etc/x\n", "line 3: write_files[0]: want a mapping"},
		{"unknown key", "#cloud-config\nwrite_files:\n- path: /x\n  mode: '0644'\n", `line 4: write_files[0]: unknown key "mode"`},
		{"source", "#cloud-config\nwrite_files:\n- path: /x\n  source: {uri: 'http://x'}\n", "downloading files is not supported"},
		{"bad base64", "#cloud-config\nwrite_files:\n- path: /x\n  encoding: b64\n  content: 'abc'\n", "line 3: write_files[0] (/x): content: not base64"},
		{"bad gzip", "#cloud-config\nwrite_files:\n- path: /x\n  encoding: gzip+b64\n  content: aGVsbG8=\n", "not gzip"},
		{"content a list", "#cloud-config\nwrite_files:\n- path: /x\n  content: [a]\n", "content: want a string"},
		{"runcmd not a list", "#cloud-config\nruncmd: echo hi\n", "runcmd must be a list"},
		{"runcmd nested", "#cloud-config\nruncmd:\n- [a, [b]]\n", "line 3: runcmd[0][1]: want a string"},
		{"runcmd empty", "#cloud-config\nruncmd:\n- []\n", "runcmd[0] is an empty list"},
		{"runcmd mapping", "#cloud-config\nruncmd:\n- {a: b}\n", "want a string or a list"},
		{"runcmd blank", "#cloud-config\nruncmd:\n- '  '\n", "line 3: runcmd[0] is empty"},
		{"unknown tag", "#cloud-config\nruncmd:\n- !shell reboot\n", "line 3: tag !shell is not a YAML tag cloud-init knows"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestParseRunCmd(t *testing.T) {
	u, err := Parse([]byte("#cloud-config\nruncmd:\n- [systemctl, daemon-reload]\n- echo \"a b\" > /tmp/x\n- [echo, 0x10, true, ~, 1.5]\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Command{
		{Line: 3, Argv: []string{"systemctl", "daemon-reload"}},
		{Line: 4, Shell: `echo "a b" > /tmp/x`},
		// str() of what PyYAML loads: 16, True, None, 1.5.
		{Line: 5, Argv: []string{"echo", "16", "True", "None", "1.5"}},
	}
	if fmt.Sprint(u.RunCmd) != fmt.Sprint(want) {
		t.Errorf("runcmd = %+v\nwant %+v", u.RunCmd, want)
	}
	if empty, err := Parse([]byte("#cloud-config\n")); err != nil || len(empty.WriteFiles)+len(empty.RunCmd) != 0 {
		t.Errorf("header only: %+v %v", empty, err)
	}
}

func TestRun(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	u, err := Parse([]byte(fmt.Sprintf(`#cloud-config
runcmd:
- [sh, -c, 'echo "$GREETING" >> %[1]s']
- pwd >> %[1]s; echo "it's a string" >> %[1]s
- [sh, -c, 'echo failing; exit 3']
- [touch, %[1]s.never]
`, marker)))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var started []int
	err = u.Run(context.Background(), RunOptions{Env: []string{"GREETING=hi there", "PATH=" + os.Getenv("PATH")}, Out: &out, Started: func(i int, c Command) { started = append(started, i) }})
	var failed *Failed
	if !errors.As(err, &failed) || failed.Index != 2 {
		t.Fatalf("err = %v, want runcmd[2] to fail", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "runcmd[2] (line 5) `sh -c echo failing; exit 3`: exit status 3") {
		t.Errorf("message = %s", msg)
	}
	if b, _ := os.ReadFile(marker); string(b) != "hi there\n/\nit's a string\n" {
		t.Errorf("commands wrote %q", b)
	}
	if _, err := os.Stat(marker + ".never"); err == nil {
		t.Error("a command after the failing one ran")
	}
	if fmt.Sprint(started) != "[0 1 2]" || !strings.Contains(out.String(), "failing") {
		t.Errorf("started %v, output %q", started, out.String())
	}

	missing, _ := Parse([]byte("#cloud-config\nruncmd:\n- [/nonexistent/tool, x]\n"))
	out.Reset()
	if err := missing.Run(context.Background(), RunOptions{Out: &out}); err == nil || !strings.Contains(err.Error(), "exit status 127") || !strings.Contains(out.String(), "/nonexistent/tool") {
		t.Errorf("missing command: %v, %q", err, out.String())
	}
	// An argv's first word is looked up on the command's own PATH.
	bin := t.TempDir()
	os.WriteFile(filepath.Join(bin, "kube-aws-tool"), []byte("#!/bin/sh\necho \"tool $*\" >> "+marker+"\n"), 0o755)
	tool, _ := Parse([]byte("#cloud-config\nruncmd:\n- [kube-aws-tool, 'a b']\n"))
	if err := tool.Run(context.Background(), RunOptions{Out: &out, Env: []string{"PATH=" + bin + ":/usr/bin:/bin"}}); err != nil {
		t.Errorf("a tool on the command's PATH: %v", err)
	}
	if b, _ := os.ReadFile(marker); !strings.HasSuffix(string(b), "tool a b\n") {
		t.Errorf("tool wrote %q", b)
	}
	slow, _ := Parse([]byte("#cloud-config\nruncmd:\n- [sleep, '10']\n"))
	if err := slow.Run(context.Background(), RunOptions{Out: &out, Timeout: 50 * time.Millisecond, Env: []string{"PATH=" + os.Getenv("PATH")}}); err == nil || !strings.Contains(err.Error(), "killed after 50ms") {
		t.Errorf("slow command: %v", err)
	}
}

func TestWriteErrors(t *testing.T) {
	dir := t.TempDir()
	u, err := Parse([]byte("#cloud-config\nwrite_files:\n- path: /a\n  owner: no-such-user-kube-aws\n  content: x\n"))
	if err != nil {
		t.Fatal(err)
	}
	err = u.Write(dir, nil)
	if err == nil || !strings.Contains(err.Error(), `write_files (line 3) /a: owner: unknown user "no-such-user-kube-aws"`) {
		t.Errorf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); err == nil {
		t.Error("a file with an unknown owner was written")
	}
	// A file where a folder must go.
	os.WriteFile(filepath.Join(dir, "f"), nil, 0o644)
	u, _ = Parse([]byte("#cloud-config\nwrite_files:\n- path: /f/b\n  content: x\n"))
	if err := u.Write(dir, nil); err == nil || !strings.Contains(err.Error(), "/f/b") {
		t.Errorf("err = %v", err)
	}
}
