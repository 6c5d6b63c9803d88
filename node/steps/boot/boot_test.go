package boot

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/envfile"
	"github.com/kube-aws/kube-aws/node/step"
	"github.com/kube-aws/kube-aws/test/agenttest"
)

var motoURL string

func TestMain(m *testing.M) { agenttest.MotoMain(m, &motoURL) }

var opts = Step{FetchTimeout: 5 * time.Second, CommandTimeout: 10 * time.Second}

// machine uploads userdata for the role and returns the Env of boot, as
// the bootstrap would start it.
func machine(t *testing.T, userdata string) (*agent.Env, *agenttest.Output) {
	t.Helper()
	agenttest.UseMoto(t, motoURL)
	agenttest.ServeIMDS(t, agenttest.DefaultInstance)
	s := agenttest.Settings(t, "controller")
	s.UserDataKey = s.Key("roles/controller/userdata/" + nodeplan.SHA256Hex([]byte(userdata)))
	agenttest.SetSettings(t, s)
	e, out := agenttest.Env(t, "boot", t.TempDir())
	if err := e.Store.Put(t.Context(), s.UserDataKey, []byte(userdata), "text/cloud-config"); err != nil {
		t.Fatal(err)
	}
	return e, out
}

func status(t *testing.T, e *agent.Env) nodeplan.Status {
	t.Helper()
	res, err := e.Store.S3.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(e.Settings.Bucket), Key: aws.String(e.Report.StatusKey)})
	if err != nil {
		t.Fatal(err)
	}
	var st nodeplan.Status
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

func TestBoot(t *testing.T) {
	dir := t.TempDir()
	ud := fmt.Sprintf(`#cloud-config
write_files:
- path: /etc/kube-aws/hello
  permissions: '0600'
  content: hello
runcmd:
- [sh, -c, 'cat "$KUBE_AWS_ROOT/etc/kube-aws/hello" > %[1]s/out; echo " $KUBE_AWS_ROLE" >> %[1]s/out']
- echo second >> %[1]s/out
`, dir)
	e, out := machine(t, ud)
	if err := step.Run(t.Context(), e, &opts); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "out")); string(b) != "hello controller\nsecond\n" {
		t.Errorf("runcmd wrote %q", b)
	}
	st := status(t, e)
	if st.Phase != nodeplan.PhaseBooted || st.InstanceID != "i-0123456789abcdef0" || st.Step != "runcmd done" {
		t.Errorf("status = %+v", st)
	}
	// The settings are kept for steps started later by systemd.
	b, err := os.ReadFile(e.Path(nodeplan.SettingsEnvPath))
	if err != nil {
		t.Fatal(err)
	}
	f, _ := envfile.Parse(b)
	if v, _ := f.Lookup(nodeplan.EnvUserDataKey); v != e.Settings.UserDataKey {
		t.Errorf("node.env = %s", b)
	}
	for _, line := range []string{"sha256 checked", "wrote /etc/kube-aws/hello (5 bytes, mode 0600)", "runcmd[1]: echo second >>", "userdata applied: 1 files, 2 commands"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("output lacks %q:\n%s", line, out)
		}
	}
}

// The goal step reports ready from inside runcmd (it writes the local
// status, as the reporter does): boot keeps the phase.
func TestBootKeepsReady(t *testing.T) {
	e, _ := machine(t, "#cloud-config\nruncmd:\n- [sh, -c, 'echo {\\\"phase\\\": \\\"ready\\\"} > \"$KUBE_AWS_ROOT/var/lib/kube-aws/status.json\"']\n- [\"true\"]\n")
	if err := step.Run(t.Context(), e, &opts); err != nil {
		t.Fatal(err)
	}
	if st := status(t, e); st.Phase != nodeplan.PhaseReady || st.Step != "runcmd done" {
		t.Errorf("status = %+v", st)
	}
}

