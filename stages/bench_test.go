package stages

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
)

// BenchmarkTwentyTrivialPluginsFullRun is what a whole kube-aws run costs
// in the pipeline with twenty trivial user plugins and the real host:
// cluster.yaml loaded and validated, plugins discovered, launched and
// registered, all four stages (state persisted after each, render output
// written), every plugin killed. Compare with plugins/host's
// BenchmarkTwentyTrivialPlugins (the same without the pipeline).
func BenchmarkTwentyTrivialPluginsFullRun(b *testing.B) {
	dir := benchClusterDir(b)
	empty := b.TempDir()
	b.Setenv("KUBE_AWS_BUILTIN_DIR", empty)
	b.Setenv("KUBE_AWS_CONTRIB_DIR", empty)
	opts := Options{ConfigPath: filepath.Join(dir, "cluster.yaml"), OutDir: filepath.Join(dir, "rendered"), PluginStderr: io.Discard}
	run := func() {
		p, err := NewPlan(opts)
		if err != nil {
			b.Fatal(err, diagsOf(err))
		}
		s, err := p.Launch(context.Background())
		if err != nil {
			b.Fatal(err, diagsOf(err))
		}
		defer s.Close()
		if len(s.Plugins) != 20 {
			b.Fatalf("%d plugins", len(s.Plugins))
		}
		if out, err := s.Run(context.Background(), stage.All...); err != nil {
			b.Fatal(err, out.Diagnostics)
		}
	}
	run() // warm the page cache and the plugin hash cache
	if cb, err := os.ReadFile(hashCachePath(dir)); err != nil || !strings.Contains(string(cb), "trivial19") {
		b.Fatalf("plugin hash cache not written: %v\n%s", err, cb)
	}
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		run()
	}
	b.StopTimer()
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	cpu := func(r syscall.Rusage) float64 {
		return float64(r.Utime.Sec+r.Stime.Sec)*1e3 + float64(r.Utime.Usec+r.Stime.Usec)/1e3
	}
	b.ReportMetric((cpu(after)-cpu(before))/float64(b.N), "host-cpu-ms/op")
	b.ReportMetric(float64(after.Maxrss)/1024, "host-maxRSS-MiB")
}

var benchDir string

// benchClusterDir makes, once per test binary, a cluster folder with twenty
// trivial user plugins, so that only the first round of the benchmark pays
// for hashing the plugins (as only the first kube-aws run in a folder does).
func benchClusterDir(b *testing.B) string {
	if benchDir != "" {
		return benchDir
	}
	dir, err := os.MkdirTemp("", "kube-aws-stages-bench-")
	if err != nil {
		b.Fatal(err)
	}
	benchDir = dir
	yaml, err := config.InitTemplate(config.InitOptions{ClusterName: "bench", Region: "eu-west-1",
		AvailabilityZones: []string{"eu-west-1a"}, S3URI: "s3://bench-bucket/bench"})
	if err != nil {
		b.Fatal(err)
	}
	bin := plugintest.Build(b, "github.com/kube-aws/kube-aws/plugins/testdata/trivial")
	var entries strings.Builder
	for i := 0; i < 20; i++ {
		name := fmt.Sprintf("trivial%02d", i)
		copyExecutable(b, bin, filepath.Join(dir, "plugins", name, name))
		fmt.Fprintf(&entries, "  %s:\n    enabled: true\n", name)
	}
	y := strings.Replace(string(yaml), "\nplugins: {}\n", "\nplugins:\n"+entries.String(), 1)
	if err := os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(y), 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	plugintest.Cleanup()
	os.Exit(code)
}

func copyExecutable(b *testing.B, from, to string) {
	b.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		b.Fatal(err)
	}
}
