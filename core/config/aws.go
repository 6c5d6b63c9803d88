package config

import (
	"fmt"
	"strings"

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
