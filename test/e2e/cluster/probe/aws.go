package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// awsReport is what the probe's AWS SDK made of the pod's environment
// (PROBE_AWS): the role the webhook named, the claims of the token it
// mounted, and who STS says the SDK's default credential chain is.
type awsReport struct {
	RoleARN   string   `json:"roleArn,omitempty"`
	TokenFile string   `json:"tokenFile,omitempty"`
	Issuer    string   `json:"iss,omitempty"`
	Audience  []string `json:"aud,omitempty"`
	Subject   string   `json:"sub,omitempty"`
	KeyID     string   `json:"kid,omitempty"`
	// STS is the pod's STS endpoint setting, if any.
	STS    string `json:"sts,omitempty"`
	Caller string `json:"caller,omitempty"`
	Error  string `json:"error,omitempty"`
}

// whoAmI asks STS who the SDK's default chain is, exactly as an add-on's
// SDK would find its credentials: with the web-identity settings if the
// pod has them, else whatever else the chain finds (the metadata service,
// which answers no pod).
func whoAmI(wait time.Duration) *awsReport {
	r := &awsReport{RoleARN: os.Getenv("AWS_ROLE_ARN"), TokenFile: os.Getenv("AWS_WEB_IDENTITY_TOKEN_FILE"), STS: os.Getenv("AWS_ENDPOINT_URL_STS")}
	if r.TokenFile != "" {
		if tok, err := os.ReadFile(r.TokenFile); err == nil {
			r.Issuer, r.Audience, r.Subject, r.KeyID = claims(strings.TrimSpace(string(tok)))
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	out, err := sts.NewFromConfig(cfg).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		r.Error = err.Error()
		return r
	}
	r.Caller = aws.ToString(out.Arn)
	return r
}

// claims reads a JWT's issuer, audience, subject and key id without
// verifying it: STS verifies; the test compares what the token claims with
// what the OIDC provider and the role trust.
func claims(token string) (iss string, aud []string, sub, kid string) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return "", nil, "", ""
	}
	var h struct {
		Kid string `json:"kid"`
	}
	if b, err := base64.RawURLEncoding.DecodeString(parts[0]); err == nil {
		_ = json.Unmarshal(b, &h)
	}
	var c struct {
		Iss string          `json:"iss"`
		Aud json.RawMessage `json:"aud"`
		Sub string          `json:"sub"`
	}
	if b, err := base64.RawURLEncoding.DecodeString(parts[1]); err == nil {
		_ = json.Unmarshal(b, &c)
	}
	if json.Unmarshal(c.Aud, &aud) != nil {
		var one string
		if json.Unmarshal(c.Aud, &one) == nil {
			aud = []string{one}
		}
	}
	return c.Iss, aud, c.Sub, h.Kid
}
