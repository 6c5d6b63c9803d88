// Package awsenv loads the AWS configuration of a machine: the SDK's
// default chain (on EC2, the instance profile's credentials from the
// instance metadata service), the cluster's region, and endpoints as the
// SDK reads them itself (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_<SERVICE>,
// which the machine image may set for a private endpoint or an emulator).
package awsenv

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/logging"
)

// Load returns the configuration for region. The SDK retries throttled
// and failed calls itself, up to 8 times with backoff.
func Load(ctx context.Context, region string) (aws.Config, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx,
		awsconfig.WithRegion(region),
		awsconfig.WithLogger(logging.Nop{}),
		awsconfig.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 8 })
		}),
	)
	if err != nil {
		return aws.Config{}, fmt.Errorf("loading the AWS configuration: %w", err)
	}
	return cfg, nil
}

// S3 is the S3 client kube-aws-node uses: path-style addressing, as the
// bootstrap's curl uses, so that one endpoint setting serves both.
func S3(cfg aws.Config) *s3.Client {
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = true
		o.DisableLogOutputChecksumValidationSkipped = true
	})
}

// Forwarded picks, from environ (os.Environ's NAME=value pairs), the
// standard AWS SDK settings by which this machine reaches AWS and which a
// pod, which does not inherit the machine's environment, needs to reach it
// the same way: the endpoints of a private or emulated AWS
// (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_<SERVICE>), the instance metadata
// service's address, FIPS and dual-stack endpoints. The addons step puts
// them in the ConfigMap names.AWSEnvConfigMap; the pod identity webhook
// puts them in the environment of the pods it gives a role.
func Forwarded(environ []string) map[string]string {
	out := map[string]string{}
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AWS_ENDPOINT_URL") || k == "AWS_EC2_METADATA_SERVICE_ENDPOINT" || k == "AWS_USE_FIPS_ENDPOINT" || k == "AWS_USE_DUALSTACK_ENDPOINT" {
			out[k] = v
		}
	}
	return out
}
