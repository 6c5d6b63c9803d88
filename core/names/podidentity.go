package names

import "strings"

// Pod IAM roles (IAM roles for service accounts, docs/security.md "Pods with
// IAM roles of their own"). The API server signs service-account tokens as
// the issuer ServiceAccountIssuer names; its OIDC discovery documents are
// published under OIDCPrefix in the cluster's bucket, where AWS STS reads
// them; an IAM OIDC provider trusts that issuer; and each pod role trusts
// the tokens of the service accounts cluster.yaml names. The controllers'
// pod identity webhook gives a pod whose service account names a role (one
// of the annotations below) a token for the audience PodRoleAudience, and
// the AWS SDK's environment for web identity, so the SDK's default chain
// assumes the role with the pod's own token.
const (
	// PodRoleARNAnnotation on a service account is the ARN of the role its
	// pods assume. It is the key EKS reads, so charts that let a user
	// annotate their service account for EKS work unchanged.
	PodRoleARNAnnotation = "eks.amazonaws.com/role-arn"
	// PodRoleNameAnnotation on a service account names one of the cluster's
	// pod roles by the name cluster.yaml (or a plugin) gives it: a chart
	// can write it without knowing the AWS account.
	PodRoleNameAnnotation = "iam.kube-aws.io/pod-role"
	// PodRoleAudience is the audience of the tokens pods present to STS:
	// the client id the IAM OIDC provider lists, and the "aud" condition
	// of every pod role's trust policy.
	PodRoleAudience = "sts.amazonaws.com"
	// PodRoleTokenDir and PodRoleTokenFile are where the webhook mounts a
	// pod's token (AWS_WEB_IDENTITY_TOKEN_FILE).
	PodRoleTokenDir  = "/var/run/secrets/sts.amazonaws.com/serviceaccount"
	PodRoleTokenFile = "token"
	// PodRoleTokenVolume is the name of the projected volume the webhook
	// adds; a pod that already has a volume of that name is left alone.
	PodRoleTokenVolume = "aws-iam-token"
	// PodIdentityWebhookPort is where each controller's webhook listens,
	// on 127.0.0.1 only: the API server on the same controller calls it.
	PodIdentityWebhookPort = 10271
	// PodIdentityWebhookConfiguration is the name of the
	// MutatingWebhookConfiguration that sends pod creations to it.
	PodIdentityWebhookConfiguration = "kube-aws-pod-identity"
	// OIDCPrefix is the folder under the cluster's s3URI that holds the
	// discovery document (OIDCDiscoveryPath) and the key set
	// (OIDCKeysPath); the render writes them to the same paths under the
	// output folder, and deploy publishes that folder as it is.
	OIDCPrefix        = "oidc"
	OIDCDiscoveryPath = ".well-known/openid-configuration"
	OIDCKeysPath      = "keys.json"
)

// PodRoleName is the IAM name of the cluster's pod role named role:
// <cluster>-pod-<role>. IAM allows 64 characters; the iam plugin refuses a
// longer one.
func PodRoleName(cluster, role string) string { return cluster + "-pod-" + role }

// Partition is the ARN partition of a region: aws, aws-cn or aws-us-gov.
func Partition(region string) string {
	switch {
	case strings.HasPrefix(region, "cn-"):
		return "aws-cn"
	case strings.HasPrefix(region, "us-gov-"):
		return "aws-us-gov"
	}
	return "aws"
}

// S3Host is the virtual-hosted name of bucket in region, on the partition's
// domain.
func S3Host(bucket, region string) string {
	domain := "amazonaws.com"
	if strings.HasPrefix(region, "cn-") {
		domain = "amazonaws.com.cn"
	}
	return bucket + ".s3." + region + "." + domain
}

// ServiceAccountIssuer is the issuer of the cluster's service-account
// tokens, an HTTPS URL that serves the OIDC discovery document: the folder
// OIDCPrefix under the cluster's s3URI (bucket and prefix), virtual-hosted
// style. The OIDC provider's URL is the same without "https://".
func ServiceAccountIssuer(bucket, prefix, region string) string {
	u := "https://" + S3Host(bucket, region)
	if p := strings.Trim(prefix, "/"); p != "" {
		u += "/" + p
	}
	return u + "/" + OIDCPrefix
}
