package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/kube-aws/kube-aws/core/config"
)

// Deploy refuses, before it changes anything, a version the running
// cluster may not move to, whatever this folder last deployed.
func TestVersionSkewAgainstTheRunningCluster(t *testing.T) {
	running := func(v string) *cftypes.Stack {
		return &cftypes.Stack{Outputs: []cftypes.Output{{OutputKey: aws.String("AutoScalingGroupName"), OutputValue: aws.String("g")},
			{OutputKey: aws.String("KubernetesVersion"), OutputValue: aws.String(v)}}}
	}
	for _, c := range []struct {
		name, want string
		stack      *cftypes.Stack
		version    string
	}{
		{"first deploy", "", nil, "1.34.4"},
		{"one minor up", "", running("v1.33.13"), "1.34.4"},
		{"a patch down", "", running("v1.34.4"), "1.34.2"},
		{"an older stack without the output", "", &cftypes.Stack{}, "1.36.0"},
		{"a skipped minor", "skips 1.34", running("v1.33.13"), "1.35.0"},
		{"a minor down", "downgrades the minor version from 1.34 to 1.33", running("v1.34.4"), "1.33.13"},
	} {
		err := checkVersionSkew(&config.Cluster{KubernetesVersion: c.version}, c.stack)
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		var se *VersionSkewError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "the cluster runs Kubernetes v") || se.Skew.Hint == "" {
			t.Errorf("%s: got %v", c.name, err)
		}
	}
}

// Deploy refuses, before it changes anything, an s3URI that changes the
// service-account issuer of the running cluster.
func TestIssuerChangeAgainstTheRunningCluster(t *testing.T) {
	c := &config.Cluster{Region: "eu-west-1", S3URI: "s3://bucket/clusters/a"}
	same, _ := config.ServiceAccountIssuer(c)
	running := func(issuer string) *cftypes.Stack {
		return &cftypes.Stack{Outputs: []cftypes.Output{{OutputKey: aws.String("InstanceProfileController"), OutputValue: aws.String("p")},
			{OutputKey: aws.String("ServiceAccountIssuer"), OutputValue: aws.String(issuer)}}}
	}
	for _, tc := range []struct {
		name  string
		stack *cftypes.Stack
		s3URI string
		want  bool
	}{
		{"first deploy", nil, c.S3URI, false},
		{"unchanged", running(same), c.S3URI, false},
		{"an older stack without the output", &cftypes.Stack{}, "s3://other/x", false},
		{"another prefix", running(same), "s3://bucket/clusters/b", true},
		{"another bucket", running(same), "s3://other/clusters/a", true},
		{"an s3URI that does not parse (initialise reports it)", running(same), "bucket/clusters/a", false},
	} {
		cc := *c
		cc.S3URI = tc.s3URI
		ie := issuerChange(&cc, tc.stack)
		if !tc.want {
			if ie != nil {
				t.Errorf("%s: %v", tc.name, ie)
			}
			continue
		}
		if ie == nil || ie.From != same || ie.To == same || !strings.Contains(ie.Error(), "no stack was changed") ||
			!strings.Contains(ie.Hint(), "--allow-issuer-change") || !strings.Contains(ie.Hint(), same) {
			t.Errorf("%s: got %v", tc.name, ie)
		}
	}
}
