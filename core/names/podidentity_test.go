package names

import "testing"

func TestServiceAccountIssuer(t *testing.T) {
	for _, tc := range []struct{ bucket, prefix, region, want string }{
		{"assets", "clusters/demo", "us-east-1", "https://assets.s3.us-east-1.amazonaws.com/clusters/demo/oidc"},
		{"assets", "", "eu-west-1", "https://assets.s3.eu-west-1.amazonaws.com/oidc"},
		{"assets", "/a/", "cn-north-1", "https://assets.s3.cn-north-1.amazonaws.com.cn/a/oidc"},
	} {
		if got := ServiceAccountIssuer(tc.bucket, tc.prefix, tc.region); got != tc.want {
			t.Errorf("ServiceAccountIssuer(%q, %q, %q) = %q, want %q", tc.bucket, tc.prefix, tc.region, got, tc.want)
		}
	}
	if got := PodRoleName("demo", "cluster-autoscaler"); got != "demo-pod-cluster-autoscaler" {
		t.Errorf("PodRoleName = %q", got)
	}
}