func TestBootFailures(t *testing.T) {
	tests := []struct {
		name     string
		userdata string
		tamper   func(t *testing.T, e *agent.Env)
		want     []string
		step     string
		code     int
	}{
		{
			name:     "failing command stops runcmd",
			userdata: "#cloud-config\nruncmd:\n- [sh, -c, 'echo first line; echo \"disk full\" >&2; exit 4']\n- [touch, /tmp/kube-aws-never]\n",
			want:     []string{"runcmd[0] (line 3)", "exit status 4", "its last output:\nfirst line\ndisk full"},
			step:     "runcmd[0]: sh -c echo first line;",
			code:     agent.ExitFailed,
		},
		{
			name:     "corrupted userdata",
			userdata: "#cloud-config\nruncmd: [[true]]\n",
			tamper: func(t *testing.T, e *agent.Env) {
				e.Store.Put(t.Context(), e.Settings.UserDataKey, []byte("#cloud-config\nruncmd: [[rm, -rf, /]]\n"), "text/plain")
			},
			want: []string{"fetching the userdata", "the plan says"},
			step: "boot",
			code: agent.ExitFailed,
		},
		{
			name:     "not a cloud-config",
			userdata: "#!/bin/sh\necho hi\n",
			want:     []string{"userdata s3://", "line 1: the userdata must start with #cloud-config"},
			step:     "boot",
			code:     agent.ExitBadInput,
		},
		{
			name:     "missing userdata",
			userdata: "#cloud-config\n",
			tamper: func(t *testing.T, e *agent.Env) {
				e.Store.S3.DeleteObject(t.Context(), &s3.DeleteObjectInput{Bucket: aws.String(e.Settings.Bucket), Key: aws.String(e.Settings.UserDataKey)})
			},
			want: []string{"NoSuchKey"},
			step: "boot",
			code: agent.ExitFailed,
		},
		{
			name:     "key not content-addressed",
			userdata: "#cloud-config\n",
			tamper:   func(t *testing.T, e *agent.Env) { e.Settings.UserDataKey = "rendered/userdata/controller.yaml" },
			want:     []string{"is not content-addressed"},
			step:     "boot",
			code:     agent.ExitBadInput,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, out := machine(t, tt.userdata)
			if tt.tamper != nil {
				tt.tamper(t, e)
			}
			os.Remove("/tmp/kube-aws-never")
			err := step.Run(t.Context(), e, &opts)
			if err == nil {
				t.Fatal("boot succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
			if c := agent.ExitCode(err); c != tt.code {
				t.Errorf("exit code %d, want %d", c, tt.code)
			}
			if _, err := os.Stat("/tmp/kube-aws-never"); err == nil {
				t.Error("a command after the failing one ran")
			}
			st := status(t, e)
			if st.Phase != nodeplan.PhaseFailed || !strings.HasPrefix(st.Step, tt.step) || st.Error != err.Error() {
				t.Errorf("status = %+v", st)
			}
			if !strings.Contains(out.String(), "FAILED: ") {
				t.Errorf("failure not reported on the console:\n%s", out)
			}
		})
	}
}

// The dry run fetches and checks the userdata and lists what applying it
// does; it writes no file, runs no command and reports no status.
func TestDryRun(t *testing.T) {
	dir := t.TempDir()
	ud := fmt.Sprintf("#cloud-config\nwrite_files:\n- path: /etc/kube-aws/hello\n  permissions: '0600'\n  content: hello\n- path: /etc/late\n  defer: true\n  content: x\nruncmd:\n- [touch, %[1]s/ran]\n- echo second >> %[1]s/ran\n", dir)
	e, _ := machine(t, ud)
	apply := []string{
		fmt.Sprintf("apply userdata s3://%s/%s: 2 files, 2 commands", e.Settings.Bucket, e.Settings.UserDataKey),
		"write /etc/kube-aws/hello: 5 bytes, mode 0600",
		"write /etc/late: 1 bytes, mode 0644",
		"run runcmd[0]: touch " + dir + "/ran",
		"run runcmd[1]: echo second >> " + dir + "/ran",
	}
	dryRun := func(want ...string) {
		t.Helper()
		d, out := agenttest.DryEnv(t, e)
		got, err := agenttest.DryRun(t, d, &opts)
		if err != nil || strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("dry run: %v\n%s\nwant:\n%s\n%s", err, strings.Join(got, "\n"), strings.Join(want, "\n"), out)
		}
		if _, err := os.Stat(filepath.Join(dir, "ran")); err == nil {
			t.Error("the dry run ran a command")
		}
	}
	dryRun(append([]string{"write /etc/kube-aws/node.env: the bootstrap's settings, for the steps systemd runs"}, apply...)...)
	if _, err := e.Store.S3.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(e.Settings.Bucket), Key: aws.String(e.Report.StatusKey)}); err == nil {
		t.Error("the dry run wrote the status")
	}
	// Once booted, the settings are kept: applying the userdata is what
	// every boot does.
	if err := step.Run(t.Context(), e, &opts); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "ran"))
	dryRun(apply...)

	e.Settings.UserDataKey = "rendered/userdata/controller.yaml"
	agenttest.SetSettings(t, e.Settings)
	d, _ := agenttest.DryEnv(t, e)
	if _, err := agenttest.DryRun(t, d, &opts); err == nil || agent.ExitCode(err) != agent.ExitBadInput || !strings.Contains(err.Error(), "is not content-addressed") {
		t.Errorf("a userdata key that is not content-addressed: %v", err)
	}
}
