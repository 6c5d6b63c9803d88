package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
)

// These tests run the real kube-aws binary, in a layout like `make build`
// makes (bin/kube-aws beside bin/kube-aws-plugins/builtin/), on a cluster
// folder with user plugins in plugins/<name>/<name>.

func TestMain(m *testing.M) {
	code := m.Run()
	plugintest.Cleanup()
	if dir, err := nodeAgentDir(); err == nil {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// layout is one test's bin folder and cluster folder.
type layout struct {
	t       *testing.T
	root    string
	kubeAWS string
	cluster string
}

func newLayout(t *testing.T) *layout {
	t.Helper()
	root := t.TempDir()
	l := &layout{t: t, root: root, kubeAWS: filepath.Join(root, "bin", "kube-aws"), cluster: filepath.Join(root, "cluster")}
	builtin := filepath.Join(root, "bin", "kube-aws-plugins", "builtin")
	for _, d := range []string{builtin, filepath.Join(root, "bin", "kube-aws-plugins", "contrib"), l.cluster} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	copyFile(t, plugintest.Build(t, "github.com/kube-aws/kube-aws/cmd/kube-aws"), l.kubeAWS)
	// A trivial built-in, found next to the executable with no configuration.
	copyFile(t, plugintest.Build(t, "github.com/kube-aws/kube-aws/plugins/testdata/trivial"), filepath.Join(builtin, "base"))
	if _, stderr, code := l.run("init", "--cluster-name", "e2e", "--region", "eu-west-1",
		"--availability-zones", "eu-west-1a", "--s3-uri", "s3://e2e-bucket/e2e"); code != 0 {
		t.Fatalf("kube-aws init: exit %d\n%s", code, stderr)
	}
	return l
}

// userPlugin drops a built plugin into plugins/<name>/<name> and enables it.
func (l *layout) userPlugin(name, pkg string, values string) {
	l.t.Helper()
	copyFile(l.t, plugintest.Build(l.t, pkg), filepath.Join(l.cluster, "plugins", name, name))
	path := filepath.Join(l.cluster, "cluster.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		l.t.Fatal(err)
	}
	entry := fmt.Sprintf("  %s:\n    enabled: true\n", name)
	if values != "" {
		entry += fmt.Sprintf("    values: %s\n", values)
	}
	// kube-aws init writes "plugins: {}"; later plugins go under "plugins:".
	s := strings.Replace(string(b), "\nplugins: {}\n", "\nplugins:\n", 1)
	if !strings.Contains(s, "\nplugins:\n") {
		l.t.Fatalf("cluster.yaml has no plugins section:\n%s", s)
	}
	s = strings.Replace(s, "\nplugins:\n", "\nplugins:\n"+entry, 1)
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		l.t.Fatal(err)
	}
}

// userPluginEntry enables a plugin in cluster.yaml without installing it.
func (l *layout) userPluginEntry(name string) {
	path := filepath.Join(l.cluster, "cluster.yaml")
	b, _ := os.ReadFile(path)
	s := strings.Replace(string(b), "\nplugins: {}\n", "\nplugins:\n  "+name+":\n    enabled: true\n", 1)
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		l.t.Fatal(err)
	}
}

func (l *layout) cmd(args ...string) *exec.Cmd {
	c := exec.Command(l.kubeAWS, args...)
	c.Dir = l.cluster
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "KUBE_AWS_BUILTIN_DIR=") && !strings.HasPrefix(e, "KUBE_AWS_CONTRIB_DIR=") {
			env = append(env, e)
		}
	}
	c.Env = append(env, "KUBE_AWS_TEST_PANIC_STAGE=render")
	return c
}

func (l *layout) run(args ...string) (stdout, stderr string, code int) {
	l.t.Helper()
	c := l.cmd(args...)
	var o, e bytes.Buffer
	c.Stdout, c.Stderr = &o, &e
	err := c.Run()
	code = 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		l.t.Fatalf("running kube-aws %v: %v", args, err)
	}
	return o.String(), e.String(), code
}

