// Package awsenv loads the AWS configuration of a machine: the SDK's
// default chain (on EC2, the instance profile's credentials from the
// instance metadata service), the cluster's region, and endpoints as the
// SDK reads them itself (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_<SERVICE>,
// which the machine image may set for a private endpoint or an emulator).
package awsenv

import (
	"context"
	"fmt"

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
