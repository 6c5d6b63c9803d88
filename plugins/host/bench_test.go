package host_test

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/host"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
	pb "github.com/kube-aws/kube-aws/plugins/proto/v1"
	"github.com/kube-aws/kube-aws/plugins/source"
)

// The three benchmarks live in one file so that one `go test -bench` run
// compares the platform with go-plugin's own floor on the same machine:
//
//	go test -run '^$' -bench . -benchtime 200x ./plugins/host
//
// BenchmarkBareGoPlugin is the floor: launch + handshake + one RPC + kill of
// a plugin written against go-plugin directly (testdata/bare).
// BenchmarkTrivialPluginAllStages is one SDK plugin through kube-aws's host:
// launch, GetInfo, Register, the four stages, kill.
// BenchmarkTwentyTrivialPlugins is twenty of those at once, stage by stage,
// as a real run does.

type bareGRPCPlugin struct{ plugin.NetRPCUnsupportedPlugin }

func (bareGRPCPlugin) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error { return nil }
func (bareGRPCPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (interface{}, error) {
	return pb.NewPluginClient(c), nil
}

// cpu reports the CPU time of this process and of its reaped children.
func cpu() (self, children time.Duration) {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	self = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	children = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return
}

func maxRSSMiB() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Maxrss) / 1024 // KiB on Linux
}

// measure wraps a benchmark loop with CPU metrics per operation.
func measure(b *testing.B, perOp int, body func()) {
	b.Helper()
	s0, c0 := cpu()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		body()
	}
	b.StopTimer()
	s1, c1 := cpu()
	n := float64(b.N)
	b.ReportMetric(float64((s1-s0).Microseconds())/1000/n, "host-cpu-ms/op")
	b.ReportMetric(float64((c1-c0).Microseconds())/1000/n/float64(perOp), "plugin-cpu-ms/plugin")
}

func BenchmarkBareGoPlugin(b *testing.B) {
	bin := plugintest.Build(b, "../testdata/bare")
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Off, Output: io.Discard})
	measure(b, 1, func() {
		c := plugin.NewClient(&plugin.ClientConfig{
			HandshakeConfig: plugin.HandshakeConfig{
				ProtocolVersion:  1,
				MagicCookieKey:   "KUBE_AWS_PLUGIN",
				MagicCookieValue: "b3c1f5de-kube-aws-plugin",
			},
			Plugins:          plugin.PluginSet{"kube-aws": bareGRPCPlugin{}},
			Cmd:              exec.Command(bin),
			AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
			Logger:           logger,
		})
		rpc, err := c.Client()
		if err != nil {
			b.Fatal(err)
		}
		raw, err := rpc.Dispense("kube-aws")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := raw.(pb.PluginClient).GetInfo(context.Background(), &pb.GetInfoRequest{}); err != nil {
			b.Fatal(err)
		}
		c.Kill()
	})
}

func runAllStages(b *testing.B, ps []*host.Plugin) {
	ctx := context.Background()
	for _, p := range ps {
		if err := p.Register(ctx, stage.Registration{Accepted: true}); err != nil {
			b.Fatal(err)
		}
	}
	for _, s := range stage.All {
		var wg sync.WaitGroup
		for _, p := range ps {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, err := p.Run(ctx, input(s), nil); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
	}
}

func BenchmarkTrivialPluginAllStages(b *testing.B) {
	bin := plugintest.Build(b, "../testdata/trivial")
	cands := []source.Candidate{candidate(bin)}
	opts := host.Options{Stderr: io.Discard}
	measure(b, 1, func() {
		ps, err := host.Launch(context.Background(), cands, opts)
		if err != nil {
			b.Fatal(err)
		}
		runAllStages(b, ps)
		host.KillAll(ps)
	})
}

func BenchmarkTwentyTrivialPlugins(b *testing.B) {
	bin := plugintest.Build(b, "../testdata/trivial")
	var cands []source.Candidate
	for i := 1; i <= 20; i++ {
		c := candidate(bin)
		c.Name = fmt.Sprintf("trivial-%02d", i)
		cands = append(cands, c)
	}
	opts := host.Options{Stderr: io.Discard}
	measure(b, len(cands), func() {
		ps, err := host.Launch(context.Background(), cands, opts)
		if err != nil {
			b.Fatal(err)
		}
		runAllStages(b, ps)
		host.KillAll(ps)
	})
	b.ReportMetric(maxRSSMiB(), "host-maxRSS-MiB")
}
