package engine

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/kube-aws/kube-aws/core/names"
)

// isPublished says whether a rendered file is one of the documents deploy
// publishes at a fixed, public key (the service-account issuer's OIDC
// discovery, names.OIDCPrefix) instead of a content-addressed asset.
func isPublished(path string) bool { return strings.HasPrefix(path, names.OIDCPrefix+"/") }

// publishDiscovery puts the rendered OIDC discovery documents at
// s3://<bucket>/<prefix>/oidc/..., where the service-account issuer says
// they are, readable by anyone: AWS STS fetches them without credentials
// to verify a pod's token. An object whose content is already there (its
// ETag is the MD5 of a single-part upload) is left alone.
func (e *Engine) publishDiscovery(ctx context.Context, p *prepared, contents map[string][]byte) (uploaded int, err error) {
	var paths []string
	for path := range contents {
		if isPublished(path) {
			paths = append(paths, path)
		}
	}
	sort.Strings(paths)
	for _, path := range paths {
		key := p.loc.key(path)
		body := contents[path]
		sum := md5.Sum(body)
		head, err := e.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(p.loc.Bucket), Key: aws.String(key)})
		if err == nil && strings.Trim(aws.ToString(head.ETag), `"`) == hex.EncodeToString(sum[:]) {
			continue
		}
		_, err = e.s3.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(p.loc.Bucket), Key: aws.String(key),
			Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body))),
			ContentType: aws.String("application/json"), ACL: s3types.ObjectCannedACLPublicRead,
		})
		if err != nil {
			switch apiCode(err) {
			case "AccessDenied", "AccessControlListNotSupported":
				return uploaded, fmt.Errorf("publishing %s to s3://%s/%s with a public-read ACL: %w; AWS STS reads the service-account issuer's documents there without credentials, "+
					"so the bucket must allow public ACLs: set its Object Ownership to ObjectWriter or BucketOwnerPreferred and turn off BlockPublicAcls "+
					"(aws s3api put-public-access-block --bucket %s ...), and allow s3:PutObjectAcl to whoever runs kube-aws up", path, p.loc.Bucket, key, err, p.loc.Bucket)
			}
			return uploaded, fmt.Errorf("publishing %s to s3://%s/%s: %w", path, p.loc.Bucket, key, err)
		}
		uploaded++
		e.report(Event{Kind: EventUpload, Message: fmt.Sprintf("published %s at s3://%s/%s (public-read: AWS STS reads it)", path, p.loc.Bucket, key)})
	}
	return uploaded, nil
}

// unpublishDiscovery deletes the published discovery documents (destroy);
// a document already gone is no error.
func (e *Engine) unpublishDiscovery(ctx context.Context, p *prepared) error {
	for _, path := range []string{names.OIDCPrefix + "/" + names.OIDCDiscoveryPath, names.OIDCPrefix + "/" + names.OIDCKeysPath} {
		key := p.loc.key(path)
		if _, err := e.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(p.loc.Bucket), Key: aws.String(key)}); err != nil {
			return fmt.Errorf("deleting the published s3://%s/%s: %w", p.loc.Bucket, key, err)
		}
		e.report(Event{Kind: EventUpload, Message: fmt.Sprintf("deleted s3://%s/%s", p.loc.Bucket, key)})
	}
	return nil
}
