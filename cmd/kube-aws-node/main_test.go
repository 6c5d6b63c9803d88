package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/awsenv"
	"github.com/kube-aws/kube-aws/test/agenttest"
)

var motoURL, binary string

// TestMain builds kube-aws-node, as make build does, and starts moto.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kube-aws-node-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "kube-aws-node")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building kube-aws-node: %v\n%s", err, out)
		os.Exit(1)
	}
	url, stop, err := agenttest.Moto()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	motoURL = url
	code := m.Run()
	stop()
	os.RemoveAll(dir)
	os.Exit(code)
}

// hard is issue 14's value: a quote, a backslash and a newline.
const hard = "p\"w\\d\nline2"

const marker = "((secret:dex/values/password))"

// machine uploads the role's userdata and secret as deploy would and
// returns the settings and the environment the bootstrap gives boot.
func machine(t *testing.T, userdata string, secret []byte) (nodeplan.Settings, []string) {
	t.Helper()
	agenttest.UseMoto(t, motoURL)
	agenttest.ServeIMDS(t, agenttest.DefaultInstance)
	s := agenttest.Settings(t, "controller")
	s.UserDataKey = s.Key("roles/controller/userdata/" + nodeplan.SHA256Hex([]byte(userdata)))
	cfg, _ := awsenv.Load(t.Context(), s.Region)
	s3c := awsenv.S3(cfg)
	put := func(key string, body []byte) {
		if _, err := s3c.PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	put(s.UserDataKey, []byte(userdata))
	if secret != nil {
		k := kms.NewFromConfig(cfg)
		key, _ := k.CreateKey(t.Context(), &kms.CreateKeyInput{})
		enc, err := k.Encrypt(t.Context(), &kms.EncryptInput{KeyId: key.KeyMetadata.Arn, Plaintext: secret, EncryptionContext: s.EncryptionContext()})
		if err != nil {
			t.Fatal(err)
		}
		put(s.Key(nodeplan.SecretKey("controller", marker)), enc.CiphertextBlob)
	}
	env := os.Environ()
	env = append(env, s.Env()...)
	return s, env
}

func runBoot(t *testing.T, env []string, root string) (int, string) {
	t.Helper()
	cmd := exec.Command(binary, "boot", "--root", root, "--console", "")
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatal(err)
		}
		code = ee.ExitCode()
	}
	return code, string(out)
}

func status(t *testing.T, s nodeplan.Settings) nodeplan.Status {
	t.Helper()
	cfg, _ := awsenv.Load(t.Context(), s.Region)
	out, err := awsenv.S3(cfg).GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String(s.Key(nodeplan.StatusKey("controller", agenttest.DefaultInstance.ID)))})
	if err != nil {
		t.Fatal(err)
	}
	var st nodeplan.Status
	json.NewDecoder(out.Body).Decode(&st)
	return st
}

