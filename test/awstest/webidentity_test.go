package awstest

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
)

// The cluster's issuer as kube-aws names it (core/names.ServiceAccountIssuer):
// a folder of the cluster's bucket, virtual-hosted style.
const (
	oidcBucket   = "irsa-test-bucket"
	oidcIssuer   = "https://" + oidcBucket + ".s3." + Region + ".amazonaws.com/clusters/c1/oidc"
	oidcURL      = oidcBucket + ".s3." + Region + ".amazonaws.com/clusters/c1/oidc"
	oidcAudience = "sts.amazonaws.com"
	account      = "123456789012" // moto's default account
	podRole      = "c1-pod-web"
	podSubject   = "system:serviceaccount:web:app"
)

var oidcProviderARN = "arn:aws:iam::" + account + ":oidc-provider/" + oidcURL

// oidcStack is an IAM OIDC provider for url and a role its tokens of the
// service accounts web:app and web:other may assume, as kube-aws renders
// them; its outputs are the provider's Ref and Fn::GetAtt Arn.
func oidcStack(url string, clientIDs []string, tag string) string {
	cond := map[string]any{"StringEquals": map[string]any{
		oidcURL + ":aud": oidcAudience,
		oidcURL + ":sub": []string{podSubject, "system:serviceaccount:web:other"},
	}}
	t := map[string]any{
		"Resources": map[string]any{
			"Provider": map[string]any{"Type": "AWS::IAM::OIDCProvider", "Properties": map[string]any{
				"Url": url, "ClientIdList": clientIDs, "ThumbprintList": []string{strings.Repeat("a", 40)},
				"Tags": []any{map[string]any{"Key": "cluster", "Value": tag}}}},
			"Role": map[string]any{"Type": "AWS::IAM::Role", "Properties": map[string]any{
				"RoleName": podRole,
				"AssumeRolePolicyDocument": map[string]any{"Version": "2012-10-17", "Statement": []any{map[string]any{
					"Effect": "Allow", "Principal": map[string]any{"Federated": ref("Provider")},
					"Action": "sts:AssumeRoleWithWebIdentity", "Condition": cond}}}}},
		},
		"Outputs": map[string]any{
			"Ref": map[string]any{"Value": ref("Provider")},
			"Arn": map[string]any{"Value": map[string]any{"Fn::GetAtt": []string{"Provider", "Arn"}}},
		},
	}
	b, _ := json.Marshal(t)
	return string(b)
}

func (c clients) outputs(ctx context.Context, t *testing.T, stack string) map[string]string {
	t.Helper()
	out, err := c.cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
	if err != nil || len(out.Stacks) != 1 {
		t.Fatalf("DescribeStacks %s: %v, %v", stack, out, err)
	}
	m := map[string]string{}
	for _, o := range out.Stacks[0].Outputs {
		m[aws.ToString(o.OutputKey)] = aws.ToString(o.OutputValue)
	}
	return m
}

func (c clients) oidcProviders(ctx context.Context, t *testing.T) []string {
	t.Helper()
	out, err := c.iam.ListOpenIDConnectProviders(ctx, &iam.ListOpenIDConnectProvidersInput{})
	if err != nil {
		t.Fatal(err)
	}
	var arns []string
	for _, p := range out.OpenIDConnectProviderList {
		arns = append(arns, aws.ToString(p.Arn))
	}
	slices.Sort(arns)
	return arns
}

