package engine

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// The service-account issuer's documents are published at their own keys
// under the s3URI, readable by anyone (AWS STS reads them without
// credentials), and a deploy that changes nothing does not upload them
// again.
func TestPublishDiscovery(t *testing.T) {
	f := newFixture(t, map[string]int{"a": 1})
	f.discovery = "https://" + f.bucket + ".s3.us-east-1.amazonaws.com/clusters/" + f.name + "/oidc"
	e := f.engine()
	tgt := f.render()
	f.mustDeploy(e, tgt)
	ctx := context.Background()
	for _, key := range []string{"oidc/.well-known/openid-configuration", "oidc/keys.json"} {
		full := "clusters/" + f.name + "/" + key
		obj, err := f.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(f.bucket), Key: aws.String(full)})
		if err != nil {
			t.Fatalf("%s: %v", full, err)
		}
		body, _ := io.ReadAll(obj.Body)
		obj.Body.Close()
		if aws.ToString(obj.ContentType) != "application/json" {
			t.Errorf("%s: content type %q", full, aws.ToString(obj.ContentType))
		}
		if key == "oidc/.well-known/openid-configuration" && !strings.Contains(string(body), f.discovery) {
			t.Errorf("%s: %s", full, body)
		}
		acl, err := f.s3.GetObjectAcl(ctx, &s3.GetObjectAclInput{Bucket: aws.String(f.bucket), Key: aws.String(full)})
		if err != nil {
			t.Fatal(err)
		}
		public := false
		for _, g := range acl.Grants {
			if g.Grantee != nil && aws.ToString(g.Grantee.URI) == "http://acs.amazonaws.com/groups/global/AllUsers" && g.Permission == s3types.PermissionRead {
				public = true
			}
		}
		if !public {
			t.Errorf("%s is not readable by AllUsers: %+v", full, acl.Grants)
		}
	}
	before := strings.Count(f.events.text(), "published oidc/")
	if before != 2 {
		t.Errorf("first deploy published %d documents, want 2:\n%s", before, f.events.text())
	}
	f.mustDeploy(e, tgt)
	if after := strings.Count(f.events.text(), "published oidc/"); after != before {
		t.Errorf("an unchanged deploy published the documents again (%d events, was %d)", after, before)
	}
}

// Destroy deletes the published documents: nothing of a destroyed cluster
// stays public; a second destroy finds them gone and does not fail.
func TestDestroyUnpublishesDiscovery(t *testing.T) {
	f := newFixture(t, map[string]int{"a": 1})
	f.discovery = "https://" + f.bucket + ".s3.us-east-1.amazonaws.com/clusters/" + f.name + "/oidc"
	e := f.engine()
	tgt := f.render()
	f.mustDeploy(e, tgt)
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if _, err := e.Destroy(ctx, tgt); err != nil {
			t.Fatalf("destroy %d: %v", i+1, err)
		}
	}
	for _, key := range []string{"oidc/.well-known/openid-configuration", "oidc/keys.json"} {
		full := "clusters/" + f.name + "/" + key
		if _, err := f.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(f.bucket), Key: aws.String(full)}); err == nil {
			t.Errorf("%s is still there after destroy", full)
		}
	}
}