// userdata is a controller's: plans and files from write_files, then
// runcmd calling kube-aws-node's steps by name.
func userdata(t *testing.T) string {
	plan, err := nodeplan.Encode(&nodeplan.SecretsPlan{Files: []nodeplan.SecretFile{
		{Path: "/etc/dex/values.json", Format: nodeplan.FormatJSON},
		{Path: "/etc/dex/dex.env", Format: nodeplan.FormatEnv},
	}})
	if err != nil {
		t.Fatal(err)
	}
	indent := func(s string) string { return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ") }
	return fmt.Sprintf(`#cloud-config
write_files:
- path: %s
  content: |
%s
- path: /etc/dex/values.json
  permissions: '0600'
  content: '{"password": "%s"}'
- path: /etc/dex/dex.env
  permissions: '0600'
  content: |
    PASSWORD=%s
runcmd:
- [kube-aws-node, secrets]
- [kube-aws-node, certificates]
- [sh, -c, '. "$KUBE_AWS_ROOT/etc/dex/dex.env" && printf %%s "$PASSWORD" > "$KUBE_AWS_ROOT/seen"']
`, nodeplan.SecretsPath, indent(string(plan)), marker, marker)
}

// The whole path of issue 14: boot fetches the userdata, writes the files,
// runcmd runs kube-aws-node's own steps, and the secret with a quote, a
// backslash and a newline reaches a JSON file and an env file exactly.
func TestBoot(t *testing.T) {
	s, env := machine(t, userdata(t), []byte(hard))
	root := t.TempDir()
	code, out := runBoot(t, env, root)
	if code != 0 {
		t.Fatalf("boot exited %d:\n%s", code, out)
	}
	var values map[string]string
	b, _ := os.ReadFile(filepath.Join(root, "/etc/dex/values.json"))
	if err := json.Unmarshal(b, &values); err != nil || values["password"] != hard {
		t.Errorf("values.json = %s (%v)", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "seen")); string(b) != hard {
		t.Errorf("the env file gave the shell %q", b)
	}
	if st := status(t, s); st.Phase != nodeplan.PhaseBooted || st.Address != agenttest.DefaultInstance.PrivateIPv4 {
		t.Errorf("status = %+v", st)
	}
	for _, line := range []string{"boot: runcmd[0]: kube-aws-node secrets", "secrets: substituted 2 secret markers in 2 files", "certificates: no /etc/kube-aws/certificates.json on this machine: nothing to do", "boot: userdata applied: 3 files, 3 commands"} {
		if !strings.Contains(out, line) {
			t.Errorf("output lacks %q:\n%s", line, out)
		}
	}
	if strings.Contains(out, "line2") {
		t.Error("the secret reached the output")
	}
}

func TestBootFails(t *testing.T) {
	t.Run("secret never uploaded", func(t *testing.T) {
		s, env := machine(t, userdata(t), nil)
		code, out := runBoot(t, env, t.TempDir())
		if code != agent.ExitFailed {
			t.Fatalf("exit %d:\n%s", code, out)
		}
		st := status(t, s)
		if st.Phase != nodeplan.PhaseFailed || st.Step != "runcmd[0]: kube-aws-node secrets" || !strings.Contains(st.Error, "NoSuchKey") {
			t.Errorf("status = %+v", st)
		}
		if !strings.Contains(out, "secrets: FAILED after") || !strings.Contains(out, "boot: FAILED after") {
			t.Errorf("output:\n%s", out)
		}
	})
	t.Run("userdata is not cloud-config", func(t *testing.T) {
		_, env := machine(t, "#!/bin/sh\nreboot\n", nil)
		code, out := runBoot(t, env, t.TempDir())
		if code != agent.ExitBadInput || !strings.Contains(out, "line 1: the userdata must start with #cloud-config") {
			t.Errorf("exit %d:\n%s", code, out)
		}
	})
}

func TestUsage(t *testing.T) {
	tests := []struct {
		args []string
		code int
		out  string
	}{
		{nil, agent.ExitUsage, "usage: kube-aws-node <step>"},
		{[]string{"help"}, agent.ExitOK, "approve-csrs"},
		{[]string{"frobnicate"}, agent.ExitUsage, `unknown step "frobnicate"`},
		{[]string{"secrets", "--nope"}, agent.ExitUsage, "flag provided but not defined: -nope"},
		{[]string{"secrets", "extra"}, agent.ExitUsage, "takes no arguments"},
		{[]string{"secrets", "--json"}, agent.ExitUsage, "--json goes with --dry-run"},
		{[]string{"version"}, agent.ExitOK, ""},
	}
	for _, tt := range tests {
		cmd := exec.Command(binary, tt.args...)
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != tt.code || !strings.Contains(string(out), tt.out) {
			t.Errorf("%v: exit %d, output %q", tt.args, cmd.ProcessState.ExitCode(), out)
		}
	}
	// The steps, in the order a machine runs them, each with its summary.
	out, _ := exec.Command(binary, "help").CombinedOutput()
	var listed []string
	for _, l := range strings.Split(string(out), "\n") {
		if f := strings.Fields(l); strings.HasPrefix(l, "  ") && len(f) > 1 && f[0] != "version" {
			listed = append(listed, f[0])
		}
	}
	if got := strings.Join(listed, " "); got != "boot volumes secrets artifacts certificates dns addons wait wait-api etcd-snapshot approve-csrs drainer pod-identity-webhook" {
		t.Errorf("help lists %s", got)
	}
}

// `kube-aws-node <step> --dry-run` prints the changes on stdout, exits 0
// and changes nothing; --json prints them as JSON; a plan it cannot read
// is exit 3, as for the step itself.
func TestDryRun(t *testing.T) {
	_, env := machine(t, userdata(t), []byte(hard))
	root := t.TempDir()
	write := func(p, content string) {
		os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755)
		if err := os.WriteFile(filepath.Join(root, p), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	plan, _ := nodeplan.Encode(&nodeplan.SecretsPlan{Files: []nodeplan.SecretFile{{Path: "/etc/dex/dex.env", Format: nodeplan.FormatEnv}}})
	write(nodeplan.SecretsPath, string(plan))
	write("/etc/dex/dex.env", "PASSWORD="+marker+"\n")
	dryRun := func(args ...string) (int, string, string) {
		cmd := exec.Command(binary, append([]string{"secrets", "--root", root, "--console", ""}, args...)...)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Run()
		return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
	}
	code, out, log := dryRun("--dry-run")
	if code != 0 || out != "substitute /etc/dex/dex.env: 1 markers (env)\n" || !strings.Contains(log, "secrets: dry run: 1 changes, none made") {
		t.Errorf("exit %d, stdout %q, stderr:\n%s", code, out, log)
	}
	code, out, _ = dryRun("--dry-run", "--json")
	var printed struct {
		Step    string
		Changes []struct{ Action, Target, Detail string }
	}
	if err := json.Unmarshal([]byte(out), &printed); code != 0 || err != nil || printed.Step != "secrets" || len(printed.Changes) != 1 || printed.Changes[0].Target != "/etc/dex/dex.env" {
		t.Errorf("exit %d, --json printed %s (%v)", code, out, err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "/etc/dex/dex.env")); string(b) != "PASSWORD="+marker+"\n" {
		t.Errorf("the dry run changed the file: %q", b)
	}
	if _, err := os.Stat(filepath.Join(root, nodeplan.FactsPath)); err == nil {
		t.Error("the dry run kept the facts")
	}
	write(nodeplan.SecretsPath, `{"files": [{"path": "/etc/dex/dex.env", "format": "ini"}]}`)
	if code, out, log := dryRun("--dry-run"); code != agent.ExitBadInput || out != "" || !strings.Contains(log, "files[0].format") {
		t.Errorf("a bad plan: exit %d, stdout %q, stderr:\n%s", code, out, log)
	}
}
