package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// uploadParallelism bounds concurrent S3 calls for assets: they are small
// and many, so more than the stack bound pays off.
const uploadParallelism = 8

// assets maps each rendered file to its content-addressed S3 key.
type assets struct {
	keys     map[string]string // rendered path -> key
	uploaded atomic.Int64
	present  atomic.Int64
}

// assetKeys reads every rendered file and computes its key without
// touching S3 (Diff needs the keys; only Deploy uploads).
func assetKeys(p *prepared) (map[string]string, map[string][]byte, error) {
	paths := map[string]bool{}
	for _, f := range p.t.Rendered.Files {
		paths[f.Path] = true
	}
	if len(paths) == 0 {
		// No manifest given: everything in the render folder is an asset.
		err := filepath.WalkDir(p.t.Rendered.Dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			rel, err := filepath.Rel(p.t.Rendered.Dir, path)
			if err != nil {
				return err
			}
			paths[filepath.ToSlash(rel)] = true
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("listing the render output %s: %w", p.t.Rendered.Dir, err)
		}
	}
	for _, s := range p.t.Rendered.Stacks {
		paths[s.Template] = true
	}
	keys := map[string]string{}
	contents := map[string][]byte{}
	for path := range paths {
		b, err := os.ReadFile(filepath.Join(p.t.Rendered.Dir, filepath.FromSlash(path)))
		if err != nil {
			return nil, nil, fmt.Errorf("reading rendered file %s: %w; run `kube-aws render` again", path, err)
		}
		sum := sha256.Sum256(b)
		keys[path] = p.loc.key("assets", hex.EncodeToString(sum[:]))
		contents[path] = b
	}
	return keys, contents, nil
}

// uploadAssets puts every rendered file in S3 under its content-addressed
// key, unless an object is already there: same key, same content.
func (e *Engine) uploadAssets(ctx context.Context, p *prepared) (*assets, error) {
	keys, contents, err := assetKeys(p)
	if err != nil {
		return nil, err
	}
	a := &assets{keys: keys}
	byKey := map[string]string{} // key -> one path with that content
	for path, k := range keys {
		if prev, ok := byKey[k]; !ok || path < prev {
			byKey[k] = path
		}
	}
	ordered := make([]string, 0, len(byKey))
	for k := range byKey {
		ordered = append(ordered, k)
	}
	sort.Strings(ordered)
	err = forEach(ctx, uploadParallelism, ordered, func(ctx context.Context, key string) error {
		path := byKey[key]
		exists, err := e.objectExists(ctx, p.loc.Bucket, key)
		if err != nil {
			return fmt.Errorf("checking s3://%s/%s (%s): %w", p.loc.Bucket, key, path, err)
		}
		if exists {
			a.present.Add(1)
			return nil
		}
		_, err = e.s3.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(p.loc.Bucket), Key: aws.String(key),
			Body: bytes.NewReader(contents[path]), ContentLength: aws.Int64(int64(len(contents[path]))),
		})
		if err != nil {
			return fmt.Errorf("uploading %s to s3://%s/%s: %w", path, p.loc.Bucket, key, err)
		}
		a.uploaded.Add(1)
		e.report(Event{Kind: EventUpload, Message: fmt.Sprintf("uploaded %s to s3://%s/%s", path, p.loc.Bucket, key)})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return a, nil
}

func (e *Engine) objectExists(ctx context.Context, bucket, key string) (bool, error) {
	_, err := e.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err == nil {
		return true, nil
	}
	switch apiCode(err) {
	case "NotFound", "NoSuchKey", "404":
		return false, nil
	case "NoSuchBucket":
		return false, noBucket(bucket, err)
	}
	return false, err
}

func noBucket(bucket string, err error) error {
	return fmt.Errorf("S3 bucket %s of cluster.yaml s3URI does not exist (%w); create it (aws s3 mb s3://%s) or point s3URI at an existing bucket", bucket, err, bucket)
}

// uploadSecrets encrypts every sensitive value with the cluster's KMS key and
// uploads the ciphertext to <prefix>/secrets/<sha256 of the marker>, where the
// node finds it at boot. KMS ciphertext differs on every call, so "already
// there" means: the stored ciphertext decrypts to the same plain text.
// Plain text stays in memory; errors and events name markers, never values.
func (e *Engine) uploadSecrets(ctx context.Context, p *prepared, a *assets) error {
	if len(p.t.Secrets) == 0 {
		return nil
	}
	keyARN := p.t.Cluster.KMSKeyARN
	if keyARN == "" {
		return errors.New("cluster.yaml has sensitive values but no kmsKeyArn to encrypt them with: set kmsKeyArn to a KMS key the nodes' roles may decrypt with")
	}
	markers := make([]string, 0, len(p.t.Secrets))
	for m := range p.t.Secrets {
		markers = append(markers, m)
	}
	sort.Strings(markers)
	return forEach(ctx, uploadParallelism, markers, func(ctx context.Context, marker string) error {
		plain := []byte(p.t.Secrets[marker])
		key := secretKey(p.loc, marker)
		same, err := e.secretUnchanged(ctx, p.loc.Bucket, key, plain)
		if err != nil {
			return fmt.Errorf("sensitive value %s: checking s3://%s/%s: %w", marker, p.loc.Bucket, key, err)
		}
		if same {
			a.present.Add(1)
			return nil
		}
		enc, err := e.kms.Encrypt(ctx, &kms.EncryptInput{KeyId: aws.String(keyARN), Plaintext: plain})
		if err != nil {
			return fmt.Errorf("sensitive value %s: encrypting with KMS key %s: %w; check kmsKeyArn and that you may use the key", marker, keyARN, err)
		}
		_, err = e.s3.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(p.loc.Bucket), Key: aws.String(key),
			Body: bytes.NewReader(enc.CiphertextBlob), ContentLength: aws.Int64(int64(len(enc.CiphertextBlob))),
		})
		if err != nil {
			return fmt.Errorf("sensitive value %s: uploading its ciphertext to s3://%s/%s: %w", marker, p.loc.Bucket, key, err)
		}
		a.uploaded.Add(1)
		e.report(Event{Kind: EventUpload, Message: fmt.Sprintf("uploaded encrypted %s to s3://%s/%s", marker, p.loc.Bucket, key)})
		return nil
	})
}

// secretKey is where a sensitive value's ciphertext lives. The marker is
// hashed so that plugin names and JSON pointers need no escaping in keys.
func secretKey(loc location, marker string) string {
	sum := sha256.Sum256([]byte(marker))
	return loc.key("secrets", hex.EncodeToString(sum[:]))
}

func (e *Engine) secretUnchanged(ctx context.Context, bucket, key string, plain []byte) (bool, error) {
	out, err := e.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		switch apiCode(err) {
		case "NoSuchKey", "NotFound":
			return false, nil
		case "NoSuchBucket":
			return false, noBucket(bucket, err)
		}
		return false, err
	}
	defer out.Body.Close()
	blob, err := io.ReadAll(out.Body)
	if err != nil {
		return false, err
	}
	dec, err := e.kms.Decrypt(ctx, &kms.DecryptInput{CiphertextBlob: blob})
	if err != nil {
		// Undecryptable (another key, say): replace it.
		return false, nil
	}
	return bytes.Equal(dec.Plaintext, plain), nil
}

// forEach calls fn for every item, at most n at once, and returns the first
// error after every started call has returned.
func forEach[T any](ctx context.Context, n int, items []T, fn func(context.Context, T) error) error {
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, it := range items {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(ctx, it); err != nil {
				once.Do(func() { first = err; cancel() })
			}
		}()
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return first
}
