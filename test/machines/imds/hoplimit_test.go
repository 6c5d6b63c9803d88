package imds

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kube-aws/kube-aws/test/machines/netns"
)

// anyInstance answers every address with one instance of the given hop
// limit: the node and its pod ask as the same instance.
type anyInstance struct{ hops int }

func (b anyInstance) InstanceByIP(ip netip.Addr) (Instance, bool) {
	in := inst
	in.PrivateIP, in.HopLimit = ip, b.hops
	return in, true
}
func (b anyInstance) Credentials(context.Context, Instance) (Credentials, error) {
	return Credentials{AccessKeyID: "ASIA1", SecretAccessKey: "s", Token: "t", Expiration: time.Now().Add(time.Hour)}, nil
}

// topology makes three network namespaces: the service's, a node's on the
// service's link, and a pod's behind the node, which routes for it (as a
// node routes between its bridge and its own link).
func topology(t *testing.T) (svc, node, pod *netns.NS) {
	t.Helper()
	dir := t.TempDir()
	mk := func(name string) *netns.NS {
		ns, err := netns.New(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ns.Close() })
		return ns
	}
	svc, node, pod = mk("svc"), mk("node"), mk("pod")
	run := func(ns *netns.NS, args ...string) {
		t.Helper()
		if err := ns.Run(args[0], args[1:]...); err != nil {
			t.Fatal(err)
		}
	}
	run(svc, "ip", "link", "add", "s0", "type", "veth", "peer", "name", "n0", "netns", node.Path)
	run(node, "ip", "link", "add", "n1", "type", "veth", "peer", "name", "p0", "netns", pod.Path)
	run(svc, "ip", "addr", "add", "10.9.0.1/24", "dev", "s0")
	run(svc, "ip", "link", "set", "s0", "up")
	run(svc, "ip", "route", "add", "10.9.1.0/24", "via", "10.9.0.2")
	run(node, "ip", "addr", "add", "10.9.0.2/24", "dev", "n0")
	run(node, "ip", "addr", "add", "10.9.1.1/24", "dev", "n1")
	run(node, "ip", "link", "set", "n0", "up")
	run(node, "ip", "link", "set", "n1", "up")
	run(node, "sysctl", "-qw", "net.ipv4.ip_forward=1")
	run(pod, "ip", "addr", "add", "10.9.1.2/24", "dev", "p0")
	run(pod, "ip", "link", "set", "p0", "up")
	run(pod, "ip", "route", "add", "default", "via", "10.9.1.1")
	return svc, node, pod
}

// putToken asks for a token from inside ns, giving up after wait.
func putToken(ns *netns.NS, url string, wait time.Duration) (string, error) {
	c := &http.Client{Timeout: wait, Transport: &http.Transport{DialContext: ns.DialContext}}
	req, _ := http.NewRequest(http.MethodPut, url+"/latest/api/token", nil)
	req.Header.Set(hdrTTL, "60")
	resp, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, b)
	}
	return string(b), nil
}

// TestTokenReplyTravelsTheHopLimit: the token's reply leaves with the
// instance's hop limit as its IP TTL, so with 1 the node gets a token and
// a pod a routed hop behind it gets nothing at all (its request times out,
// as on EC2), and with 2 both get one. Requests after the token still work
// for the node.
func TestTokenReplyTravelsTheHopLimit(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("this test makes network namespaces, which need root, as the machines it serves do: run it as root (make test does, as CI does)")
	}
	svc, node, pod := topology(t)
	tests := []struct {
		hops      int
		podGetsIt bool
	}{
		{hops: 0, podGetsIt: false}, // EC2's default, 1
		{hops: 1, podGetsIt: false},
		{hops: 2, podGetsIt: true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("hop limit %d", tt.hops), func(t *testing.T) {
			l, err := svc.Listen("tcp", "10.9.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go New(anyInstance{hops: tt.hops}).Serve(ctx, l)
			url := "http://" + l.Addr().String()

			tok, err := putToken(node, url, 5*time.Second)
			if err != nil {
				t.Fatalf("node: %v", err)
			}
			c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: node.DialContext}}
			req, _ := http.NewRequest(http.MethodGet, url+"/latest/meta-data/instance-id", nil)
			req.Header.Set(hdrToken, tok)
			resp, err := c.Do(req)
			if err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("node, with its token: %v %v", resp, err)
			}
			resp.Body.Close()

			start := time.Now()
			_, err = putToken(pod, url, 1500*time.Millisecond)
			var ne net.Error
			switch {
			case tt.podGetsIt && err != nil:
				t.Errorf("pod: %v, want a token", err)
			case !tt.podGetsIt && err == nil:
				t.Error("pod got a token past the hop limit")
			case !tt.podGetsIt && !(errors.As(err, &ne) && ne.Timeout()):
				t.Errorf("pod: %v, want no reply at all (a timeout)", err)
			}
			t.Logf("pod: %v after %v", err, time.Since(start).Round(time.Millisecond))
		})
	}
}