// testOIDCProviderStack: the stack's provider is IAM's (listed, its Ref
// and Arn its ARN, and the role's principal); an update changes its client
// ids and tags in place, a new Url replaces it; deleting the stack
// deletes it.
func testOIDCProviderStack(ctx context.Context, t *testing.T, c clients) {
	if _, err := c.cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("oidc"),
		TemplateBody: aws.String(oidcStack(oidcIssuer, []string{oidcAudience}, "a"))}); err != nil {
		t.Fatal(err)
	}
	if got := c.oidcProviders(ctx, t); !slices.Equal(got, []string{oidcProviderARN}) {
		t.Fatalf("OIDC providers %v, want the stack's %s", got, oidcProviderARN)
	}
	if out := c.outputs(ctx, t, "oidc"); out["Ref"] != oidcProviderARN || out["Arn"] != oidcProviderARN {
		t.Errorf("outputs %v; want Ref and Arn %s", out, oidcProviderARN)
	}
	role, err := c.iam.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(podRole)})
	if err != nil {
		t.Fatal(err)
	}
	// IAM answers the document URL-encoded.
	doc, err := url.QueryUnescape(aws.ToString(role.Role.AssumeRolePolicyDocument))
	if err != nil {
		t.Fatal(err)
	}
	var trust struct {
		Statement []struct{ Principal struct{ Federated string } }
	}
	if err := json.Unmarshal([]byte(doc), &trust); err != nil || len(trust.Statement) != 1 || trust.Statement[0].Principal.Federated != oidcProviderARN {
		t.Errorf("the role's trust policy %s (%v): want its principal the provider %s", doc, err, oidcProviderARN)
	}
	provider := func(arn string) *iam.GetOpenIDConnectProviderOutput {
		t.Helper()
		p, err := c.iam.GetOpenIDConnectProvider(ctx, &iam.GetOpenIDConnectProviderInput{OpenIDConnectProviderArn: aws.String(arn)})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := provider(oidcProviderARN); aws.ToString(p.Url) != oidcURL || !slices.Equal(p.ClientIDList, []string{oidcAudience}) ||
		len(p.ThumbprintList) != 1 || len(p.Tags) != 1 || aws.ToString(p.Tags[0].Value) != "a" {
		t.Errorf("provider %+v; want the template's url, client ids, thumbprint and tag", p)
	}

	update := func(url string, clientIDs []string, tag string) {
		t.Helper()
		if _, err := c.cf.UpdateStack(ctx, &cloudformation.UpdateStackInput{StackName: aws.String("oidc"),
			TemplateBody: aws.String(oidcStack(url, clientIDs, tag))}); err != nil {
			t.Fatal(err)
		}
	}
	update(oidcIssuer, []string{oidcAudience, "other"}, "b")
	if got := c.oidcProviders(ctx, t); !slices.Equal(got, []string{oidcProviderARN}) {
		t.Fatalf("OIDC providers after a client id update %v, want %s still", got, oidcProviderARN)
	}
	if p := provider(oidcProviderARN); !slices.Equal(p.ClientIDList, []string{oidcAudience, "other"}) || aws.ToString(p.Tags[0].Value) != "b" {
		t.Errorf("provider after the update %+v; want client ids [%s other] and tag b", p, oidcAudience)
	}

	moved := "https://" + oidcBucket + ".s3." + Region + ".amazonaws.com/clusters/c2/oidc"
	movedARN := "arn:aws:iam::" + account + ":oidc-provider/" + strings.TrimPrefix(moved, "https://")
	update(moved, []string{oidcAudience}, "b")
	if got := c.oidcProviders(ctx, t); !slices.Equal(got, []string{movedARN}) {
		t.Errorf("OIDC providers after a new Url %v, want only the replacement %s", got, movedARN)
	}
	if out := c.outputs(ctx, t, "oidc"); out["Ref"] != movedARN {
		t.Errorf("outputs after a new Url %v; want Ref %s", out, movedARN)
	}

	if _, err := c.cf.DeleteStack(ctx, &cloudformation.DeleteStackInput{StackName: aws.String("oidc")}); err != nil {
		t.Fatal(err)
	}
	if got := c.oidcProviders(ctx, t); len(got) != 0 {
		t.Errorf("OIDC providers after the stack's deletion: %v, want none", got)
	}
}

// keyID is the kid kube-apiserver gives its service-account signing key:
// base64url(sha256(DER PKIX public key)).
func keyID(t *testing.T, pub *rsa.PublicKey) string {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// signJWT is an RS256 JWT of claims, as kube-apiserver signs a projected
// service-account token.
func signJWT(t *testing.T, key *rsa.PrivateKey, kid string, claims map[string]any) string {
	t.Helper()
	enc := base64.RawURLEncoding
	h, _ := json.Marshal(map[string]any{"alg": "RS256", "kid": kid})
	p, _ := json.Marshal(claims)
	in := enc.EncodeToString(h) + "." + enc.EncodeToString(p)
	sum := sha256.Sum256([]byte(in))
	sig, err := rsa.SignPKCS1v15(nil, key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return in + "." + enc.EncodeToString(sig)
}

func (c clients) putPublic(ctx context.Context, t *testing.T, key string, body any) {
	t.Helper()
	b, _ := json.Marshal(body)
	if _, err := c.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(oidcBucket), Key: aws.String(key),
		Body: strings.NewReader(string(b)), ACL: s3types.ObjectCannedACLPublicRead}); err != nil {
		t.Fatal(err)
	}
}

