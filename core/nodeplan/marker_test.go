package nodeplan_test

import (
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/nodeplan"
)

// The machine must find exactly the markers kube-aws writes.
func TestMarkerPatternIsConfigs(t *testing.T) {
	if nodeplan.MarkerPattern.String() != config.MarkerPattern.String() {
		t.Fatalf("nodeplan.MarkerPattern %s differs from config.MarkerPattern %s", nodeplan.MarkerPattern, config.MarkerPattern)
	}
	for _, m := range []string{config.Marker("dex", "/values/client secret"), config.GeneratedMarker("pki", "ca.key")} {
		if nodeplan.MarkerPattern.FindString("x"+m+"y") != m || nodeplan.AnyMarkerPattern.FindString("x"+m+"y") != m {
			t.Errorf("%s not found", m)
		}
		if _, ok := nodeplan.FactOfMarker(m); ok {
			t.Errorf("%s taken for a fact", m)
		}
	}
}

func TestFactMarkers(t *testing.T) {
	m := nodeplan.FactMarker("privateIPv4")
	if m != "((fact:privateIPv4))" || nodeplan.AnyMarkerPattern.FindString(`"`+m+`"`) != m || nodeplan.MarkerPattern.MatchString(m) {
		t.Fatalf("fact marker %s", m)
	}
	if name, ok := nodeplan.FactOfMarker(m); !ok || name != "privateIPv4" {
		t.Fatalf("FactOfMarker(%s) = %q %v", m, name, ok)
	}
	for _, bad := range []string{"((fact:))", "((fact:1x))", "((fact:a-b))", "x((fact:a))"} {
		if _, ok := nodeplan.FactOfMarker(bad); ok {
			t.Errorf("%q taken for a fact marker", bad)
		}
	}
	env := nodeplan.FromEnviron([]string{"KUBE_AWS_FACT_APILOADBALANCERDNS=api-123.elb.amazonaws.com", "KUBE_AWS_FACT_EMPTY=",
		"KUBE_AWS_ROLE=controller", "KUBE_AWS_FACT_BAD-NAME=x", "PATH=/bin"})
	if len(env) != 1 || env["apiloadbalancerdns"] != "api-123.elb.amazonaws.com" {
		t.Fatalf("facts from the environment: %v", env)
	}
	f := nodeplan.Facts{"privateIPv4": "10.0.1.23"}
	for k, v := range env {
		f[k] = v
	}
	got, err := f.Expand("https://{apiLoadBalancerDNS}:443 {privateIPv4}")
	if err != nil || got != "https://api-123.elb.amazonaws.com:443 10.0.1.23" {
		t.Fatalf("Expand: %q %v", got, err)
	}
	if _, err := f.Expand("{member}"); err == nil || !strings.Contains(err.Error(), "{member}") {
		t.Fatalf("unknown fact: %v", err)
	}
}
