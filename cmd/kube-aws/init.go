package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/stages/action"
)

func newInit(g *globals) *cobra.Command {
	var o config.InitOptions
	cmd := &cobra.Command{
		Use:   "init",
		Short: "Write a commented cluster.yaml from flags",
		Long: `init writes a commented, valid cluster.yaml (to --config, default ./cluster.yaml).
It never overwrites an existing file. Edit the result, then run ` + "`kube-aws render`" + `.`,
		Example: `  kube-aws init --cluster-name demo --region eu-west-1 --s3-uri s3://my-bucket/demo
  kube-aws init -c prod.yaml --cluster-name prod --region us-east-1 \
    --availability-zones us-east-1a,us-east-1b --s3-uri s3://assets/prod \
    --kms-key-arn arn:aws:kms:us-east-1:123456789012:key/abcd --key-name ops`,
		Args: exactArgs(0, "no arguments"),
		RunE: own(g, func(cmd *cobra.Command, args []string) error {
			if err := action.Init(g.config, o); err != nil {
				return fail(g, "init", err)
			}
			if g.json() {
				return writeJSON(g.stdout, struct {
					Command string `json:"command"`
					OK      bool   `json:"ok"`
					Wrote   string `json:"wrote"`
				}{"init", true, g.config})
			}
			fmt.Fprintf(g.stdout, "wrote %s: review it, then run `kube-aws render`\n", g.config)
			return nil
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.ClusterName, "cluster-name", "", "cluster name (required)")
	f.StringVar(&o.Region, "region", "", "AWS region (required)")
	f.StringSliceVar(&o.AvailabilityZones, "availability-zones", nil, "availability zones (default: the region's first)")
	f.StringVar(&o.S3URI, "s3-uri", "", "where assets and templates are uploaded: s3://bucket/prefix (required)")
	f.StringVar(&o.KMSKeyARN, "kms-key-arn", "", "KMS key that encrypts sensitive values")
	f.StringVar(&o.KeyName, "key-name", "", "EC2 key pair for SSH")
	f.StringVar(&o.KubernetesVersion, "kubernetes-version", "", "Kubernetes version (default: the newest supported)")
	f.StringVar(&o.VPCCIDR, "vpc-cidr", "", "CIDR of the new VPC")
	f.StringVar(&o.NodePoolName, "node-pool-name", "", "name of the first node pool (default workers)")
	f.StringVar(&o.NodePoolInstanceType, "node-pool-instance-type", "", "instance type of the first node pool")
	f.IntVar(&o.NodePoolMinSize, "node-pool-min-size", 0, "minimum size of the first node pool")
	f.IntVar(&o.NodePoolMaxSize, "node-pool-max-size", 0, "maximum size of the first node pool")
	f.StringVar(&o.DNSName, "dns-name", "", "DNS name of the API endpoint")
	f.StringVar(&o.HostedZoneID, "hosted-zone-id", "", "Route 53 hosted zone for the API endpoint's record")
	return cmd
}
