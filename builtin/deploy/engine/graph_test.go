package engine

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
)

func specs() []stage.StackSpec {
	return []stage.StackSpec{
		{Name: "network"},
		{Name: "iam"},
		{Name: "etcd", ParameterSources: map[string]names.Source{"SubnetId": names.From("network", "SubnetId")}},
		{Name: "control-plane", DependsOn: []string{"etcd"}, ParameterSources: map[string]names.Source{"Profile": names.From("iam", "ControllerProfile")}},
		{Name: "nodepool-a", DependsOn: []string{"control-plane"}},
		{Name: "nodepool-b", DependsOn: []string{"control-plane"}},
		{Name: "nodepool-c", DependsOn: []string{"control-plane"}},
		{Name: "plugin-dex", DependsOn: []string{"nodepool-a"}},
	}
}

func TestGraphOrderKeepsRenderOrder(t *testing.T) {
	g, err := newGraph(specs())
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"network", "iam", "etcd", "control-plane", "nodepool-a", "nodepool-b", "nodepool-c", "plugin-dex"}
	if !slices.Equal(g.order, want) {
		t.Fatalf("order %v, want %v", g.order, want)
	}
}

func TestGraphRejectsBadWiring(t *testing.T) {
	for name, tc := range map[string]struct {
		specs []stage.StackSpec
		want  string
	}{
		"cycle":         {[]stage.StackSpec{{Name: "a", DependsOn: []string{"b"}}, {Name: "b", ParameterSources: map[string]names.Source{"X": names.From("a", "X")}}}, "cycle"},
		"unknown stack": {[]stage.StackSpec{{Name: "a", ParameterSources: map[string]names.Source{"X": names.From("network", "X")}}}, "not rendered"},
		"bad source":    {[]stage.StackSpec{{Name: "network"}, {Name: "a", ParameterSources: map[string]names.Source{"X": names.ParseSource("network")}}}, "<stack>.<output>"},
		"self":          {[]stage.StackSpec{{Name: "a", DependsOn: []string{"a"}}}, "itself"},
		"duplicate":     {[]stage.StackSpec{{Name: "a"}, {Name: "a"}}, "twice"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := newGraph(tc.specs)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

// walk never runs more than the bound at once, never runs a stack before
// what it needs, and runs independent stacks side by side.
func TestWalkBoundAndOrder(t *testing.T) {
	var sp []stage.StackSpec
	sp = append(sp, stage.StackSpec{Name: "network"})
	for i := 0; i < 12; i++ {
		sp = append(sp, stage.StackSpec{Name: "nodepool-" + string(rune('a'+i)), DependsOn: []string{"network"}})
	}
	g, err := newGraph(sp)
	if err != nil {
		t.Fatal(err)
	}
	for _, reverse := range []bool{false, true} {
		var running, peak atomic.Int32
		var mu sync.Mutex
		var done []string
		err := g.walk(context.Background(), 4, reverse, func(ctx context.Context, s string) error {
			n := running.Add(1)
			defer running.Add(-1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			mu.Lock()
			if !reverse && s != "network" && !slices.Contains(done, "network") {
				t.Errorf("%s ran before network", s)
			}
			if reverse && s == "network" && len(done) != 12 {
				t.Errorf("network deleted before its %d dependents", 12-len(done))
			}
			mu.Unlock()
			time.Sleep(10 * time.Millisecond)
			mu.Lock()
			done = append(done, s)
			mu.Unlock()
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if peak.Load() != 4 {
			t.Fatalf("reverse=%v: peak parallelism %d, want exactly the bound 4", reverse, peak.Load())
		}
		if len(done) != 13 {
			t.Fatalf("ran %d stacks", len(done))
		}
	}
}

// After a failure no new stack starts; the ones running finish.
func TestWalkStopsAfterFailure(t *testing.T) {
	g, err := newGraph(specs())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var ran []string
	boom := errors.New("boom")
	err = g.walk(context.Background(), 2, false, func(ctx context.Context, s string) error {
		mu.Lock()
		ran = append(ran, s)
		mu.Unlock()
		if s == "etcd" {
			return boom
		}
		return nil
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v", err)
	}
	for _, s := range ran {
		if s == "control-plane" || strings.HasPrefix(s, "nodepool") {
			t.Fatalf("%s ran after etcd failed (ran %v)", s, ran)
		}
	}
}
