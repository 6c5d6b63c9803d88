package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/test/builtintest"
	"github.com/kube-aws/kube-aws/test/registrytest"
)

// contribPlugins are the six contrib plugins, the plugins of the
// benchmark below.
var contribPlugins = []string{"bastion", "cluster-autoscaler", "customise", "datadog-agent", "dex", "kube2iam"}

// BenchmarkRegistryPlugins compares, in one run, `kube-aws render` of the
// example with the six contrib plugins as user plugins in plugins/ (locked)
// and the same render with the six taken from a registry and run from the
// plugin cache, with the registry stopped and no kube-aws-oci helper: a warm
// render must make no network call and cost no more. It also times a cold
// `kube-aws plugins install` of the six from the registry on 127.0.0.1 (an
// empty cache each time). Renders alternate, so load on the machine falls
// on both alike. Run it with scripts/bench-registry.sh (docs/benchmarks.md).
func BenchmarkRegistryPlugins(b *testing.B) {
	cacheDir := registryEnv(b)
	reg := registrytest.Start(b, registrytest.Options{})
	root := b.TempDir()
	bin := filepath.Join(root, "bin")
	kubeAWS := filepath.Join(bin, "kube-aws")
	copyFile(b, plugintest.Build(b, "github.com/kube-aws/kube-aws/cmd/kube-aws"), kubeAWS)
	installHelper(b, kubeAWS)
	builtintest.Install(b, filepath.Join(bin, "kube-aws-plugins"), "apiserver", "cloudformation", "deploy", "helm", "iam", "userdata")
	// No shipped contrib plugins: both clusters bring their own copies.
	if err := os.MkdirAll(filepath.Join(bin, "kube-aws-plugins", "contrib"), 0o755); err != nil {
		b.Fatal(err)
	}
	example, err := os.ReadFile(filepath.Join("..", "..", "cluster.yaml.example"))
	if err != nil {
		b.Fatal(err)
	}
	anchor := "\n  deploy:\n    enabled: true\n"
	if !strings.Contains(string(example), anchor) {
		b.Fatal("cluster.yaml.example has no plugins.deploy.enabled: true")
	}
	env := append(os.Environ(), "DD_API_KEY=dd-api-key-bench", "DEX_KUBECTL_SECRET=dex-secret-bench", "KUBE_AWS_CACHE_DIR="+cacheDir)
	run := func(dir string, extraEnv []string, args ...string) time.Duration {
		cmd := exec.Command(kubeAWS, args...)
		cmd.Dir = dir
		cmd.Env = append(append([]string{}, env...), extraEnv...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("kube-aws %v in %s: %v\n%s", args, dir, err, out.String())
		}
		return time.Since(start)
	}

	// Cluster A: the six as user plugins, locked.
	dirA := filepath.Join(root, "plugins-dir")
	if err := os.MkdirAll(dirA, 0o755); err != nil {
		b.Fatal(err)
	}
	example = []byte(strings.Replace(string(example), exampleAnonymousAuth, dexAnonymousAuth, 1))
	writeFile(b, filepath.Join(dirA, "cluster.yaml"), strings.Replace(string(example), anchor, anchor+contribValues, 1))
	for _, p := range contribPlugins {
		copyFile(b, plugintest.Build(b, "github.com/kube-aws/kube-aws/contrib/plugins/"+p), filepath.Join(dirA, "plugins", p, p))
	}
	run(dirA, nil, "plugins", "lock")

	// Cluster B: the same six pushed to the registry and named by source.
	dirB := filepath.Join(root, "registry")
	if err := os.MkdirAll(dirB, 0o755); err != nil {
		b.Fatal(err)
	}
	sources := contribValues
	for _, p := range contribPlugins {
		run(root, nil, "plugins", "push", filepath.Join(dirA, "plugins", p), reg.Ref("contrib/"+p+":bench"))
		from := "  " + p + ":\n    enabled: true\n"
		if !strings.Contains(sources, from) {
			b.Fatalf("contribValues has no %q", from)
		}
		sources = strings.Replace(sources, from, from+"    source: "+reg.Ref("contrib/"+p+":bench")+"\n", 1)
	}
	writeFile(b, filepath.Join(dirB, "cluster.yaml"), strings.Replace(string(example), anchor, anchor+sources, 1))

	// Cold installs: an empty cache each time.
	var cold []time.Duration
	for i := 0; i < 3; i++ {
		c := filepath.Join(root, fmt.Sprintf("cold-cache-%d", i))
		os.Remove(filepath.Join(dirB, "plugins.lock"))
		cold = append(cold, run(dirB, []string{"KUBE_AWS_CACHE_DIR=" + c}, "plugins", "install"))
	}
	run(dirB, nil, "plugins", "install")

	// Warm renders: no registry, no helper.
	reg.Stop()
	offline := []string{"KUBE_AWS_OCI=" + filepath.Join(root, "no-helper")}
	run(dirA, nil, "render")
	run(dirB, offline, "render")
	var a, c []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// Which goes first alternates too, so neither always runs on the
		// heels of the other.
		if i%2 == 0 {
			a = append(a, run(dirA, nil, "render"))
			c = append(c, run(dirB, offline, "render"))
		} else {
			c = append(c, run(dirB, offline, "render"))
			a = append(a, run(dirA, nil, "render"))
		}
	}
	b.StopTimer()
	ma, mc := median(a), median(c)
	b.ReportMetric(float64(ma.Microseconds())/1000, "ms/render-plugins-dir")
	b.ReportMetric(float64(mc.Microseconds())/1000, "ms/render-cache")
	b.ReportMetric(float64(mc)/float64(ma), "cache/plugins-dir")
	b.ReportMetric(float64(median(cold).Microseconds())/1000, "ms/cold-install-6")
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
