package dns

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/step"
	"github.com/kube-aws/kube-aws/test/agenttest"
	"github.com/kube-aws/kube-aws/test/awstest"
)

var motoURL string

func TestMain(m *testing.M) { agenttest.MotoMain(m, &motoURL) }

var opts = Step{Timeout: 20 * time.Second}

func writePlan(t *testing.T, e *agent.Env, p *nodeplan.DNSPlan) {
	agenttest.WritePlan(t, e, nodeplan.DNSPath, p)
}

func records(t *testing.T, c *route53.Client, zone string) map[string]string {
	t.Helper()
	out, err := c.ListResourceRecordSets(t.Context(), &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String(zone)})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, r := range out.ResourceRecordSets {
		if r.Type == types.RRTypeA || r.Type == types.RRTypeCname {
			m[aws.ToString(r.Name)+" "+string(r.Type)] = fmt.Sprintf("%s %d", aws.ToString(r.ResourceRecords[0].Value), aws.ToInt64(r.TTL))
		}
	}
	return m
}

// An etcd member upserts its stable name in the cluster's private zone;
// its replacement (another address) moves the name.
func TestUpsert(t *testing.T) {
	e, out := agenttest.Machine(t, motoURL, "etcd", "dns")
	c := route53.NewFromConfig(e.AWS)
	vpc, err := ec2.NewFromConfig(e.AWS).CreateVpc(t.Context(), &ec2.CreateVpcInput{CidrBlock: aws.String("10.0.0.0/16")})
	if err != nil {
		t.Fatal(err)
	}
	// A public zone of the same name must not be chosen.
	c.CreateHostedZone(t.Context(), &route53.CreateHostedZoneInput{Name: aws.String("demo.internal"), CallerReference: aws.String(t.Name() + "pub")})
	z, err := c.CreateHostedZone(t.Context(), &route53.CreateHostedZoneInput{
		Name: aws.String("demo.internal"), CallerReference: aws.String(t.Name()),
		// moto marks a zone private only when told, AWS when given a VPC.
		HostedZoneConfig: &types.HostedZoneConfig{PrivateZone: true},
		VPC:              &types.VPC{VPCId: vpc.Vpc.VpcId, VPCRegion: types.VPCRegion(awstest.Region)},
	})
	if err != nil {
		t.Fatal(err)
	}
	zone := strings.TrimPrefix(aws.ToString(z.HostedZone.Id), "/hostedzone/")
	if err := e.AddFacts(nodeplan.Facts{"member": "etcd2"}); err != nil {
		t.Fatal(err)
	}
	writePlan(t, e, &nodeplan.DNSPlan{Records: []nodeplan.Record{
		{ZoneName: "demo.internal", Name: "{member}.demo.internal"},
		{HostedZoneID: zone, Name: "{member}-host.demo.internal", Type: "CNAME", TTL: 300},
	}})
	// The dry run of each run, as a machine's would see it.
	dry := func(changes ...string) {
		t.Helper()
		d, _ := agenttest.DryEnv(t, e)
		agenttest.ExpectDryRun(t, d, &opts, agenttest.Want{Changes: changes})
	}
	dry("upsert etcd2.demo.internal. A: 10.0.1.23 (TTL 60) in zone "+zone,
		"upsert etcd2-host.demo.internal. CNAME: ip-10-0-1-23.ec2.internal (TTL 300) in zone "+zone)
	if got := records(t, c, zone); len(got) != 0 {
		t.Errorf("the dry run upserted %v", got)
	}
	if err := step.Run(t.Context(), e, &opts); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	dry()
	got := records(t, c, zone)
	if got["etcd2.demo.internal. A"] != "10.0.1.23 60" || got["etcd2-host.demo.internal. CNAME"] != "ip-10-0-1-23.ec2.internal 300" {
		t.Errorf("records = %v", got)
	}
	if !strings.Contains(out.String(), "etcd2.demo.internal. A 10.0.1.23 (TTL 60) in zone "+zone+", in sync") {
		t.Errorf("output:\n%s", out)
	}
	// The replacement instance has another address: UPSERT moves the name.
	if err := e.AddFacts(nodeplan.Facts{nodeplan.FactPrivateIPv4: "10.0.2.7"}); err != nil {
		t.Fatal(err)
	}
	dry("upsert etcd2.demo.internal. A: 10.0.2.7 (TTL 60) in zone " + zone + ", was 10.0.1.23 (TTL 60)")
	if err := step.Run(t.Context(), e, &opts); err != nil {
		t.Fatal(err)
	}
	if got := records(t, c, zone); got["etcd2.demo.internal. A"] != "10.0.2.7 60" {
		t.Errorf("after replacement: %v", got)
	}
}

func TestFailures(t *testing.T) {
	tests := []struct {
		name   string
		record nodeplan.Record
		want   string
	}{
		{"unknown fact", nodeplan.Record{ZoneName: "demo.internal", Name: "{member}.demo.internal"}, "records[0].name"},
		{"A record with a name", nodeplan.Record{ZoneName: "demo.internal", Name: "x.demo.internal", Value: "{hostname}"}, "is not an IPv4 address"},
		{"no zone", nodeplan.Record{ZoneName: "nowhere.internal", Name: "x.nowhere.internal"}, "no hosted zone nowhere.internal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := agenttest.Machine(t, motoURL, "etcd", "dns")
			writePlan(t, e, &nodeplan.DNSPlan{Records: []nodeplan.Record{tt.record}})
			err := step.Run(t.Context(), e, &opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) || agent.ExitCode(err) != agent.ExitBadInput {
				t.Fatalf("err = %v (exit %d), want %q", err, agent.ExitCode(err), tt.want)
			}
		})
	}
}
