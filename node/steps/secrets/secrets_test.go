package secrets

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"sigs.k8s.io/yaml"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/awsenv"
	"github.com/kube-aws/kube-aws/node/step"
	"github.com/kube-aws/kube-aws/test/agenttest"
)

var motoURL string

func TestMain(m *testing.M) { agenttest.MotoMain(m, &motoURL) }

// hard is the value issue 14 asks for: a quote, a backslash, a newline.
const hard = "a \"quoted\" \\ back\nslash $HOME `x`"

const (
	markerPassword = "((secret:dex/values/password))"
	markerToken    = "((secret:dex/values/token))"
	markerKey      = "((secret:credentials/values/caKey))"
)

func write(t *testing.T, e *agent.Env, p, content string, mode os.FileMode) {
	t.Helper()
	full := e.Path(p)
	if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(full, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
}

func plan(t *testing.T, e *agent.Env, files ...nodeplan.SecretFile) {
	t.Helper()
	b, err := nodeplan.Encode(&nodeplan.SecretsPlan{Files: files})
	if err != nil {
		t.Fatal(err)
	}
	write(t, e, nodeplan.SecretsPath, string(b), 0o644)
}

// A secret with a quote, a backslash and a newline reaches a Helm values
// file (JSON), a YAML file, an environment file and a whole file exactly.
func TestSecretsEveryFormat(t *testing.T) {
	e, out := agenttest.Machine(t, motoURL, "controller", "secrets")
	agenttest.UploadSecrets(t, e, "controller", e.Settings.EncryptionContext(), map[string]string{
		markerPassword: hard, markerToken: "t0k3n", markerKey: "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----\n",
	})
	write(t, e, nodeplan.AddonsPath, `{"kubeconfig": "/etc/kubernetes/admin.kubeconfig", "releases": [{"name": "dex", "namespace": "auth", "chartKey": "assets/x", "chartSHA256": "x", "values": {"config": {"password": "`+markerPassword+`", "token": "Bearer `+markerToken+`"}}}]}`, 0o600)
	write(t, e, "/etc/dex/config.yaml", "# "+markerToken+" in a comment stays\nstaticPasswords:\n- password: "+markerPassword+"\n", 0o640)
	write(t, e, "/etc/dex/dex.env", "DEX_PASSWORD="+markerPassword+"\nDEX_TOKEN="+markerToken+"\nDEX_ADDRESS=((fact:privateIPv4))\nDEX_API=((fact:apiLoadBalancerDNS))\n", 0o600)
	e.Facts["apiloadbalancerdns"] = "api-1.elb.example" // as the bootstrap's KUBE_AWS_FACT_APILOADBALANCERDNS gives it
	write(t, e, "/etc/kubernetes/pki/ca-key.pem", markerKey+"\n", 0o600)
	write(t, e, "/etc/not-listed", markerToken, 0o644)
	if err := os.Chown(e.Path("/etc/dex/config.yaml"), 65534, 65534); err != nil {
		t.Fatal(err)
	}
	plan(t, e,
		nodeplan.SecretFile{Path: nodeplan.AddonsPath, Format: nodeplan.FormatJSON},
		nodeplan.SecretFile{Path: "/etc/dex/config.yaml", Format: nodeplan.FormatYAML},
		nodeplan.SecretFile{Path: "/etc/dex/dex.env", Format: nodeplan.FormatEnv},
		nodeplan.SecretFile{Path: "/etc/kubernetes/pki/ca-key.pem", Format: nodeplan.FormatWhole},
	)
	if err := step.Run(t.Context(), e, New()); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}

	var addons nodeplan.AddonsPlan
	b, _ := os.ReadFile(e.Path(nodeplan.AddonsPath))
	if err := json.Unmarshal(b, &addons); err != nil {
		t.Fatalf("addons plan is not JSON any more: %v\n%s", err, b)
	}
	var values struct {
		Config struct{ Password, Token string }
	}
	json.Unmarshal(addons.Releases[0].Values, &values)
	if values.Config.Password != hard || values.Config.Token != "Bearer t0k3n" {
		t.Errorf("Helm values = %+v", values.Config)
	}

	b, _ = os.ReadFile(e.Path("/etc/dex/config.yaml"))
	var dex struct{ StaticPasswords []struct{ Password string } }
	if err := yaml.Unmarshal(b, &dex); err != nil || dex.StaticPasswords[0].Password != hard {
		t.Errorf("YAML = %+v (%v)\n%s", dex, err, b)
	}
	if !strings.Contains(string(b), "# "+markerToken+" in a comment stays") {
		t.Errorf("a comment was substituted:\n%s", b)
	}
	st, _ := os.Stat(e.Path("/etc/dex/config.yaml"))
	if st.Mode().Perm() != 0o640 || st.Sys().(*syscall.Stat_t).Uid != 65534 {
		t.Errorf("mode or owner not kept: %v uid %d", st.Mode(), st.Sys().(*syscall.Stat_t).Uid)
	}

	sh, err := exec.Command("/bin/sh", "-c", `. "$1" && printf '%s|%s|%s|%s' "$DEX_PASSWORD" "$DEX_TOKEN" "$DEX_ADDRESS" "$DEX_API"`, "sh", e.Path("/etc/dex/dex.env")).Output()
	if err != nil || string(sh) != hard+"|t0k3n|"+e.Facts[nodeplan.FactPrivateIPv4]+"|api-1.elb.example" {
		t.Errorf("env file read by sh: %q (%v)", sh, err)
	}
	if b, _ := os.ReadFile(e.Path("/etc/kubernetes/pki/ca-key.pem")); !strings.HasPrefix(string(b), "-----BEGIN PRIVATE KEY-----\nMIIB\n") {
		t.Errorf("whole file = %q", b)
	}
	if b, _ := os.ReadFile(e.Path("/etc/not-listed")); string(b) != markerToken {
		t.Errorf("a file not in the plan was changed: %q", b)
	}
	for _, leak := range []string{hard, "t0k3n"} {
		if strings.Contains(out.String(), leak) {
			t.Errorf("a secret value reached the output:\n%s", out)
		}
	}

	// A second run (a reboot, a retried boot) finds nothing to do.
	before, _ := os.ReadFile(e.Path("/etc/dex/dex.env"))
	if err := step.Run(t.Context(), e, New()); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(e.Path("/etc/dex/dex.env")); string(after) != string(before) {
		t.Error("second run changed the file")
	}
}

