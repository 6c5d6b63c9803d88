package names

import "strconv"

// The etcd members' stable names. Member i is etcd<i> whichever instance
// runs it: the etcd stack owns a data volume and a Route 53 record per
// member in the cluster's private zone, and the instance that attaches a
// member's volume takes its name and upserts its record. The API server's
// --etcd-servers, the members' certificates and etcd's own cluster
// configuration are built from these names, so none of them changes when a
// member's instance is replaced.
const (
	// EtcdClientPort serves clients (the API server, etcdctl).
	EtcdClientPort = 2379
	// EtcdPeerPort serves the other members.
	EtcdPeerPort = 2380
	// EtcdDataDir is where each member's data volume is mounted.
	EtcdDataDir = "/var/lib/etcd"
	// FactEtcdMember is the machine fact holding the member's name
	// (etcd0), taken from the tag of the data volume the machine attached
	// (KUBE_AWS_FACT_ETCDMEMBER for units).
	FactEtcdMember = "etcdMember"
	// TagEtcdMember is the tag of a member's data volume naming the member;
	// the volumes step turns it into FactEtcdMember. The volumes step runs
	// before the certificates and dns steps on etcd machines, which name
	// the fact.
	TagEtcdMember = "kube-aws:etcd-member"
	// EtcdZoneResource is the logical id of the members' private hosted
	// zone in the etcd stack.
	EtcdZoneResource = "PrivateZone"
	// EtcdRecordsPolicyResource is the logical id of the IAM policy in the
	// etcd stack that lets the etcd role change records in that zone and
	// no other. It is in the etcd stack, not the iam stack, because it
	// names the zone by its id, which only the etcd stack has: the iam
	// stack is deployed first (every machine stack takes its instance
	// profile), so it cannot take the etcd stack's outputs.
	EtcdRecordsPolicyResource = "EtcdRecordsPolicy"
	// FactEtcdZoneID is the machine fact holding that zone's id, from the
	// TagEtcdZoneID tag of the member's data volume: a member upserts its
	// record by id, with no lookup by name (which needs
	// route53:ListHostedZonesByName on every zone of the account).
	FactEtcdZoneID = "etcdZoneID"
	// TagEtcdZoneID is the data volumes' tag holding the zone's id.
	TagEtcdZoneID = "kube-aws:etcd-zone-id"
)

// EtcdMember is the name of member i: etcd0, etcd1...
func EtcdMember(i int) string { return "etcd" + strconv.Itoa(i) }

// EtcdZone is the private hosted zone the etcd stack creates in the
// cluster's VPC for its members' records: <cluster>.internal.
func EtcdZone(cluster string) string { return cluster + ".internal" }

// EtcdMemberHost is a member's DNS name: etcd0.<cluster>.internal.
func EtcdMemberHost(cluster, member string) string { return member + "." + EtcdZone(cluster) }

// EtcdClientURL is a member's client URL.
func EtcdClientURL(cluster, member string) string {
	return "https://" + EtcdMemberHost(cluster, member) + ":" + strconv.Itoa(EtcdClientPort)
}

// EtcdPeerURL is a member's peer URL.
func EtcdPeerURL(cluster, member string) string {
	return "https://" + EtcdMemberHost(cluster, member) + ":" + strconv.Itoa(EtcdPeerPort)
}

// EtcdClientURLs are the client URLs of a cluster of count members, the
// API server's --etcd-servers.
func EtcdClientURLs(cluster string, count int) []string {
	out := make([]string, count)
	for i := range out {
		out[i] = EtcdClientURL(cluster, EtcdMember(i))
	}
	return out
}
