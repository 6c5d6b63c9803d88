package machines

import (
	"net/netip"
	"sort"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/test/machines/cloud"
)

// TestDNSData: what the VPC resolver answers, made from a snapshot.
func TestDNSData(t *testing.T) {
	h := &Harness{opts: Options{}, lbAddr: map[string]netip.Addr{"api": netip.MustParseAddr("169.254.170.1")}}
	h.opts.AWS.Region = "us-east-1"
	h.snap.Store(&cloud.Snapshot{
		Instances: map[string]*cloud.Instance{
			"i-1": {ID: "i-1", State: "running", PrivateIP: netip.MustParseAddr("10.0.1.4")},
			"i-2": {ID: "i-2", State: "terminated", PrivateIP: netip.MustParseAddr("10.0.1.5")},
		},
		LoadBalancers: []cloud.LoadBalancer{{Name: "api", DNSName: "api-1.us-east-1.elb.amazonaws.com"}, {Name: "unplayed", DNSName: "x.elb.amazonaws.com"}},
		Zones: []cloud.Zone{{Name: "demo.internal.", Records: []cloud.Record{
			{Name: "etcd0.demo.internal.", Type: "A", TTL: 300, Values: []string{"10.0.1.10"}},
			{Name: "api.demo.internal.", Type: "A", Alias: "API-1.us-east-1.elb.amazonaws.com."},
			{Name: "gone.demo.internal.", Type: "A", Alias: "nowhere.elb.amazonaws.com."},
			{Name: "demo.internal.", Type: "SOA", Values: []string{"x"}},
		}}},
	})
	d := h.dnsData()
	got := map[string]string{}
	for _, r := range d.Records {
		got[r.Name+" "+r.Type.String()] = strings.Join(r.Values, ",")
	}
	want := map[string]string{
		"api-1.us-east-1.elb.amazonaws.com TypeA": "169.254.170.1",
		"etcd0.demo.internal. TypeA":              "10.0.1.10",
		"api.demo.internal. TypeA":                "169.254.170.1",
		"ip-10-0-1-4.ec2.internal TypeA":          "10.0.1.4",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q (all: %v)", k, got[k], v, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("records %v, want only %v", got, want)
	}
	sort.Strings(d.Zones)
	if strings.Join(d.Zones, " ") != "api-1.us-east-1.elb.amazonaws.com demo.internal. ec2.internal" {
		t.Errorf("zones %v", d.Zones)
	}
}

// TestTargets: a load balancer spreads new connections to the running
// registered instances' private addresses at the target port, leaving out
// an instance its group is terminating; it keeps open connections to every
// running instance, and only those.
func TestTargets(t *testing.T) {
	h := &Harness{}
	h.snap.Store(&cloud.Snapshot{
		Instances: map[string]*cloud.Instance{
			"i-1": {ID: "i-1", State: "running", Lifecycle: "InService", PrivateIP: netip.MustParseAddr("10.0.1.4")},
			"i-2": {ID: "i-2", State: "shutting-down", Lifecycle: "Terminating:Proceed", PrivateIP: netip.MustParseAddr("10.0.1.5")},
			"i-3": {ID: "i-3", State: "pending", Lifecycle: "Pending", PrivateIP: netip.MustParseAddr("10.0.2.4")},
			"i-4": {ID: "i-4", State: "running", Lifecycle: "Terminating:Wait", PrivateIP: netip.MustParseAddr("10.0.2.5")},
		},
		LoadBalancers: []cloud.LoadBalancer{{Name: "api", Listeners: []cloud.Listener{
			{Port: 443, Targets: []cloud.Target{{InstanceID: "i-1", Port: 6443}, {InstanceID: "i-2", Port: 6443}, {InstanceID: "i-3", Port: 6443},
				{InstanceID: "i-4", Port: 6443}, {InstanceID: "i-9", Port: 6443}}},
			{Port: 80, Targets: []cloud.Target{{InstanceID: "i-1", Port: 8080}}},
		}}},
	})
	got := h.targets("api", 443)
	if strings.Join(got, " ") != "10.0.1.4:6443 10.0.2.4:6443" {
		t.Fatalf("targets of api:443 = %v", got)
	}
	if got := h.targets("other", 443); len(got) != 0 {
		t.Fatalf("targets of an unknown load balancer = %v", got)
	}
	alive := h.alive()
	for target, want := range map[string]bool{
		"10.0.1.4:6443": true, "10.0.2.5:6443": true, "10.0.2.5:10250": true, // in service; leaving, still running
		"10.0.1.5:6443": false, "10.9.9.9:6443": false, "bogus": false, // shutting down; no instance
	} {
		if alive(target) != want {
			t.Errorf("connections to %s kept: %v, want %v", target, !want, want)
		}
	}
}
