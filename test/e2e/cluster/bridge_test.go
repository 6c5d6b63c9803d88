//go:build e2ecluster

package cluster

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
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
	dir := t.TempDir()
	mk := func(name string) *netns.NS {
		ns, err := netns.New(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ns.Close() })
		return ns
	}
	run := func(ns *netns.NS, args ...string) {
		t.Helper()
		if err := ns.Run(args[0], args[1:]...); err != nil {
			t.Fatal(err)
		}
	}
	host := mk("bridge")
	if err := machines.MakeBridge(host); err != nil {
		t.Fatal(err)
	}
	run(host, "ip", "addr", "add", "10.77.1.1/24", "dev", machines.Bridge)
	run(host, "ip", "addr", "add", "10.77.2.1/24", "dev", machines.Bridge)

	// join gives a stand-in machine a veth on the bridge whose bridge end
	// has the hardware address mac.
	join := func(ns *netns.NS, port, mac, addr, gw string) {
		t.Helper()
		run(host, "ip", "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns.Path)
		run(host, "ip", "link", "set", port, "address", mac, "master", machines.Bridge, "up")
		if ns != host {
			run(ns, "ip", "link", "set", "eth0", "up")
			run(ns, "ip", "addr", "add", addr, "dev", "eth0")
			run(ns, "ip", "route", "add", "default", "via", gw)
		}
	}
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
	run(host, "ip", "link", "del", "vb-c")
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
