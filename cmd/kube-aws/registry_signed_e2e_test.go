package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/plugins/source"
	"github.com/kube-aws/kube-aws/test/registrytest"
)

// otherCluster is a second cluster folder beside l's, with the same
// kube-aws, registry and plugin cache: another cluster on the same machine.
func (l *regLayout) otherCluster() *regLayout {
	l.t.Helper()
	lay := *l.layout
	lay.cluster = filepath.Join(l.root, "other-cluster")
	b, err := os.ReadFile(filepath.Join(l.cluster, "cluster.yaml"))
	if err != nil {
		l.t.Fatal(err)
	}
	if err := os.MkdirAll(lay.cluster, 0o755); err != nil {
		l.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(lay.cluster, "cluster.yaml"), b, 0o644); err != nil {
		l.t.Fatal(err)
	}
	return &regLayout{layout: &lay, reg: l.reg, cache: l.cache}
}

// markingPlugin is a folder holding a build of the trivial plugin named
// name behind a script that touches marker whenever it is started.
func markingPlugin(t *testing.T, name, marker string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	copyFile(t, plugintest.Build(t, "github.com/kube-aws/kube-aws/plugins/testdata/trivial"), bin)
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\ntouch " + marker + "\nexec " + bin + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// plugins.lock is not a way around signatures, through the kube-aws
// binary. A cluster without a key installs an unsigned build of hello,
// which lands in the plugin cache every cluster on the machine shares.
// In a cluster that requires hello's signature, plugins.lock edited to pin
// that unsigned digest (with its hashes, keeping the recorded key) must
// not make render start it, and plugins verify must not say it matches.
func TestEditedLockCannotStartAnUnsignedPluginCLI(t *testing.T) {
	l := newRegLayout(t)
	cosign := registrytest.NewCosign(t)
	priv, pub := cosign.GenerateKeyPair(t, l.cluster)
	signed := l.push(l.pluginFolder("hello", "", nil), "plugins/hello:1.0.0")
	cosign.Sign(t, priv, l.reg.Host+"/plugins/hello@"+signed, registrytest.Bundle)
	marker := filepath.Join(t.TempDir(), "unsigned-plugin-started")
	unsigned := l.push(markingPlugin(t, "hello", marker), "plugins/hello:dev", "--platform", source.HostPlatform())

	other := l.otherCluster()
	other.plugin("hello", "source: "+l.reg.Ref("plugins/hello:dev"))
	other.ok("plugins", "install")
	otherLock, err := source.ReadLockfile(filepath.Join(other.cluster, source.LockfileName))
	if err != nil {
		t.Fatal(err)
	}

	l.plugin("hello", "source: "+l.reg.Ref("plugins/hello:1.0.0"), "verify: {key: cosign.pub}")
	l.ok("plugins", "install")
	lockPath := filepath.Join(l.cluster, source.LockfileName)
	good, err := os.ReadFile(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := source.ReadLockfile(lockPath)
	if err != nil {
		t.Fatal(err)
	}
	e, o := lock.Entry("hello"), otherLock.Entry("hello")
	e.Digest, e.Version, e.Platforms = o.Digest, o.Version, o.Platforms
	if err := lock.Write(lockPath); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(marker); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}

	l.refused(1, "plugins.hello.verify", []string{"plugin hello from " + l.reg.Ref("plugins/hello:1.0.0") + " (" + unsigned + ") is refused: plugins.lock pins it to that digest, and it has no cosign signature",
		"with the key " + pub, "restore plugins.lock", "kube-aws plugins upgrade hello"}, "render")
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("render started the unsigned plugin that the edited plugins.lock names")
	}
	l.refused(1, "plugins.hello.verify", []string{"plugins.lock pins plugin hello to " + unsigned, "with the key " + pub, "kube-aws plugins install"},
		"plugins", "verify")
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("plugins verify started the unsigned plugin")
	}

	// The lock as it was committed runs again, from the cache.
	if err := os.WriteFile(lockPath, good, 0o644); err != nil {
		t.Fatal(err)
	}
	l.reg.Stop()
	if _, stderr := l.ok("render"); strings.Contains(stderr, "plugins: ") {
		t.Errorf("render with the genuine lock went to the registry:\n%s", stderr)
	}
	if stdout, _ := l.ok("plugins", "verify"); !strings.Contains(stdout, "every plugin matches") {
		t.Errorf("plugins verify with the genuine lock:\n%s", stdout)
	}
}

// The cosign command plugins push prints signs privately: run as printed
// (on a machine that cannot reach Sigstore's services, as this test's),
// it makes a signature kube-aws verifies, and nothing goes to the public
// transparency log.
func TestPushPrintsAPrivateSignCommandCLI(t *testing.T) {
	l := newRegLayout(t)
	cosign := registrytest.NewCosign(t)
	cosign.GenerateKeyPair(t, l.cluster)
	stdout, stderr, code := l.run("plugins", "push", l.pluginFolder("hello", "", nil), l.reg.Ref("plugins/hello:0.0.1"))
	if code != 0 {
		t.Fatalf("push: exit %d\n%s\n%s", code, stdout, stderr)
	}
	line := lineWith(stdout, "sign it: ")
	args := strings.Fields(strings.TrimPrefix(line, "sign it: "))
	if len(args) < 2 || args[0] != "cosign" || !strings.Contains(line, " --tlog-upload=false --use-signing-config=false ") {
		t.Fatalf("push prints no private cosign command:\n%s", stdout)
	}
	if !strings.Contains(stdout, "not in Sigstore's public transparency log") {
		t.Errorf("push does not say the signature stays private:\n%s", stdout)
	}
	cosign.Run(t, l.cluster, args[1:]...)
	l.plugin("hello", "source: "+l.reg.Ref("plugins/hello:0.0.1"), "verify: {key: cosign.pub}")
	if stdout, _ := l.ok("plugins", "install"); !strings.Contains(stdout, "signature verified") {
		t.Errorf("plugins install after signing as printed:\n%s", stdout)
	}
}
