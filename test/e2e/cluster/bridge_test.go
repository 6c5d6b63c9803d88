//go:build e2ecluster

package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kube-aws/kube-aws/test/machines"
	"github.com/kube-aws/kube-aws/test/machines/netns"
)

// TestBridgeRoutesWhileMachinesComeAndGo: on the run's bridge, a machine
// joining with a lower hardware address than every port and then leaving
// does not cut the routed traffic of the others. Two stand-in machines
// (network namespaces with a veth each, in two subnets, as nspawn gives a
// machine) talk through their gateways; a third joins and leaves between
// their connections. Each connection must be made within its first try
// (1.5 s); with the bridge's address left to the kernel, the one after the
// leave failed until the first machine's ARP entry for its gateway was
// resolved again.
func TestBridgeRoutesWhileMachinesComeAndGo(t *testing.T) {
	host, mk, join := standInNetwork(t)
	runIn(t, host, "ip", "addr", "add", "10.77.1.1/24", "dev", machines.Bridge)
	runIn(t, host, "ip", "addr", "add", "10.77.2.1/24", "dev", machines.Bridge)
	a, b := mk("a"), mk("b")
	join(a, "vb-a", "02:00:00:00:00:50", "10.77.1.10/24", "10.77.1.1")
	join(b, "vb-b", "02:00:00:00:00:60", "10.77.2.10/24", "10.77.2.1")
	l, err := b.Listen("tcp", "10.77.2.10:7000")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	connect := func(when string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		start := time.Now()
		c, err := a.DialContext(ctx, "tcp", "10.77.2.10:7000")
		if err != nil {
			t.Fatalf("%s: machine a (10.77.1.10) could not reach machine b (10.77.2.10) through its gateway: %v (bridge %s)", when, err, bridgeMAC(t, host))
		}
		c.Close()
		t.Logf("%s: a reached b through the gateway in %v (bridge %s)", when, time.Since(start).Round(time.Microsecond), bridgeMAC(t, host))
	}
	connect("before")
	c := mk("c")
	join(c, "vb-c", "02:00:00:00:00:01", "10.77.1.11/24", "10.77.1.1")
	connect("a machine with the lowest address joined")
	runIn(t, host, "ip", "link", "del", "vb-c")
	connect("it left")
	if got := bridgeMAC(t, host); got != machines.BridgeMAC {
		t.Errorf("the bridge's address is %s after machines came and went, want %s", got, machines.BridgeMAC)
	}
}

func bridgeMAC(t *testing.T, host *netns.NS) string {
	var mac string
	err := host.Do(func() error {
		i, err := net.InterfaceByName(machines.Bridge)
		if err != nil {
			return err
		}
		mac = i.HardwareAddr.String()
		return nil
	})
	if err != nil {
		t.Fatal(fmt.Errorf("the bridge's address: %w", err))
	}
	return mac
}

// TestUnroutedPacketsAreDroppedAsTheVPCDrops: a machine's packet for an
// address the run's network has no route to (a pod network, sent to the
// gateway while the node's own route is missing) is answered "network is
// unreachable" by the forwarding namespace, which fails a client's connect
// at once; after DropUnrouted it is dropped without an answer, as EC2's VPC
// router drops it, so a client's SYN is sent again instead.
func TestUnroutedPacketsAreDroppedAsTheVPCDrops(t *testing.T) {
	host, mk, join := standInNetwork(t)
	runIn(t, host, "ip", "addr", "add", "10.77.1.1/24", "dev", machines.Bridge)
	a := mk("a")
	join(a, "vb-a", "02:00:00:00:00:50", "10.77.1.10/24", "10.77.1.1")
	dial := func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		c, err := a.DialContext(ctx, "tcp", "10.88.3.2:8080")
		if err == nil {
			c.Close()
		}
		return err
	}
	if err := dial(); err == nil || !strings.Contains(err.Error(), "network is unreachable") {
		t.Fatalf("before: dialling an unrouted pod address: %v, want network is unreachable", err)
	}
	if err := machines.DropUnrouted(host, netip.MustParsePrefix("10.88.0.0/16")); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err := dial()
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("after DropUnrouted: dialling an unrouted pod address: %v, want no answer until the deadline", err)
	}
	t.Logf("after DropUnrouted: no answer in %v, as on a VPC", time.Since(start).Round(time.Millisecond))
}

// standInNetwork makes the run's network in a namespace of its own (the
// bridge, forwarding, as machines.MakeBridge makes it) and returns it with
// mk, which makes a stand-in machine's namespace, and join, which gives one
// a veth on the bridge whose bridge end has the hardware address mac, its
// address and a default route through gw, as nspawn and the image give a
// machine.
func standInNetwork(t *testing.T) (host *netns.NS, mk func(name string) *netns.NS, join func(ns *netns.NS, port, mac, addr, gw string)) {
	t.Helper()
	dir := t.TempDir()
	mk = func(name string) *netns.NS {
		t.Helper()
		ns, err := netns.New(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ns.Close() })
		return ns
	}
	host = mk("bridge")
	if err := machines.MakeBridge(host); err != nil {
		t.Fatal(err)
	}
	join = func(ns *netns.NS, port, mac, addr, gw string) {
		t.Helper()
		runIn(t, host, "ip", "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns.Path)
		runIn(t, host, "ip", "link", "set", port, "address", mac, "master", machines.Bridge, "up")
		runIn(t, ns, "ip", "link", "set", "eth0", "up")
		runIn(t, ns, "ip", "addr", "add", addr, "dev", "eth0")
		runIn(t, ns, "ip", "route", "add", "default", "via", gw)
	}
	return host, mk, join
}

// runIn runs a command in ns, failing the test if it fails.
func runIn(t *testing.T, ns *netns.NS, args ...string) {
	t.Helper()
	if err := ns.Run(args[0], args[1:]...); err != nil {
		t.Fatal(err)
	}
}
