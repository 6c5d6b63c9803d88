package config

import (
	"fmt"
	"strings"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
)

// ParseS3URI splits cluster.yaml's s3URI, s3://bucket/prefix, into the
// bucket and the prefix without surrounding slashes (may be empty).
func ParseS3URI(u string) (bucket, prefix string, err error) {
	rest, ok := strings.CutPrefix(u, "s3://")
	if !ok {
		return "", "", fmt.Errorf("s3URI %q does not start with s3://", u)
	}
	bucket, prefix, _ = strings.Cut(rest, "/")
	if bucket == "" {
		return "", "", fmt.Errorf("s3URI %q names no bucket", u)
	}
	return bucket, strings.Trim(prefix, "/"), nil
}

// Partition is the ARN partition of a region: aws, aws-cn or aws-us-gov
// (names.Partition, which kube-aws-node shares).
func Partition(region string) string { return names.Partition(region) }

// ServiceAccountIssuer is the issuer of the cluster's service-account
// tokens (names.ServiceAccountIssuer of its s3URI and region), or a fatal
// at s3URI when s3URI cannot be parsed: the apiserver, iam and pki plugins
// must agree on it to the byte.
func ServiceAccountIssuer(c *Cluster) (string, *diag.Diagnostic) {
	bucket, prefix, err := ParseS3URI(c.S3URI)
	if err != nil {
		d := diag.Fatalf("%v", err).At("s3URI").WithHint("write it as s3://bucket/prefix")
		return "", &d
	}
	return names.ServiceAccountIssuer(bucket, prefix, c.Region), nil
}
