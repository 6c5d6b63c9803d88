package awsenv

import (
	"reflect"
	"testing"
)

// Only the SDK's endpoint settings go to pods: not the machine's
// credentials, region or anything else.
func TestForwarded(t *testing.T) {
	got := Forwarded([]string{
		"AWS_ENDPOINT_URL=http://aws.test", "AWS_ENDPOINT_URL_STS=http://sts.test", "AWS_EC2_METADATA_SERVICE_ENDPOINT=http://imds.test",
		"AWS_USE_FIPS_ENDPOINT=true", "AWS_USE_DUALSTACK_ENDPOINT=false",
		"AWS_ACCESS_KEY_ID=AKIA", "AWS_SECRET_ACCESS_KEY=s", "AWS_REGION=us-east-1", "HOME=/root", "NOEQUALS",
	})
	want := map[string]string{
		"AWS_ENDPOINT_URL": "http://aws.test", "AWS_ENDPOINT_URL_STS": "http://sts.test", "AWS_EC2_METADATA_SERVICE_ENDPOINT": "http://imds.test",
		"AWS_USE_FIPS_ENDPOINT": "true", "AWS_USE_DUALSTACK_ENDPOINT": "false",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Forwarded = %v\nwant %v", got, want)
	}
}
