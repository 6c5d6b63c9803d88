package engine

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kube-aws/kube-aws/test/awstest"
	"github.com/kube-aws/kube-aws/test/faultproxy"
)

// Benchmarks run the engine with its default polling and parallelism, as
// `kube-aws up` would, against moto. Figures are in docs/benchmarks.md.
// moto slows down as stacks, groups and instances pile up in it (and its
// reset makes it load its backends again), so run each benchmark in its own
// process, i.e. with its own moto:
//
//	go test -c -o /tmp/engine.bench ./builtin/deploy/engine && cd builtin/deploy/engine &&
//	for b in DeployFromNothing NoopDeploy NodePools NodePoolsStackLatency; do
//		KUBE_AWS_VENV=/path/to/repo/.venv /tmp/engine.bench -test.run '^$' -test.bench "^Benchmark$b\$" -test.benchtime 5x
//	done

// cpu reports, per operation, the CPU time of this process (kube-aws's
// side) and of moto (the emulator's side) spent between calls of the
// returned function: on a small machine moto's CPU bounds the wall time.
func cpu(b *testing.B) func() {
	self := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	s0 := self()
	m0, err := awstest.CPUTime(motoURL)
	if err != nil {
		b.Fatal(err)
	}
	return func() {
		m1, _ := awstest.CPUTime(motoURL)
		b.ReportMetric(float64((self()-s0).Milliseconds())/float64(b.N), "cpu-ms/op")
		b.ReportMetric(float64((m1-m0).Milliseconds())/float64(b.N), "moto-cpu-ms/op")
	}
}

var warmed sync.Once

// warm deploys and destroys a throwaway cluster once per process: moto's
// EC2, IAM and Auto Scaling backends are slow on first use, which is moto
// starting, not kube-aws deploying.
func warm(b *testing.B) {
	warmed.Do(func() {
		f := newFixture(b, map[string]int{"warm": 1})
		e := benchEngine(f, false)
		t := f.render()
		f.mustDeploy(e, t)
		if _, err := e.Destroy(context.Background(), t); err != nil {
			b.Fatal(err)
		}
	})
}

// benchEngine talks to moto directly, or through the fixture's proxy when
// the benchmark injects latency.
func benchEngine(f *fixture, viaProxy bool) *Engine {
	return f.engine(func(o *Options) {
		if !viaProxy {
			o.EndpointURL = motoURL
		}
		o.PollInterval = DefaultPollInterval
		o.MaxAttempts = DefaultMaxAttempts
		o.MaxBackoff = DefaultMaxBackoff
		o.Reporter = nil
	})
}

// Up from nothing: network, iam, control plane and one node pool.
func BenchmarkDeployFromNothing(b *testing.B) {
	warm(b)
	defer cpu(b)()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		f := newFixture(b, map[string]int{"a": 1})
		e := benchEngine(f, false)
		t := f.render()
		b.StartTimer()
		f.mustDeploy(e, t)
	}
}

// A no-op up of the same cluster: no upload, no stack update.
func BenchmarkNoopDeploy(b *testing.B) {
	warm(b)
	f := newFixture(b, map[string]int{"a": 1})
	e := benchEngine(f, false)
	t := f.render()
	f.mustDeploy(e, t)
	b.ResetTimer()
	defer cpu(b)()
	changes := 0
	for i := 0; i < b.N; i++ {
		res := f.mustDeploy(e, t)
		changes += res.Uploaded + len(res.Updated) + len(res.Created)
	}
	if changes != 0 {
		b.Fatalf("no-op deploys uploaded or changed %d things", changes)
	}
	b.ReportMetric(0, "uploads/op")
}

// Up from nothing of a cluster with 1 or 20 node pools, straight to moto.
func BenchmarkNodePools(b *testing.B) {
	benchPools(b, 0)
}

// The same with every stack taking 1 s to create (a delay injected in front
// of moto), as every stack takes its time on AWS (minutes, there): the wall
// time is then set by the graph and the parallelism bound, not by moto's CPU.
func BenchmarkNodePoolsStackLatency(b *testing.B) {
	benchPools(b, time.Second)
}

func benchPools(b *testing.B, latency time.Duration) {
	for _, n := range []int{1, 20} {
		b.Run(fmt.Sprintf("pools=%d", n), func(b *testing.B) {
			warm(b)
			defer cpu(b)()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				pools := map[string]int{}
				for p := 0; p < n; p++ {
					pools[fmt.Sprintf("p%02d", p)] = 1
				}
				f := newFixture(b, pools)
				if latency > 0 {
					f.proxy.Add(faultproxy.Rule{Action: "CreateStack", Times: -1, Fault: faultproxy.Delay, Delay: latency})
				}
				e := benchEngine(f, latency > 0)
				t := f.render()
				b.StartTimer()
				res := f.mustDeploy(e, t)
				if len(res.Created) != n+3 {
					b.Fatalf("created %v", res.Created)
				}
			}
		})
	}
}
