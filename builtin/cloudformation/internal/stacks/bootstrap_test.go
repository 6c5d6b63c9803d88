package stacks

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// substituted is the bootstrap as the machine runs it: Fn::Sub filled in.
// assets is controllerAssets on controllers, "" elsewhere.
func substituted(t *testing.T, assets string) string {
	t.Helper()
	s := fmt.Sprintf(bootstrap, "test", assets)
	for k, v := range map[string]string{"AWS::Region": "eu-west-1", "AssetsBucket": "bkt", "SecretsPrefix": "pfx/secrets", "UserDataKey": "pfx/assets/abc", "ChartsIndexKey": "pfx/assets/def"} {
		s = strings.ReplaceAll(s, "${"+k+"}", v)
	}
	// Fn::Sub fails the stack on any ${Name} it cannot resolve.
	if left := regexp.MustCompile(`\$\{[^}]*\}`).FindAllString(s, -1); len(left) > 0 {
		t.Fatalf("the bootstrap holds %v, which Fn::Sub would try to resolve", left)
	}
	return s
}

func TestBootstrapIsValidBash(t *testing.T) {
	for _, assets := range []string{"", controllerAssets} {
		p := filepath.Join(t.TempDir(), "bootstrap.sh")
		if err := os.WriteFile(p, []byte(substituted(t, assets)), 0o755); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("bash", "-n", p).CombinedOutput(); err != nil {
			t.Fatalf("bash -n: %v\n%s", err, out)
		}
	}
}

// TestControllerAssetsEnv: the controller bootstrap writes assets.env, which
// the helm install script sources, with the bucket and the key of
// charts/releases.json as deploy filled them in.
func TestControllerAssetsEnv(t *testing.T) {
	s := substituted(t, controllerAssets)
	const open = "cat > /etc/kube-aws/assets.env <<'KUBE_AWS_ASSETS_EOF'\n"
	start := strings.Index(s, open)
	end := strings.Index(s, "\nKUBE_AWS_ASSETS_EOF\n")
	if start < 0 || end < 0 || !strings.Contains(s[:start], "mkdir -p /etc/kube-aws\n") {
		t.Fatalf("no assets.env in the controller bootstrap:\n%s", s)
	}
	if start > strings.Index(s, "\ncloud-init --file") {
		t.Errorf("assets.env must be written before cloud-init starts the units")
	}
	env := filepath.Join(t.TempDir(), "assets.env")
	if err := os.WriteFile(env, []byte(s[start+len(open):end+1]), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", "-c", `set -u; . "$1"; echo "$KUBE_AWS_REGION $KUBE_AWS_ASSETS_BUCKET $KUBE_AWS_CHARTS_INDEX_KEY"`, "bash", env).CombinedOutput()
	if err != nil || string(out) != "eu-west-1 bkt pfx/assets/def\n" {
		t.Errorf("sourcing assets.env: %v: %q", err, out)
	}
	if strings.Contains(substituted(t, ""), "assets.env") {
		t.Errorf("only controllers install charts")
	}
}

// TestDecryptSecrets runs the decrypt-secrets script the bootstrap installs
// against a fake aws CLI: each marker in a listed file must be replaced by
// the KMS plain text of the object at <SecretsPrefix>/<sha256 of marker>.
func TestDecryptSecrets(t *testing.T) {
	// Run the interpreter itself, not a version manager's shim that puts
	// its own bin folder (with a real aws CLI in it) first on PATH.
	py, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Fatalf("python3 is needed to run the decrypt-secrets script the bootstrap installs: %v", err)
	}
	s := substituted(t, controllerAssets)
	start := strings.Index(s, "<<'KUBE_AWS_EOF'\n")
	end := strings.Index(s, "\nKUBE_AWS_EOF\n")
	if start < 0 || end < 0 {
		t.Fatal("no decrypt-secrets script in the bootstrap")
	}
	script := s[start+len("<<'KUBE_AWS_EOF'\n") : end+1]

	dir := t.TempDir()
	fakeAWS := `#!/usr/bin/env python3
import sys, base64
a = sys.argv[1:]
if a[0] == "s3":
    sys.stdout.write("CIPHER " + [x for x in a if x.startswith("s3://")][0])
elif a[0] == "kms":
    sys.stdout.write(base64.b64encode(("plain<" + sys.stdin.read() + ">").encode()).decode() + "\n")
else:
    sys.exit(2)
`
	write := func(name, content string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("aws", fakeAWS, 0o755)
	decrypt := write("decrypt-secrets", script, 0o755)
	marker := "((secret:dex/clientSecret))"
	withSecret := write("dex.yaml", "a: "+marker+"\nb: "+marker+"\n", 0o600)
	plain := write("plain.yaml", "nothing secret\n", 0o644)
	list := write("secrets.list", withSecret+"\n"+plain+"\n", 0o644)

	cmd := exec.Command(strings.TrimSpace(string(py)), decrypt, list)
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("decrypt-secrets: %v\n%s", err, out)
	}
	sum := sha256.Sum256([]byte(marker))
	val := "plain<CIPHER s3://bkt/pfx/secrets/" + hex.EncodeToString(sum[:]) + ">"
	got, _ := os.ReadFile(withSecret)
	if string(got) != "a: "+val+"\nb: "+val+"\n" {
		t.Errorf("decrypted file:\n%s", got)
	}
	if got, _ := os.ReadFile(plain); string(got) != "nothing secret\n" {
		t.Errorf("a file without markers changed: %q", got)
	}
}
