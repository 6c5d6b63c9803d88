package host_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/kube-aws/kube-aws/plugins/host"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
	"github.com/kube-aws/kube-aws/plugins/source"
)

// A plugin changed after `plugins lock` is refused before it starts: the
// changed binary here would leave a marker file if it ran at all.
func TestChangedBinaryRefusedBeforeStart(t *testing.T) {
	cluster := t.TempDir()
	cand := userPlugin(t, cluster, plugintest.Build(t, "../testdata/trivial"), "trivial")
	lock, err := source.LockCandidates([]source.Candidate{cand})
	if err != nil {
		t.Fatal(err)
	}
	// The locked binary starts.
	p, err := launchOne(t, cand, host.Options{Lock: lock})
	if err != nil {
		t.Fatalf("locked plugin refused: %v", err)
	}
	p.Kill()

	marker := filepath.Join(cluster, "ran")
	if err := os.WriteFile(cand.Path, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	have, _ := fileutil.SHA256(cand.Path)
	_, err = launchOne(t, cand, host.Options{Lock: lock})
	mustContain(t, err, "plugin trivial ("+cand.Path+") does not match plugins.lock (want sha256 "+lock.Plugins[0].SHA256+", have "+have+")",
		"if you changed it on purpose run `kube-aws plugins lock`")
	if _, err := os.Stat(marker); err == nil {
		t.Error("the changed binary ran")
	}
}

// With a lock, a non-built-in plugin missing from it is refused; built-ins
// are not checked.
func TestUnlockedPluginRefused(t *testing.T) {
	cluster := t.TempDir()
	bin := plugintest.Build(t, "../testdata/trivial")
	cand := userPlugin(t, cluster, bin, "trivial")
	marker := filepath.Join(cluster, "ran")
	if err := os.WriteFile(cand.Path, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	lock := &source.Lockfile{Version: 1}
	_, err := host.Launch(context.Background(), []source.Candidate{cand}, host.Options{Lock: lock})
	mustContain(t, err, "plugin trivial ("+cand.Path+") is not in plugins.lock", "run `kube-aws plugins lock`")
	if _, err := os.Stat(marker); err == nil {
		t.Error("the unlocked plugin ran")
	}

	builtin := cand
	builtin.Path, builtin.Source = bin, source.Builtin
	if _, err := launchOne(t, builtin, host.Options{Lock: lock}); err != nil {
		t.Errorf("built-in refused by the lock: %v", err)
	}
}
