package dns

import (
	"context"
	"errors"
	"net"
	"sort"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

func data() Data {
	return Data{
		Zones: []string{"harness.internal", "lb-1.us-east-1.elb.amazonaws.com", "ec2.internal"},
		Records: []Record{
			{Name: "svc.harness.internal.", Type: dnsmessage.TypeCNAME, TTL: 60, Values: []string{"lb-1.us-east-1.elb.amazonaws.com"}},
			{Name: "lb-1.us-east-1.elb.amazonaws.com", Type: dnsmessage.TypeA, TTL: 60, Values: []string{"169.254.170.1"}},
			{Name: "Etcd0.Harness.Internal", Type: dnsmessage.TypeA, TTL: 300, Values: []string{"10.0.1.4", "10.0.1.5"}},
			{Name: "txt.harness.internal", Type: dnsmessage.TypeTXT, TTL: 300, Values: []string{`"hello"`}},
			{Name: "loop.harness.internal", Type: dnsmessage.TypeCNAME, TTL: 60, Values: []string{"loop.harness.internal"}},
		},
	}
}

// serve starts the server on 127.0.0.1 over UDP and TCP.
func serve(t *testing.T) (udp, tcp string) {
	s := New(data)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.ServeUDP(pc)
	go s.ServeTCP(l)
	t.Cleanup(func() { pc.Close(); l.Close() })
	return pc.LocalAddr().String(), l.Addr().String()
}

func TestResolve(t *testing.T) {
	udp, tcp := serve(t)
	cases := []struct {
		name, host string
		want       []string
		wantErr    string // "not found" or "refused"
	}{
		{"A record, any case", "etcd0.harness.internal", []string{"10.0.1.4", "10.0.1.5"}, ""},
		{"CNAME to a load balancer name", "svc.harness.internal", []string{"169.254.170.1"}, ""},
		{"load balancer name", "lb-1.us-east-1.elb.amazonaws.com", []string{"169.254.170.1"}, ""},
		{"missing name in an owned zone", "nope.harness.internal", nil, "no such host"},
		{"name outside every zone is refused", "example.com", nil, "server misbehaving"},
		{"CNAME loop ends", "loop.harness.internal", nil, "no such host"},
	}
	for _, tc := range cases {
		for _, network := range []string{"udp", "tcp"} {
			t.Run(tc.name+"/"+network, func(t *testing.T) {
				addr := udp
				if network == "tcp" {
					addr = tcp
				}
				var d net.Dialer
				r := Resolver(addr, func(ctx context.Context, _, a string) (net.Conn, error) { return d.DialContext(ctx, network, a) })
				got, err := r.LookupHost(context.Background(), tc.host)
				if tc.wantErr != "" {
					var de *net.DNSError
					if !errors.As(err, &de) || !strings.Contains(de.Err, tc.wantErr) {
						t.Fatalf("LookupHost(%s) = %v, %v; want error %q", tc.host, got, err, tc.wantErr)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				sort.Strings(got)
				if strings.Join(got, ",") != strings.Join(tc.want, ",") {
					t.Fatalf("LookupHost(%s) = %v, want %v", tc.host, got, tc.want)
				}
			})
		}
	}
}

func TestTXTAndCNAME(t *testing.T) {
	udp, _ := serve(t)
	var d net.Dialer
	r := Resolver(udp, func(ctx context.Context, _, a string) (net.Conn, error) { return d.DialContext(ctx, "udp", a) })
	txt, err := r.LookupTXT(context.Background(), "txt.harness.internal")
	if err != nil || len(txt) != 1 || txt[0] != "hello" {
		t.Fatalf("TXT = %v, %v", txt, err)
	}
	cn, err := r.LookupCNAME(context.Background(), "svc.harness.internal")
	if err != nil || cn != "lb-1.us-east-1.elb.amazonaws.com." {
		t.Fatalf("CNAME = %q, %v", cn, err)
	}
}

func TestGarbageIsDropped(t *testing.T) {
	if _, err := New(data).Answer([]byte{1, 2, 3}); err == nil {
		t.Fatal("a 3-byte message was answered")
	}
}