// processesUnder lists running processes whose executable is under dir.
func processesUnder(dir string) []string {
	var out []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err == nil && strings.HasPrefix(exe, dir+string(filepath.Separator)) {
			out = append(out, e.Name()+" "+exe)
		}
	}
	return out
}

func (l *layout) assertNoPluginLeft() {
	l.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := processesUnder(l.root)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			l.t.Fatalf("plugin processes left running: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

func readDirTree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestUserPluginTakesPartInEveryStage(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	l.userPlugin("hello", "github.com/kube-aws/kube-aws/cmd/kube-aws/testdata/hello", `{greeting: bonjour}`)

	out, errOut, code := l.run("plugins", "list")
	if code != 0 || !strings.Contains(out, "hello") || !strings.Contains(out, "0.1.0") || !strings.Contains(out, "user") ||
		!strings.Contains(out, "initialise,render,deploy,validate") || !strings.Contains(out, "base") {
		t.Fatalf("plugins list: exit %d\n%s\n%s", code, out, errOut)
	}

	for _, st := range []string{"initialise", "render", "deploy", "validate"} {
		out, errOut, code := l.run("stage", st)
		if code != 0 {
			t.Fatalf("stage %s: exit %d\n%s\n%s", st, code, out, errOut)
		}
		if !strings.Contains(out, st+": base, hello (2 plugin(s))") {
			t.Fatalf("stage %s output does not show the plugins that ran:\n%s", st, out)
		}
		if !strings.Contains(errOut, "[hello] bonjour from "+st) {
			t.Fatalf("stage %s: the plugin's log is not shown:\n%s", st, errOut)
		}
	}
	b, err := os.ReadFile(filepath.Join(l.cluster, "rendered", "hello", "greeting.txt"))
	if err != nil || string(b) != "bonjour\n" {
		t.Fatalf("rendered file: %q %v", b, err)
	}
	l.assertNoPluginLeft()

	// JSON: a stable document on stdout, nothing else there.
	out, _, code = l.run("stage", "deploy", "--output", "json")
	var doc struct {
		Command  string `json:"command"`
		OK       bool   `json:"ok"`
		ExitCode int    `json:"exitCode"`
		Stages   []struct {
			Stage   string
			Plugins []string
		} `json:"stages"`
		Diagnostics []any                               `json:"diagnostics"`
		Deploy      struct{ Outputs map[string]string } `json:"deploy"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("stdout is not one JSON document: %v\n%s", err, out)
	}
	if code != 0 || !doc.OK || doc.Command != "stage deploy" || doc.Diagnostics == nil ||
		!reflect.DeepEqual(doc.Stages[0].Plugins, []string{"base", "hello"}) || doc.Deploy.Outputs["hello"] != "bonjour" {
		t.Fatalf("document: %+v", doc)
	}
}

// kube-aws validate checks what the last up deployed. When nothing was
// deployed from the folder, or cluster.yaml changed since, it refuses and
// names kube-aws up, the command a user of up and render knows, not the
// per-stage commands of CI; kube-aws stage validate still names the stage.
func TestValidateNamesUpWhenTheDeployIsMissingOrStale(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	l.userPlugin("hello", "github.com/kube-aws/kube-aws/cmd/kube-aws/testdata/hello", `{greeting: bonjour}`)
	if out, errOut, code := l.run("render"); code != 0 {
		t.Fatalf("render: exit %d\n%s\n%s", code, out, errOut)
	}
	out, errOut, code := l.run("validate")
	if code != 2 || !strings.Contains(errOut, "nothing to validate: no cluster was deployed from this folder yet") ||
		!strings.Contains(errOut, "run `kube-aws up` first") {
		t.Fatalf("validate before any deploy: exit %d, want 2 naming kube-aws up\n%s\n%s", code, out, errOut)
	}
	for _, st := range []string{"deploy", "validate"} {
		if out, errOut, code := l.run("stage", st); code != 0 {
			t.Fatalf("stage %s: exit %d\n%s\n%s", st, code, out, errOut)
		}
	}
	if out, errOut, code := l.run("validate"); code != 0 || !strings.Contains(out, "cluster e2e is valid") {
		t.Fatalf("validate after the deploy: exit %d\n%s\n%s", code, out, errOut)
	}

	path := filepath.Join(l.cluster, "cluster.yaml")
	b, _ := os.ReadFile(path)
	if err := os.WriteFile(path, bytes.Replace(b, []byte("greeting: bonjour"), []byte("greeting: salut"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = l.run("validate")
	if code != 2 || !strings.Contains(errOut, "the deployed cluster is not what this folder describes now") ||
		!strings.Contains(errOut, "cluster.yaml or a plugin config file changed since it ran") ||
		!strings.Contains(errOut, "run `kube-aws up` to deploy the change, then `kube-aws validate`") {
		t.Fatalf("validate after editing cluster.yaml: exit %d, want 2 naming kube-aws up\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = l.run("stage", "validate")
	if code != 2 || !strings.Contains(errOut, "state of stage initialise is stale") || !strings.Contains(errOut, "run `kube-aws stage initialise` again") {
		t.Fatalf("stage validate after editing cluster.yaml: exit %d, want 2 naming the stage\n%s\n%s", code, out, errOut)
	}
}

func TestAPanickingPluginLeavesTheOutputAndNoProcess(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	l.userPlugin("hello", "github.com/kube-aws/kube-aws/cmd/kube-aws/testdata/hello", "")
	if out, errOut, code := l.run("render"); code != 0 {
		t.Fatalf("render: exit %d\n%s\n%s", code, out, errOut)
	}
	before := readDirTree(t, filepath.Join(l.cluster, "rendered"))
	if len(before) != 3 { // hello's two files and manifest.json
		t.Fatalf("rendered: %v", before)
	}

	l.userPlugin("panic", "github.com/kube-aws/kube-aws/plugins/testdata/panic", "")
	out, errOut, code := l.run("render")
	if code != 1 {
		t.Fatalf("render with a panicking plugin: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "panic") || !strings.Contains(errOut, "render") || !strings.Contains(errOut, "boom in render") {
		t.Fatalf("the error does not name the plugin, the stage and the panic:\n%s", errOut)
	}
	if after := readDirTree(t, filepath.Join(l.cluster, "rendered")); !reflect.DeepEqual(before, after) {
		t.Fatalf("the output folder changed:\nbefore %v\nafter %v", before, after)
	}
	entries, _ := os.ReadDir(l.cluster)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".rendered") {
			t.Fatalf("temporary output %s left behind", e.Name())
		}
	}
	l.assertNoPluginLeft()

	// JSON mode reports the same fatal in the document.
	out, _, code = l.run("render", "-o", "json")
	var doc struct {
		OK          bool `json:"ok"`
		ExitCode    int  `json:"exitCode"`
		Diagnostics []struct {
			Severity, Plugin, Stage, Message string
		} `json:"diagnostics"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if code != 1 || doc.OK || doc.ExitCode != 1 || len(doc.Diagnostics) == 0 ||
		doc.Diagnostics[0].Plugin != "panic" || doc.Diagnostics[0].Stage != "render" || doc.Diagnostics[0].Severity != "fatal" {
		t.Fatalf("document: %+v", doc)
	}
	l.assertNoPluginLeft()
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	cases := []struct {
		name string
		args []string
		prep func()
		want int
	}{
		{"ok", []string{"version"}, nil, 0},
		{"unknown command", []string{"bogus"}, nil, 2},
		{"unknown flag", []string{"render", "--bogus"}, nil, 2},
		{"bad output format", []string{"render", "--output", "yaml"}, nil, 2},
		{"unknown stage", []string{"stage", "deploi"}, nil, 2},
		{"missing state", []string{"stage", "deploy"}, nil, 2},
		{"init refuses to overwrite", []string{"init", "--cluster-name", "x", "--region", "eu-west-1", "--s3-uri", "s3://bucket/x"}, nil, 2},
		{"missing cluster.yaml", []string{"render", "-c", "nope.yaml"}, nil, 2},
		{"enabling an unknown plugin", []string{"render"}, func() {
			l.userPluginEntry("nosuch")
		}, 2},
		{"invalid cluster.yaml", []string{"render"}, func() {
			appendFile(t, filepath.Join(l.cluster, "cluster.yaml"), "bogusKey: 1\n")
		}, 2},
	}
	orig, _ := os.ReadFile(filepath.Join(l.cluster, "cluster.yaml"))
	for _, c := range cases {
		if err := os.WriteFile(filepath.Join(l.cluster, "cluster.yaml"), orig, 0o644); err != nil {
			t.Fatal(err)
		}
		if c.prep != nil {
			c.prep()
		}
		out, errOut, code := l.run(c.args...)
		if code != c.want {
			t.Errorf("%s: exit %d, want %d\n%s\n%s", c.name, code, c.want, out, errOut)
		}
		if c.want == 2 && !strings.Contains(errOut, "Error:") {
			t.Errorf("%s: no error message:\n%s", c.name, errOut)
		}
	}

	// A plugin's fatal diagnostic: 1, after every plugin finished the stage.
	if err := os.WriteFile(filepath.Join(l.cluster, "cluster.yaml"), orig, 0o644); err != nil {
		t.Fatal(err)
	}
	l.userPlugin("fatal", "github.com/kube-aws/kube-aws/plugins/testdata/fatal", "")
	if out, errOut, code := l.run("render"); code != 1 || !strings.Contains(errOut, "fatal [fatal/initialise]") {
		t.Errorf("fatal plugin: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	l.assertNoPluginLeft()
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func TestInterruptExits130AndKillsEveryPlugin(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	l.userPlugin("hang", "github.com/kube-aws/kube-aws/plugins/testdata/hang", "")
	c := l.cmd("render")
	c.Env = append(c.Env, "KUBE_AWS_TEST_HANG_STAGE=initialise")
	var errOut bytes.Buffer
	c.Stderr = &errOut
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the hanging plugin runs, then Ctrl-C.
	deadline := time.Now().Add(60 * time.Second) // generous: CI machines are loaded
	for len(processesUnder(filepath.Join(l.cluster, "plugins"))) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the plugin never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if err := c.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err := c.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit: %v, want 130\n%s", err, errOut.String())
	}
	l.assertNoPluginLeft()
	if _, err := os.Stat(filepath.Join(l.cluster, "rendered")); !os.IsNotExist(err) {
		t.Fatal("an interrupted render wrote output")
	}
}

func TestValuesFailingThePluginSchemaExit2WithTheirPath(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	l.userPlugin("hello", "github.com/kube-aws/kube-aws/cmd/kube-aws/testdata/hello", `{greeting: 42, farewell: bye}`)
	out, errOut, code := l.run("render")
	if code != 2 || !strings.Contains(errOut, "plugins.hello.values.greeting") || !strings.Contains(errOut, "cluster.yaml:") {
		t.Fatalf("exit %d, want 2 naming plugins.hello.values.greeting with its line\n%s\n%s", code, out, errOut)
	}
	// It ends with the count of what to fix and where, not a generic
	// "registration failed".
	if !strings.HasSuffix(errOut, "2 fatal, 0 warning(s)\nError: cluster.yaml is not valid: 2 error(s) in plugin settings\n") {
		t.Fatalf("the schema errors do not end with their count:\n%s", errOut)
	}
	l.assertNoPluginLeft()

	out, errOut, code = l.run("plugins", "describe", "hello", "-o", "json")
	var d struct {
		Name         string          `json:"name"`
		Version      string          `json:"version"`
		Source       string          `json:"source"`
		Enabled      bool            `json:"enabled"`
		ValuesSchema json.RawMessage `json:"valuesSchema"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil || code != 0 {
		t.Fatalf("describe: exit %d %v\n%s\n%s", code, err, out, errOut)
	}
	if d.Name != "hello" || d.Version != "0.1.0" || d.Source != "user" || !d.Enabled || !bytes.Contains(d.ValuesSchema, []byte("greeting")) {
		t.Fatalf("describe: %+v", d)
	}
	if _, _, code := l.run("plugins", "describe", "nosuch"); code != 2 {
		t.Fatalf("describe of an unknown plugin: exit %d, want 2", code)
	}
	out, _, code = l.run("schema")
	if code != 0 || !json.Valid([]byte(out)) || !strings.Contains(out, "clusterName") {
		t.Fatalf("schema: exit %d\n%.200s", code, out)
	}
}

// A sensitive value never appears in plain text: not in rendered/, not under
// .kube-aws/, not in stdout or stderr, text or JSON, in any stage.
func TestASecretNeverAppearsInPlainText(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	const sentinel = "s3ntinel-Secret-4f7a"
	path := filepath.Join(l.cluster, "cluster.yaml")
	b, _ := os.ReadFile(path)
	if !bytes.Contains(b, []byte("\nkmsKeyArn:")) {
		b = append(b, []byte("kmsKeyArn: arn:aws:kms:eu-west-1:123456789012:key/0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d\n")...)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	l.userPlugin("hello", "github.com/kube-aws/kube-aws/cmd/kube-aws/testdata/hello", `{greeting: {valueFrom: {env: HELLO_GREETING}}}`)
	var all strings.Builder
	for _, args := range [][]string{
		{"render"}, {"render", "-o", "json"},
		{"stage", "initialise"}, {"stage", "render", "-o", "json"}, {"stage", "deploy"}, {"stage", "deploy", "-o", "json"},
		{"stage", "validate", "-v"}, {"plugins", "list"},
	} {
		c := l.cmd(args...)
		c.Env = append(c.Env, "HELLO_GREETING="+sentinel)
		var o, e bytes.Buffer
		c.Stdout, c.Stderr = &o, &e
		if err := c.Run(); err != nil {
			t.Fatalf("kube-aws %v: %v\n%s\n%s", args, err, o.String(), e.String())
		}
		all.WriteString(o.String())
		all.WriteString(e.String())
	}
	// The secret the plugin generated (testdata/hello) is kept in
	// credentials/, and only there.
	const generated = "g3nerated-T0ken-8b2d"
	if strings.Contains(all.String(), sentinel) || strings.Contains(all.String(), generated) {
		t.Fatalf("a secret appears in the output:\n%s", all.String())
	}
	if !strings.Contains(all.String(), "[hello] deploy has the plain text of ((secret:hello/generated/token)): true") {
		t.Fatalf("deploy did not receive the generated secret:\n%s", all.String())
	}
	kept := filepath.Join(l.cluster, "credentials", "hello", "token")
	if b, err := os.ReadFile(kept); err != nil || string(b) != generated {
		t.Fatalf("credentials/hello/token = %q, %v", b, err)
	}
	for p, want := range map[string]os.FileMode{kept: 0o600, filepath.Dir(kept): 0o700 | os.ModeDir, filepath.Join(l.cluster, "credentials"): 0o700 | os.ModeDir} {
		if st, err := os.Stat(p); err != nil || st.Mode() != want {
			t.Fatalf("%s: mode %v (%v), want %v", p, st.Mode(), err, want)
		}
	}
	if !strings.Contains(all.String(), "[hello] ((secret:hello/values/greeting)) from deploy") {
		t.Fatalf("the plugin did not see the marker:\n%s", all.String())
	}
	for _, dir := range []string{"rendered", ".kube-aws"} {
		for name, content := range readDirTree(t, filepath.Join(l.cluster, dir)) {
			if strings.Contains(content, sentinel) || strings.Contains(content, generated) {
				t.Fatalf("%s/%s holds a secret", dir, name)
			}
		}
	}
	greeting, _ := os.ReadFile(filepath.Join(l.cluster, "rendered", "hello", "greeting.txt"))
	if string(greeting) != "((secret:hello/values/greeting))\n" {
		t.Fatalf("rendered greeting = %q, want the marker", greeting)
	}
	token, _ := os.ReadFile(filepath.Join(l.cluster, "rendered", "hello", "token.txt"))
	if string(token) != "((secret:hello/generated/token))\n" {
		t.Fatalf("rendered token = %q, want the marker", token)
	}
	l.assertNoPluginLeft()
}

func TestPluginsLockAndVerify(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	l.userPlugin("hello", "github.com/kube-aws/kube-aws/cmd/kube-aws/testdata/hello", "")
	if out, errOut, code := l.run("plugins", "verify"); code != 1 || !strings.Contains(errOut, "plugins lock") {
		t.Fatalf("verify without a lock: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	out, errOut, code := l.run("plugins", "lock")
	if code != 0 || !strings.Contains(out, "locked 1 plugin(s)") || !strings.Contains(out, "hello (user)") {
		t.Fatalf("lock: exit %d\n%s\n%s", code, out, errOut)
	}
	if out, errOut, code := l.run("plugins", "verify"); code != 0 {
		t.Fatalf("verify: exit %d\n%s\n%s", code, out, errOut)
	}
	if _, _, code := l.run("render"); code != 0 {
		t.Fatalf("render with a matching lock: exit %d", code)
	}

	// The binary changes after the lock: verify reports it, and render
	// refuses to start the plugin, saying how to re-lock.
	appendFile(t, filepath.Join(l.cluster, "plugins", "hello", "hello"), "tampered")
	out, _, code = l.run("plugins", "verify", "-o", "json")
	var doc struct {
		OK          bool `json:"ok"`
		Diagnostics []struct{ Message string }
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 1 || doc.OK || len(doc.Diagnostics) != 1 ||
		!strings.Contains(doc.Diagnostics[0].Message, "does not match plugins.lock") {
		t.Fatalf("verify after tampering: exit %d %v\n%s", code, err, out)
	}
	out, errOut, code = l.run("plugins", "list")
	if code != 1 || !strings.Contains(out, "(failed to start)") || !strings.Contains(out, "base") ||
		!strings.Contains(errOut, "1 plugin(s) could not be started: hello") {
		t.Fatalf("plugins list with a tampered plugin: exit %d, want 1 with the listing\n%s\n%s", code, out, errOut)
	}
	out, errOut, code = l.run("render")
	if code != 1 || !strings.Contains(errOut, "hello") || !strings.Contains(errOut, "kube-aws plugins lock") {
		t.Fatalf("render of a tampered plugin: exit %d, want 1\n%s\n%s", code, out, errOut)
	}
	l.assertNoPluginLeft()
}

func TestAHangingPluginIsKilledAtTheStageTimeoutAndNamed(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	l.userPlugin("hang", "github.com/kube-aws/kube-aws/plugins/testdata/hang", "")
	c := l.cmd("render", "--stage-timeout", "500ms")
	c.Env = append(c.Env, "KUBE_AWS_TEST_HANG_STAGE=initialise")
	var o, e bytes.Buffer
	c.Stdout, c.Stderr = &o, &e
	start := time.Now()
	err := c.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("exit %v, want 1\n%s\n%s", err, o.String(), e.String())
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Fatalf("took %s with a 500ms stage timeout", took)
	}
	if !strings.Contains(e.String(), "plugin hang did not finish stage initialise within 500ms") {
		t.Fatalf("the hanging plugin is not named:\n%s", e.String())
	}
	l.assertNoPluginLeft()
}

// Broken plugins and plugin layouts, through the real binary: each is named,
// exits with its documented code and leaves no process behind.
func TestBrokenPluginsAndLayouts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		setup func(l *layout)
		code  int
		want  []string
	}{
		{"stdout before the handshake", func(l *layout) {
			l.userPlugin("stdoutgarbage", "github.com/kube-aws/kube-aws/plugins/testdata/stdoutgarbage", "")
		}, 1, []string{"stdoutgarbage"}},
		{"unsupported protocol version", func(l *layout) {
			l.userPlugin("badproto", "github.com/kube-aws/kube-aws/plugins/testdata/badproto", "")
		}, 1, []string{"badproto", "protocol"}},
		{"an enabled plugin whose file is not executable", func(l *layout) {
			l.userPluginEntry("junk")
			p := filepath.Join(l.cluster, "plugins", "junk", "junk")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("not a plugin"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, 2, []string{"junk", "not executable"}},
		{"an executable that is not a plugin", func(l *layout) {
			l.userPluginEntry("notaplugin")
			p := filepath.Join(l.cluster, "plugins", "notaplugin", "notaplugin")
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("#!/bin/sh\necho hello\n"), 0o755); err != nil {
				t.Fatal(err)
			}
		}, 1, []string{"notaplugin"}},
		{"one name in two sources", func(l *layout) {
			copyFile(t, plugintest.Build(t, "github.com/kube-aws/kube-aws/plugins/testdata/trivial"), filepath.Join(l.cluster, "plugins", "base", "base"))
		}, 2, []string{"base", filepath.Join("plugins", "base", "base"), filepath.Join("builtin", "base")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			l := newLayout(t)
			c.setup(l)
			out, errOut, code := l.run("render")
			if code != c.code {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, c.code, out, errOut)
			}
			for _, w := range c.want {
				if !strings.Contains(errOut, w) {
					t.Fatalf("stderr lacks %q:\n%s", w, errOut)
				}
			}
			if _, err := os.Stat(filepath.Join(l.cluster, "rendered")); !os.IsNotExist(err) {
				t.Fatal("output written")
			}
			l.assertNoPluginLeft()
		})
	}
}

// A plugin's diagnostic with a config path gets its place in cluster.yaml,
// in the text and the JSON output (issue 10, point 3).
func TestPluginDiagnosticsPointAtTheirLine(t *testing.T) {
	t.Parallel()
	l := newLayout(t)
	l.userPlugin("hello", "github.com/kube-aws/kube-aws/cmd/kube-aws/testdata/hello", `{greeting: shout}`)
	b, err := os.ReadFile(filepath.Join(l.cluster, "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	line, col := 0, 0
	for i, s := range strings.Split(string(b), "\n") {
		if c := strings.Index(s, "shout"); c >= 0 {
			line, col = i+1, c+1
		}
	}
	file := filepath.Join(l.cluster, "cluster.yaml")

	_, errOut, code := l.run("render")
	want := fmt.Sprintf("warning [hello/initialise] %s:%d:%d plugins.hello.values.greeting: hello: do not shout", file, line, col)
	if code != 0 || !strings.Contains(errOut, want) {
		t.Fatalf("render: exit %d, want %q in\n%s", code, want, errOut)
	}
	out, _, code := l.run("render", "--output", "json")
	var doc struct {
		Diagnostics []diag.Diagnostic `json:"diagnostics"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 0 {
		t.Fatalf("render --output json: exit %d, %v\n%s", code, err, out)
	}
	for _, d := range doc.Diagnostics {
		if d.Message == "hello: do not shout" {
			if d.File != file || d.Line != line || d.Column != col || d.Path != "plugins.hello.values.greeting" {
				t.Errorf("JSON diagnostic %+v, want %s:%d:%d", d, file, line, col)
			}
			return
		}
	}
	t.Errorf("no diagnostic from hello in %s", out)
}