func TestSecretsFailures(t *testing.T) {
	tests := []struct {
		name    string
		setup   func(t *testing.T, e *agent.Env)
		want    []string
		code    int
		changed bool
	}{
		{
			name: "ciphertext of another role",
			setup: func(t *testing.T, e *agent.Env) {
				agenttest.UploadSecrets(t, e, "etcd", map[string]string{"kube-aws:cluster": "demo", "kube-aws:role": "etcd"}, map[string]string{markerToken: "x"})
				// Copied into this role's folder: the context still says etcd.
				src := e.Settings.Key(nodeplan.SecretKey("etcd", markerToken))
				_, err := awsenv.S3(e.AWS).CopyObject(t.Context(), &s3.CopyObjectInput{Bucket: aws.String(e.Settings.Bucket), CopySource: aws.String(e.Settings.Bucket + "/" + src), Key: aws.String(e.Settings.Key(nodeplan.SecretKey("controller", markerToken)))})
				if err != nil {
					t.Fatal(err)
				}
				write(t, e, "/etc/a.env", "A="+markerToken+"\n", 0o600)
				plan(t, e, nodeplan.SecretFile{Path: "/etc/a.env", Format: nodeplan.FormatEnv})
			},
			want: []string{"/etc/a.env", markerToken, `not made for cluster "demo" and role "controller"`},
			code: agent.ExitFailed,
		},
		{
			name: "secret never uploaded",
			setup: func(t *testing.T, e *agent.Env) {
				write(t, e, "/etc/a.json", `{"a": "`+markerToken+`"}`, 0o600)
				plan(t, e, nodeplan.SecretFile{Path: "/etc/a.json", Format: nodeplan.FormatJSON})
			},
			want: []string{"/etc/a.json", "secret " + markerToken, "NoSuchKey"},
			code: agent.ExitFailed,
		},
		{
			name: "file is not its format",
			setup: func(t *testing.T, e *agent.Env) {
				write(t, e, "/etc/a.json", "a: "+markerToken+"\n", 0o600)
				plan(t, e, nodeplan.SecretFile{Path: "/etc/a.json", Format: nodeplan.FormatJSON})
			},
			want: []string{"/etc/a.json (format json)", "not JSON"},
			code: agent.ExitBadInput,
		},
		{
			name: "a fact the machine does not have",
			setup: func(t *testing.T, e *agent.Env) {
				write(t, e, "/etc/a.json", `{"a": "((fact:member))", "b": "`+markerToken+`"}`, 0o600)
				plan(t, e, nodeplan.SecretFile{Path: "/etc/a.json", Format: nodeplan.FormatJSON})
			},
			want: []string{"/etc/a.json", "{member}", "which this machine does not have"},
			code: agent.ExitBadInput,
		},
		{
			name: "listed file missing",
			setup: func(t *testing.T, e *agent.Env) {
				plan(t, e, nodeplan.SecretFile{Path: "/etc/missing", Format: nodeplan.FormatWhole})
			},
			want: []string{"/etc/missing is in the secrets plan but no file is there"},
			code: agent.ExitBadInput,
		},
		{
			name: "invalid plan",
			setup: func(t *testing.T, e *agent.Env) {
				write(t, e, nodeplan.SecretsPath, `{"files": [{"path": "etc/x", "format": "ini"}]}`, 0o644)
			},
			want: []string{nodeplan.SecretsPath, "files[0].path", "files[0].format"},
			code: agent.ExitBadInput,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := agenttest.Machine(t, motoURL, "controller", "secrets")
			tt.setup(t, e)
			ctx, cancel := context.WithTimeout(t.Context(), 20e9)
			defer cancel()
			err := step.Run(ctx, e, New())
			if err == nil {
				t.Fatal("succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if c := agent.ExitCode(err); c != tt.code {
				t.Errorf("exit code %d, want %d", c, tt.code)
			}
			for _, f := range []string{"/etc/a.env", "/etc/a.json"} {
				if b, err := os.ReadFile(e.Path(f)); err == nil && !strings.Contains(string(b), markerToken) {
					t.Errorf("%s changed despite the failure: %q", f, b)
				}
			}
		})
	}
}

