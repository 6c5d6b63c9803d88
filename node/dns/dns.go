// Package dns is the `dns` step: it UPSERTs the Route 53 records of the DNS
// plan with this machine's facts as values (an etcd member's stable name
// follows the instance that holds its volume), and waits until Route 53
// reports the change in sync.
package dns

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/retry"
)

// DefaultTTL is a record's TTL when the plan gives none: short, so a
// replaced member's new address is seen soon.
const DefaultTTL = 60

// Options tune the step.
type Options struct {
	// Timeout bounds each record's change and its propagation.
	Timeout time.Duration
}

// Run is the step.
func Run(ctx context.Context, e *agent.Env, o Options) error {
	var plan nodeplan.DNSPlan
	if found, err := e.OptionalPlan(nodeplan.DNSPath, &plan); err != nil || !found {
		return err
	}
	client := route53.NewFromConfig(e.AWS)
	for i, r := range plan.Records {
		field := fmt.Sprintf("records[%d]", i)
		rec, err := resolve(e, field, r)
		if err != nil {
			return err
		}
		rctx, cancel := context.WithTimeout(ctx, o.Timeout)
		err = retry.Do(rctx, retry.Boot, func(ctx context.Context) error { return upsert(ctx, e, client, r, rec) }, e.Retrying(rec.name))
		cancel()
		if err != nil {
			return fmt.Errorf("%s (%s %s): %w", field, rec.name, rec.kind, err)
		}
	}
	return nil
}

type record struct {
	name, kind, value string
	ttl               int64
}

// resolve expands the record's facts and checks what they became.
func resolve(e *agent.Env, field string, r nodeplan.Record) (record, error) {
	rec := record{kind: r.Type, value: r.Value, ttl: r.TTL}
	if rec.kind == "" {
		rec.kind = "A"
	}
	if rec.value == "" {
		rec.value = "{" + nodeplan.FactPrivateIPv4 + "}"
		if rec.kind == "CNAME" {
			rec.value = "{" + nodeplan.FactHostname + "}"
		}
	}
	if rec.ttl == 0 {
		rec.ttl = DefaultTTL
	}
	var err error
	if rec.name, err = e.Expand(field+".name", r.Name); err != nil {
		return rec, err
	}
	if rec.value, err = e.Expand(field+".value", rec.value); err != nil {
		return rec, err
	}
	if rec.kind == "A" && net.ParseIP(rec.value).To4() == nil {
		return rec, agent.BadInput(fmt.Errorf("%s.value: %q is not an IPv4 address for an A record", field, rec.value))
	}
	return rec, nil
}

func upsert(ctx context.Context, e *agent.Env, client *route53.Client, r nodeplan.Record, rec record) error {
	zone, err := e.Expand("hostedZoneID", r.HostedZoneID)
	if err != nil {
		return err
	}
	if zone == "" {
		var err error
		if zone, err = zoneID(ctx, client, r.ZoneName); err != nil {
			return err
		}
	}
	name := strings.TrimSuffix(rec.name, ".") + "."
	out, err := client.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{
		HostedZoneId: aws.String(zone),
		ChangeBatch: &types.ChangeBatch{
			Comment: aws.String("kube-aws-node on " + e.Facts[nodeplan.FactInstanceID]),
			Changes: []types.Change{{Action: types.ChangeActionUpsert, ResourceRecordSet: &types.ResourceRecordSet{
				Name: aws.String(name), Type: types.RRType(rec.kind), TTL: aws.Int64(rec.ttl),
				ResourceRecords: []types.ResourceRecord{{Value: aws.String(rec.value)}},
			}}},
		},
	})
	if err != nil {
		return fmt.Errorf("upserting in zone %s: %w", zone, err)
	}
	started := time.Now()
	deadline, ok := ctx.Deadline()
	wait := 5 * time.Minute
	if ok {
		wait = time.Until(deadline)
	}
	w := route53.NewResourceRecordSetsChangedWaiter(client, func(o *route53.ResourceRecordSetsChangedWaiterOptions) {
		o.MinDelay, o.MaxDelay = time.Second, 10*time.Second
	})
	if err := w.Wait(ctx, &route53.GetChangeInput{Id: out.ChangeInfo.Id}, wait); err != nil {
		return fmt.Errorf("waiting for change %s to be in sync: %w", aws.ToString(out.ChangeInfo.Id), err)
	}
	e.Logf("%s %s %s (TTL %d) in zone %s, in sync after %s", name, rec.kind, rec.value, rec.ttl, zone, time.Since(started).Round(time.Millisecond))
	return nil
}

// zoneID finds a hosted zone by name; a private zone wins over a public
// one of the same name, since the records are the cluster's own.
func zoneID(ctx context.Context, client *route53.Client, name string) (string, error) {
	want := strings.TrimSuffix(name, ".") + "."
	out, err := client.ListHostedZonesByName(ctx, &route53.ListHostedZonesByNameInput{DNSName: aws.String(want)})
	if err != nil {
		return "", fmt.Errorf("finding hosted zone %s: %w", name, err)
	}
	id := ""
	for _, z := range out.HostedZones {
		if aws.ToString(z.Name) != want {
			continue
		}
		if id == "" || (z.Config != nil && z.Config.PrivateZone) {
			id = strings.TrimPrefix(aws.ToString(z.Id), "/hostedzone/")
		}
	}
	if id == "" {
		return "", agent.BadInput(fmt.Errorf("no hosted zone %s", name))
	}
	return id, nil
}