// testWebIdentity: a pod's token for the role is verified as STS verifies
// it (its issuer, audience, time, key and signature, and the role's trust
// policy), against the discovery document and key set the cluster's
// bucket publishes; a good one gives credentials of the assumed role.
func testWebIdentity(ctx context.Context, t *testing.T, c clients) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	kid := keyID(t, &key.PublicKey)
	if _, err := c.cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("irsa"),
		TemplateBody: aws.String(oidcStack(oidcIssuer, []string{oidcAudience}, "a"))}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(oidcBucket)}); err != nil {
		t.Fatal(err)
	}
	prefix := "clusters/c1/oidc/"
	discovery := map[string]any{"issuer": oidcIssuer, "jwks_uri": oidcIssuer + "/keys.json",
		"response_types_supported": []string{"id_token"}, "subject_types_supported": []string{"public"},
		"id_token_signing_alg_values_supported": []string{"RS256"}}
	putDiscovery := func() { c.putPublic(ctx, t, prefix+".well-known/openid-configuration", discovery) }
	putDiscovery()
	enc := base64.RawURLEncoding
	c.putPublic(ctx, t, prefix+"keys.json", map[string]any{"keys": []any{map[string]any{
		"kty": "RSA", "use": "sig", "alg": "RS256", "kid": kid,
		"n": enc.EncodeToString(key.N.Bytes()), "e": enc.EncodeToString(big.NewInt(int64(key.E)).Bytes())}}})

	now := time.Now().Unix()
	good := func() map[string]any {
		return map[string]any{"iss": oidcIssuer, "aud": []string{oidcAudience}, "sub": podSubject,
			"iat": now, "nbf": now, "exp": now + 600,
			"kubernetes.io": map[string]any{"namespace": "web", "serviceaccount": map[string]any{"name": "app"}}}
	}
	with := func(k string, v any) map[string]any { m := good(); m[k] = v; return m }
	roleARN := "arn:aws:iam::" + account + ":role/" + podRole

	for _, tc := range []struct {
		name   string
		before func() // breaks what the case is about, after the cases above it
		token  string
		code   string // the error STS answers; "" for credentials
		says   string
		status int // its HTTP status, when not 400
	}{
		{name: "a good token", token: signJWT(t, key, kid, good())},
		{name: "a good token, aud a string", token: signJWT(t, key, kid, with("aud", oidcAudience))},
		{name: "another allowed service account", token: signJWT(t, key, kid, with("sub", "system:serviceaccount:web:other"))},
		{name: "another audience", token: signJWT(t, key, kid, with("aud", []string{"kubernetes"})),
			code: "InvalidIdentityToken", says: "Incorrect token audience"},
		{name: "an issuer with no provider", token: signJWT(t, key, kid, with("iss", "https://"+oidcBucket+".s3."+Region+".amazonaws.com/clusters/c9/oidc")),
			code: "InvalidIdentityToken", says: "No OpenIDConnect provider found in your account for https://" + oidcBucket},
		{name: "an unknown kid", token: signJWT(t, other, keyID(t, &other.PublicKey), good()),
			code: "InvalidIdentityToken", says: "Couldn't retrieve verification key"},
		{name: "signed by another key", token: signJWT(t, other, kid, good()),
			code: "InvalidIdentityToken", says: "signature does not verify"},
		{name: "expired", token: signJWT(t, key, kid, with("exp", now-60)),
			code: "ExpiredTokenException", says: "Token expired"},
		{name: "issued in the future", token: signJWT(t, key, kid, with("iat", now+3600)),
			code: "InvalidIdentityToken", says: "iat"},
		{name: "a service account the role does not trust", token: signJWT(t, key, kid, with("sub", "system:serviceaccount:web:intruder")),
			code: "AccessDenied", says: "Not authorized to perform sts:AssumeRoleWithWebIdentity", status: 403},
		{name: "not a JWT", token: "not-a-token", code: "InvalidIdentityToken", says: "not a JWT"},
		{name: "a private discovery document", token: signJWT(t, key, kid, good()), before: func() {
			b, _ := json.Marshal(discovery)
			if _, err := c.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(oidcBucket), Key: aws.String(prefix + ".well-known/openid-configuration"),
				Body: strings.NewReader(string(b))}); err != nil {
				t.Fatal(err)
			}
		}, code: "InvalidIdentityToken", says: "not publicly readable"},
		{name: "the discovery document missing", token: signJWT(t, key, kid, good()), before: func() {
			if _, err := c.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(oidcBucket), Key: aws.String(prefix + ".well-known/openid-configuration")}); err != nil {
				t.Fatal(err)
			}
		}, code: "InvalidIdentityToken", says: "openid-configuration is not there"},
		{name: "published again", token: signJWT(t, key, kid, good()), before: putDiscovery},
		{name: "the provider deleted", token: signJWT(t, key, kid, good()), before: func() {
			if _, err := c.iam.DeleteOpenIDConnectProvider(ctx, &iam.DeleteOpenIDConnectProviderInput{OpenIDConnectProviderArn: aws.String(oidcProviderARN)}); err != nil {
				t.Fatal(err)
			}
		}, code: "InvalidIdentityToken", says: "No OpenIDConnect provider found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.before != nil {
				tc.before()
			}
			// Pods call STS unsigned, with the token alone.
			out, err := c.sts.AssumeRoleWithWebIdentity(ctx, &sts.AssumeRoleWithWebIdentityInput{
				RoleArn: aws.String(roleARN), RoleSessionName: aws.String("pod-1"), WebIdentityToken: aws.String(tc.token)})
			if tc.code != "" {
				var ae smithy.APIError
				if !errors.As(err, &ae) || ae.ErrorCode() != tc.code || !strings.Contains(ae.ErrorMessage(), tc.says) {
					t.Errorf("AssumeRoleWithWebIdentity: %v, %v; want %s saying %q", out, err, tc.code, tc.says)
				}
				want := tc.status
				if want == 0 {
					want = 400
				}
				var re *awshttp.ResponseError
				if !errors.As(err, &re) || re.HTTPStatusCode() != want {
					t.Errorf("AssumeRoleWithWebIdentity: %v; want HTTP %d", err, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("AssumeRoleWithWebIdentity: %v", err)
			}
			wantARN := "arn:aws:sts::" + account + ":assumed-role/" + podRole + "/pod-1"
			var claims map[string]any
			b, _ := enc.DecodeString(strings.Split(tc.token, ".")[1])
			_ = json.Unmarshal(b, &claims)
			if aws.ToString(out.AssumedRoleUser.Arn) != wantARN || aws.ToString(out.SubjectFromWebIdentityToken) != claims["sub"] ||
				aws.ToString(out.Provider) != oidcProviderARN || aws.ToString(out.Audience) != oidcAudience {
				t.Errorf("answer: user %s, subject %s, provider %s, audience %s; want %s, %s, %s, %s",
					aws.ToString(out.AssumedRoleUser.Arn), aws.ToString(out.SubjectFromWebIdentityToken), aws.ToString(out.Provider), aws.ToString(out.Audience),
					wantARN, claims["sub"], oidcProviderARN, oidcAudience)
			}
			cr := out.Credentials
			cfg := c.cfg.Copy()
			cfg.Credentials = credentials.NewStaticCredentialsProvider(aws.ToString(cr.AccessKeyId), aws.ToString(cr.SecretAccessKey), aws.ToString(cr.SessionToken))
			id, err := sts.NewFromConfig(cfg).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
			if err != nil {
				t.Fatal(err)
			}
			if aws.ToString(id.Arn) != wantARN || aws.ToString(id.Account) != account || aws.ToString(id.UserId) != aws.ToString(out.AssumedRoleUser.AssumedRoleId) {
				t.Errorf("GetCallerIdentity with the credentials: %s %s %s; want %s in %s, user id %s",
					aws.ToString(id.Arn), aws.ToString(id.Account), aws.ToString(id.UserId), wantARN, account, aws.ToString(out.AssumedRoleUser.AssumedRoleId))
			}
		})
	}
}
