package nodeplan

import (
	"fmt"
	"strings"
)

// DNSPlan (DNSPath) lists the Route 53 records the `dns` step upserts for
// this machine, so that a member keeps a stable name across replacements
// (etcd0.demo.internal follows whichever instance holds etcd0's volume).
type DNSPlan struct {
	Records []Record `json:"records"`
}

// Record is one resource record set, UPSERTed with one value.
type Record struct {
	// HostedZoneID ("Z0123...", or a fact holding it: "{etcdZoneID}") or
	// ZoneName ("demo.internal", a private
	// zone the instance's VPC is associated with) says where the record
	// lives; give one.
	HostedZoneID string `json:"hostedZoneID,omitempty"`
	ZoneName     string `json:"zoneName,omitempty"`
	// Name is the record's name; it may name facts ("{member}.demo.internal").
	Name string `json:"name"`
	// Type is "A" (the default) or "CNAME".
	Type string `json:"type,omitempty"`
	// Value is the record's value; it may name facts. "{privateIPv4}" for
	// an A record and "{hostname}" for a CNAME when empty.
	Value string `json:"value,omitempty"`
	// TTL in seconds; 60 when 0.
	TTL int64 `json:"ttl,omitempty"`
}

// Validate implements Plan.
func (p *DNSPlan) Validate() error {
	var c checker
	for i, r := range p.Records {
		field := fmt.Sprintf("records[%d]", i)
		if (r.HostedZoneID == "") == (r.ZoneName == "") {
			c.add(field, "give exactly one of hostedZoneID and zoneName")
		}
		if r.ZoneName != "" {
			c.dnsName(field+".zoneName", r.ZoneName)
		}
		if strings.Contains(r.HostedZoneID, "{") {
			c.facts(field+".hostedZoneID", r.HostedZoneID)
		} else if strings.ContainsAny(r.HostedZoneID, "/ ") {
			c.add(field+".hostedZoneID", "%q: want the zone's id (Z...), without /hostedzone/", r.HostedZoneID)
		}
		c.dnsName(field+".name", r.Name)
		switch r.Type {
		case "", "A":
			if r.Value != "" {
				c.ipAddress(field+".value", r.Value)
			}
		case "CNAME":
			if r.Value != "" {
				c.dnsName(field+".value", r.Value)
			}
		default:
			c.add(field+".type", "%q: want A or CNAME", r.Type)
		}
		if r.TTL < 0 || r.TTL > 2147483647 {
			c.add(field+".ttl", "%d: want seconds between 0 and 2147483647", r.TTL)
		}
	}
	return c.err()
}
