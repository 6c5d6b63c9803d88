package protocol

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	plugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/kube-aws/kube-aws/core/stage"
	pb "github.com/kube-aws/kube-aws/plugins/proto/v1"
)

// The requests of one Input to the plugins of one process: the first
// carries the set and its id, the others name it by the id alone; another
// process gets a carrier of its own, one that does not take ids gets the
// whole set and no id, and the next Input has another id.
func TestRequestsOfAProcessCarryTheSetOnce(t *testing.T) {
	in := fullInput()
	type sent struct {
		carries bool
		id      string
	}
	send := func(conn any) sent {
		t.Helper()
		req, err := requestFor(in, 7, conn)
		if err != nil {
			t.Fatal(err)
		}
		got := wire(t, req)
		if !proto.Equal(got.GetValues()["iam"], InputToPB(in, 7).GetValues()["iam"]) {
			t.Errorf("the values did not travel: %v", got.GetValues())
		}
		return sent{carries: got.Constructs != nil, id: string(got.GetConstructsId())}
	}
	first, second, third := send("builtins"), send("builtins"), send("builtins")
	other := send("contrib")
	whole := send(nil)
	if !first.carries || first.id == "" || len(first.id) != 16 {
		t.Fatalf("the first request to a process: %+v; want the set and a 16-byte id", first)
	}
	for i, r := range []sent{second, third} {
		if r.carries || r.id != first.id {
			t.Errorf("request %d to the same process: %+v; want no set, the id %x", i+2, r, first.id)
		}
	}
	if !other.carries || other.id != first.id {
		t.Errorf("the first request to another process: %+v; want the set and the id", other)
	}
	if !whole.carries || whole.id != "" {
		t.Errorf("a request to a process that takes no id: %+v; want the set and no id", whole)
	}
	in = fullInput()
	if next := send("builtins"); !next.carries || next.id == first.id {
		t.Errorf("the first request of the next Input: %+v; want the set and a new id", next)
	}
	noSet := fullInput()
	noSet.Constructs = nil
	in = noSet
	if r := send("builtins"); r.carries || r.id != "" {
		t.Errorf("an Input without a set: %+v; want neither set nor id", r)
	}
}

// setEcho answers a stage with what it received of the set, so a test
// sees that every plugin got all of it.
type setEcho struct {
	named
	mu   sync.Mutex
	seen []string
}

func (e *setEcho) RunStage(_ context.Context, in *stage.Input, _ Host, _ func(stage.Event) error) (*stage.Result, error) {
	b, err := json.Marshal(in.Constructs)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.seen = append(e.seen, string(b))
	e.mu.Unlock()
	return &stage.Result{}, nil
}

// Through gRPC, as kube-aws calls the built-ins: three plugins of one
// process called at once with one Input each receive the whole set, though
// one request carried it, and again for the next Input.
func TestASetIsSentOncePerProcess(t *testing.T) {
	names := []string{"alpha", "beta", "gamma"}
	impls := map[string]Plugin{}
	echoes := map[string]*setEcho{}
	for _, n := range names {
		echoes[n] = &setEcho{named: named(n)}
		impls[n] = echoes[n]
	}
	client, server := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{PluginKey: &GRPCPlugin{Impls: impls}})
	defer client.Close()
	defer server.Stop()
	ctx := context.Background()
	var clients []*pluginClient
	for _, n := range names {
		raw, err := client.Dispense(PluginKey)
		if err != nil {
			t.Fatal(err)
		}
		c := raw.(*pluginClient)
		c.name = n
		if _, err := c.GetInfo(ctx, 1, "test"); err != nil {
			t.Fatal(err)
		}
		if c.setConn() == nil {
			t.Fatalf("plugin %s: the process did not say it takes constructs_id", n)
		}
		clients = append(clients, c)
	}
	for round := range 3 {
		in := fullInput()
		in.Stage = stage.Render
		in.Constructs.Stacks[0].Name = fmt.Sprintf("round-%d", round)
		want, _ := json.Marshal(in.Constructs)
		before := heldSets()
		var wg sync.WaitGroup
		errs := make([]error, len(clients))
		for i, c := range clients {
			wg.Go(func() { _, errs[i] = c.RunStage(ctx, in, nil, nil) })
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d, plugin %s: %v", round, names[i], err)
			}
		}
		for _, n := range names {
			e := echoes[n]
			if got := e.seen[len(e.seen)-1]; got != string(want) {
				t.Errorf("round %d: plugin %s received\n%s\nwant\n%s", round, n, got, want)
			}
		}
		if after := heldSets(); after != min(before+1, setsByID.keep) {
			t.Errorf("round %d: the process holds %d sets by id, %d before; want one more", round, after, before)
		}
	}
}

// heldSets is how many sets the process keeps by id.
func heldSets() int {
	setsByID.mu.Lock()
	defer setsByID.mu.Unlock()
	return len(setsByID.sets)
}

// A request naming a set that no request carries waits for it as long as
// its call lasts, then says what is missing; a set carried after the
// request that names it was read still reaches it.
func TestARequestNamingASetWaitsForIt(t *testing.T) {
	old := setWait
	setWait = 200 * time.Millisecond
	defer func() { setWait = old }()

	req := &pb.StageRequest{ConstructsId: []byte("never-carried-id")}
	err := resolveSet(context.Background(), req)
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "no request to this process carried") {
		t.Errorf("never carried: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := resolveSet(ctx, &pb.StageRequest{ConstructsId: []byte("cancelled-id")}); status.Code(err) != codes.Canceled {
		t.Errorf("a cancelled call: %v; want Canceled", err)
	}

	set := SetToPB(fullSet())
	named := &pb.StageRequest{ConstructsId: []byte("late-id")}
	done := make(chan error, 1)
	go func() { done <- resolveSet(context.Background(), named) }()
	time.Sleep(20 * time.Millisecond)
	if err := resolveSet(context.Background(), &pb.StageRequest{ConstructsId: []byte("late-id"), Constructs: set}); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || named.Constructs != set {
		t.Errorf("the naming request: %v, set %p; want the carried set %p", err, named.Constructs, set)
	}
}
