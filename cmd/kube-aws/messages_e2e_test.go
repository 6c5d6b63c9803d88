package main

import (
	"strings"
	"testing"
)

// Messages a user acts on, through the real kube-aws and built-ins: each
// says a thing once, and says it so that following it works.

// A new VPC with private subnets and no NAT gateways is one warning, with
// its line in cluster.yaml, not one from core/config and another from the
// cloudformation built-in.
func TestTheNATWarningIsPrintedOnce(t *testing.T) {
	t.Parallel()
	l := newExampleLayout(t)
	l.edit("  natGateways: true\n", "  natGateways: false\n")
	stdout, stderr, code := l.run("render")
	if code != 0 {
		t.Fatalf("render: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if n := strings.Count(stderr, "NAT gateways"); n != 1 {
		t.Fatalf("the NAT warning is printed %d times, want once:\n%s", n, stderr)
	}
	if !strings.Contains(stderr, "cluster.yaml:61:16 network.natGateways") || !strings.Contains(stderr, "0 fatal, 1 warning(s)") {
		t.Fatalf("the NAT warning names no line, or other warnings came with it:\n%s", stderr)
	}
}
