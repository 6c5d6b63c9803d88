// Package dns is the `dns` step: it UPSERTs the Route 53 records of the DNS
// plan with this machine's facts as values (an etcd member's stable name
// follows the instance that holds its volume), and waits until Route 53
// reports the change in sync. A record the zone has with the same value
// and TTL is current.
package dns

import (
	"context"
	"flag"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/awsenv"
	"github.com/kube-aws/kube-aws/node/retry"
	"github.com/kube-aws/kube-aws/node/step"
)

// DefaultTTL is a record's TTL when the plan gives none: short, so a
// replaced member's new address is seen soon.
const DefaultTTL = 60

// Step is the step.
type Step struct {
	// Timeout bounds each record's change and its propagation.
	Timeout time.Duration
}

// New is the step as kube-aws-node runs it.
func New() *Step { return &Step{} }

func (*Step) Name() string { return nodeplan.StepDNS }

func (s *Step) Flags(fs *flag.FlagSet) {
	fs.DurationVar(&s.Timeout, "timeout", 5*time.Minute, "how long each record may take to be in sync")
}

// upsert is a record to upsert in a zone.
type upsert struct {
	field, zone string
	rec         record
}

// Check expands each record's facts and compares it with what the zone
// has: a record with the same value and TTL is current.
func (s *Step) Check(ctx context.Context, e *agent.Env) (step.Changes, error) {
	var plan nodeplan.DNSPlan
	if found, err := e.OptionalPlan(nodeplan.DNSPath, &plan); err != nil || !found {
		return nil, err
	}
	client := route53.NewFromConfig(e.AWS)
	var changes step.Changes
	for i, r := range plan.Records {
		u := &upsert{field: fmt.Sprintf("records[%d]", i)}
		var err error
		if u.rec, err = resolve(e, u.field, r); err != nil {
			return nil, err
		}
		var now string
		rctx, cancel := context.WithTimeout(ctx, s.Timeout)
		err = retry.Do(rctx, retry.Boot, func(ctx context.Context) error {
			var err error
			if u.zone, err = zone(ctx, e, client, r); err != nil {
				return err
			}
			now, err = current(ctx, client, u.zone, u.rec)
			return err
		}, e.Retrying(u.rec.name))
		cancel()
		if err != nil {
			return nil, fmt.Errorf("%s (%s %s): %w", u.field, u.rec.name, u.rec.kind, err)
		}
		want := fmt.Sprintf("%s (TTL %d)", u.rec.value, u.rec.ttl)
		switch now {
		case want:
			e.Logf("%s %s %s in zone %s is current", u.rec.name, u.rec.kind, want, u.zone)
		case "":
			changes = append(changes, step.Change{Action: "upsert", Target: u.rec.name + " " + u.rec.kind, Detail: want + " in zone " + u.zone, Data: u})
		default:
			changes = append(changes, step.Change{Action: "upsert", Target: u.rec.name + " " + u.rec.kind, Detail: want + " in zone " + u.zone + ", was " + now, Data: u})
		}
	}
	return changes, nil
}

// Apply upserts each record and waits until Route 53 has it in sync.
func (s *Step) Apply(ctx context.Context, e *agent.Env, changes step.Changes) error {
	client := route53.NewFromConfig(e.AWS)
	for _, c := range changes {
		u := c.Data.(*upsert)
		rctx, cancel := context.WithTimeout(ctx, s.Timeout)
		err := retry.Do(rctx, retry.Boot, func(ctx context.Context) error { return u.apply(ctx, e, client) }, e.Retrying(u.rec.name))
		cancel()
		if err != nil {
			return fmt.Errorf("%s (%s %s): %w", u.field, u.rec.name, u.rec.kind, err)
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
	// Route 53's names are fully qualified.
	rec.name = strings.TrimSuffix(rec.name, ".") + "."
	if rec.value, err = e.Expand(field+".value", rec.value); err != nil {
		return rec, err
	}
	if rec.kind == "A" && net.ParseIP(rec.value).To4() == nil {
		return rec, agent.BadInput(fmt.Errorf("%s.value: %q is not an IPv4 address for an A record", field, rec.value))
	}
	return rec, nil
}

// zone is the id of the record's hosted zone.
func zone(ctx context.Context, e *agent.Env, client *route53.Client, r nodeplan.Record) (string, error) {
	id, err := e.Expand("hostedZoneID", r.HostedZoneID)
	if err != nil || id != "" {
		return id, err
	}
	return zoneID(ctx, client, r.ZoneName)
}

// current is the zone's record of that name and type, "value (TTL n)", or
// "" when it has none.
func current(ctx context.Context, client *route53.Client, zone string, rec record) (string, error) {
	out, err := client.ListResourceRecordSets(ctx, &route53.ListResourceRecordSetsInput{
		HostedZoneId: aws.String(zone), StartRecordName: aws.String(rec.name), StartRecordType: types.RRType(rec.kind), MaxItems: aws.Int32(1),
	})
	if err != nil {
		return "", fmt.Errorf("reading zone %s: %w", zone, err)
	}
	for _, set := range out.ResourceRecordSets {
		if !strings.EqualFold(aws.ToString(set.Name), rec.name) || set.Type != types.RRType(rec.kind) {
			continue
		}
		var values []string
		for _, v := range set.ResourceRecords {
			values = append(values, aws.ToString(v.Value))
		}
		return fmt.Sprintf("%s (TTL %d)", strings.Join(values, ","), aws.ToInt64(set.TTL)), nil
	}
	return "", nil
}

func (u *upsert) apply(ctx context.Context, e *agent.Env, client *route53.Client) error {
	rec := u.rec
	out, err := client.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{
		HostedZoneId: aws.String(u.zone),
		ChangeBatch: &types.ChangeBatch{
			Comment: aws.String("kube-aws-node on " + e.Facts[nodeplan.FactInstanceID]),
			Changes: []types.Change{{Action: types.ChangeActionUpsert, ResourceRecordSet: &types.ResourceRecordSet{
				Name: aws.String(rec.name), Type: types.RRType(rec.kind), TTL: aws.Int64(rec.ttl),
				ResourceRecords: []types.ResourceRecord{{Value: aws.String(rec.value)}},
			}}},
		},
	})
	if err != nil {
		return fmt.Errorf("upserting in zone %s: %w", u.zone, err)
	}
	started := time.Now()
	deadline, ok := ctx.Deadline()
	wait := 5 * time.Minute
	if ok {
		wait = time.Until(deadline)
	}
	w := route53.NewResourceRecordSetsChangedWaiter(awsenv.Route53GetChange(client.GetChange), func(o *route53.ResourceRecordSetsChangedWaiterOptions) {
		o.MinDelay, o.MaxDelay = time.Second, 10*time.Second
	})
	if err := w.Wait(ctx, &route53.GetChangeInput{Id: out.ChangeInfo.Id}, wait); err != nil {
		return fmt.Errorf("waiting for change %s to be in sync: %w", aws.ToString(out.ChangeInfo.Id), err)
	}
	e.Logf("%s %s %s (TTL %d) in zone %s, in sync after %s", rec.name, rec.kind, rec.value, rec.ttl, u.zone, time.Since(started).Round(time.Millisecond))
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
