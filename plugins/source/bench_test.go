package source_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/plugins/oci/cache"
	"github.com/kube-aws/kube-aws/plugins/oci/helper"
	"github.com/kube-aws/kube-aws/plugins/source"
)

// BenchmarkWarm is what every command pays for six registry plugins that
// are pinned and cached: reading plugins.lock and checking six stamps.
func BenchmarkWarm(b *testing.B) {
	c := cache.Cache{Root: b.TempDir()}
	lock := &source.Lockfile{Version: 2}
	var ps []source.RegistryPlugin
	for i := 0; i < 6; i++ {
		name := fmt.Sprintf("p%d", i)
		manifest := "sha256:" + strings.Repeat(fmt.Sprint(i), 64)
		staged, err := c.Stage()
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(staged, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			b.Fatal(err)
		}
		if _, err := c.Commit(staged, manifest); err != nil {
			b.Fatal(err)
		}
		ref := "oci://r.example/p/" + name + ":1"
		lock.Set(source.LockEntry{Name: name, Source: source.OCI, Ref: ref, Digest: "sha256:" + strings.Repeat("d", 64), Version: "1",
			Platforms: map[string]source.PlatformLock{source.HostPlatform(): {Manifest: manifest, SHA256: strings.Repeat("a", 64)}}})
		ps = append(ps, source.RegistryPlugin{Name: name, Source: ref})
	}
	path := filepath.Join(b.TempDir(), source.LockfileName)
	if err := lock.Write(path); err != nil {
		b.Fatal(err)
	}
	noHelper := func(context.Context, helper.Request, func(string)) (*helper.Result, error) {
		b.Fatal("the helper ran")
		return nil, nil
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		l, err := source.ReadLockfile(path)
		if err != nil {
			b.Fatal(err)
		}
		out, err := source.Ensure(context.Background(), ps, source.EnsureOptions{Lock: l, Cache: c, Helper: noHelper})
		if err != nil || len(out.Candidates) != 6 {
			b.Fatalf("%v %+v", err, out)
		}
	}
}
