package config

import (
	"strings"
	"testing"
)

func TestParseS3URI(t *testing.T) {
	tests := []struct {
		in, bucket, prefix, err string
	}{
		{"s3://b/clusters/demo/", "b", "clusters/demo", ""},
		{"s3://b", "b", "", ""},
		{"https://b/x", "", "", "does not start with s3://"},
		{"s3:///x", "", "", "names no bucket"},
	}
	for _, tc := range tests {
		b, p, err := ParseS3URI(tc.in)
		if b != tc.bucket || p != tc.prefix || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("ParseS3URI(%q) = %q, %q, %v", tc.in, b, p, err)
		}
	}
	for region, want := range map[string]string{"us-east-1": "aws", "cn-north-1": "aws-cn", "us-gov-west-1": "aws-us-gov"} {
		if got := Partition(region); got != want {
			t.Errorf("Partition(%s) = %s", region, got)
		}
	}
}

func TestMachineSubnets(t *testing.T) {
	c := &Cluster{AvailabilityZones: []string{"us-east-1a", "us-east-1b"}, Network: Network{VPCCIDR: "10.0.0.0/16"}}
	got, err := c.MachineSubnets(nil)
	if err != nil || len(got) != 2 || !got[0].Private || !got[1].Private {
		t.Errorf("default: %+v %v; want the two private subnets", got, err)
	}
	got, err = c.MachineSubnets([]string{"public-us-east-1b"})
	if err != nil || len(got) != 1 || got[0].AvailabilityZone != "us-east-1b" {
		t.Errorf("by name: %+v %v", got, err)
	}
	if _, err := c.MachineSubnets([]string{"nowhere"}); err == nil {
		t.Error("an unknown subnet is no error")
	}
}