func TestNoPlan(t *testing.T) {
	e, out := agenttest.Machine(t, motoURL, "etcd", "secrets")
	if err := step.Run(t.Context(), e, New()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "no /etc/kube-aws/secrets.json on this machine: nothing to do") {
		t.Errorf("output: %s", out)
	}
}

// The dry run decrypts in memory, says which files it would substitute,
// and changes nothing.
func TestDryRun(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, e *agent.Env)
		want  agenttest.Want
	}{
		{
			name: "files with markers",
			setup: func(t *testing.T, e *agent.Env) {
				agenttest.UploadSecrets(t, e, "controller", e.Settings.EncryptionContext(), map[string]string{markerPassword: hard, markerToken: "t0k3n"})
				write(t, e, "/etc/dex/dex.env", "DEX_PASSWORD="+markerPassword+"\nDEX_ADDRESS=((fact:privateIPv4))\n", 0o600)
				write(t, e, "/etc/dex/values.json", `{"token": "`+markerToken+`"}`, 0o600)
				write(t, e, "/etc/done.json", `{"token": "t0k3n"}`, 0o600)
				plan(t, e,
					nodeplan.SecretFile{Path: "/etc/dex/dex.env", Format: nodeplan.FormatEnv},
					nodeplan.SecretFile{Path: "/etc/done.json", Format: nodeplan.FormatJSON},
					nodeplan.SecretFile{Path: "/etc/dex/values.json", Format: nodeplan.FormatJSON})
			},
			want: agenttest.Want{Changes: []string{"substitute /etc/dex/dex.env: 2 markers (env)", "substitute /etc/dex/values.json: 1 markers (json)"}},
		},
		{name: "no plan", setup: func(*testing.T, *agent.Env) {}},
		{
			name: "secret never uploaded",
			setup: func(t *testing.T, e *agent.Env) {
				write(t, e, "/etc/a.json", `{"a": "`+markerToken+`"}`, 0o600)
				plan(t, e, nodeplan.SecretFile{Path: "/etc/a.json", Format: nodeplan.FormatJSON})
			},
			want: agenttest.Want{Err: "NoSuchKey", Code: agent.ExitFailed},
		},
		{
			name: "plan it cannot read",
			setup: func(t *testing.T, e *agent.Env) {
				write(t, e, nodeplan.SecretsPath, `{"files": [{"path": "/etc/x", "format": "ini"}]}`, 0o644)
			},
			want: agenttest.Want{Err: "files[0].format", Code: agent.ExitBadInput},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := agenttest.Machine(t, motoURL, "controller", "secrets")
			tt.setup(t, e)
			d, out := agenttest.DryEnv(t, e)
			agenttest.ExpectDryRun(t, d, New(), tt.want)
			if strings.Contains(out.String(), "t0k3n") || strings.Contains(out.String(), hard) {
				t.Errorf("a secret reached the output:\n%s", out)
			}
		})
	}
}
