// Package nodeplan defines the files that tell kube-aws-node, the program
// every machine of a kube-aws cluster runs at boot, what to do: the plan
// files under /etc/kube-aws/ that the role's userdata writes (write_files)
// and that the steps its runcmd calls read, the settings the launch
// template's bootstrap passes in the environment, the machine facts a plan
// may name, and the status object each machine writes to S3.
//
// Producers (the plugins that render a role's userdata) and the consumer
// (kube-aws-node) share these types, so a plan a plugin renders is one the
// machine understands: a plugin builds the Go value, calls Validate, and
// writes Encode's bytes as a file construct at the plan's Path. The package
// imports only the standard library and core/names (which imports nothing
// else), because every plugin imports it and package init is start-up time
// of every plugin process.
//
// It also declares kube-aws-node's steps (Step): the name of each, the plan
// it reads and what it needs, and derives from the needs the order a
// machine runs them in (Steps), which the userdata plugin's runcmd and
// kube-aws-node's own list follow.
//
// Conventions every plan follows:
//   - JSON, fields in lowerCamelCase, unknown fields refused (a typo in a
//     plan is an error on the machine, never a silent default);
//   - paths on the machine are absolute and clean;
//   - S3 keys are relative to the cluster's prefix (the s3URI of
//     cluster.yaml): "assets/<sha256>" names the object kube-aws-node reads
//     at <bucket>/<prefix>/assets/<sha256>; kube-aws-node reads only
//     content-addressed objects and checks every byte's sha256;
//   - fields documented as "may name facts" are expanded on the machine:
//     {privateIPv4}, {hostname}, {instanceID}, {availabilityZone}, {region},
//     and facts the volumes plan derives from a volume's tags (see Expand).
package nodeplan
