package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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

	"sigs.k8s.io/yaml"

	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
)

// uploadParallelism bounds concurrent S3 calls for assets: they are small
// and many, so more than the stack bound pays off.
const uploadParallelism = 8

// assets maps each rendered file to its content-addressed S3 key.
type assets struct {
	keys     map[string]string // rendered path -> key
	contents map[string][]byte // rendered path -> content
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
		contents[path] = b
		if isPublished(path) {
			continue // at its own key (publishDiscovery)
		}
		sum := sha256.Sum256(b)
		keys[path] = p.loc.key("assets", hex.EncodeToString(sum[:]))
		if role, ok := userDataRole(path); ok {
			// Readable only by the role (its instance profile's policy).
			keys[path] = p.loc.key("roles", role, "userdata", hex.EncodeToString(sum[:]))
		}
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
	a := &assets{keys: keys, contents: contents}
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

// roleSecrets lists the secret markers in the files a userdata's secrets
// plan lists: those the role's machines substitute. Text that only looks
// like a marker elsewhere (a script mentioning one) is no secret.
func roleSecrets(userdata []byte) ([]string, error) {
	var doc struct {
		WriteFiles []struct {
			Path    string `json:"path"`
			Content string `json:"content"`
		} `json:"write_files"`
	}
	if err := yaml.Unmarshal(userdata, &doc); err != nil {
		return nil, fmt.Errorf("not a #cloud-config document: %w", err)
	}
	content := map[string]string{}
	for _, f := range doc.WriteFiles {
		content[f.Path] = f.Content
	}
	plan, ok := content[nodeplan.SecretsPath]
	if !ok {
		return nil, nil
	}
	var sp nodeplan.SecretsPlan
	if err := json.Unmarshal([]byte(plan), &sp); err != nil {
		return nil, fmt.Errorf("%s: %w", nodeplan.SecretsPath, err)
	}
	var out []string
	for _, f := range sp.Files {
		out = append(out, nodeplan.MarkerPattern.FindAllString(content[f.Path], -1)...)
	}
	return out, nil
}

// uploadSecrets encrypts, for every role, each secret its userdata names
// with the cluster's KMS key under the role's encryption context
// (names.EncryptionContext) and uploads the
// ciphertext to <prefix>/roles/<role>/secrets/<sha256 of the marker>, where
// only that role's machines may read it and only they can decrypt it.
// KMS ciphertext differs on every call, so "already there" means: the
// stored ciphertext decrypts, under that context, to the same plain text.
// Plain text stays in memory; errors and events name markers, never values.
func (e *Engine) uploadSecrets(ctx context.Context, p *prepared, a *assets) error {
	type item struct{ role, marker string }
	var items []item
	for path, content := range a.contents {
		var role string
		var markers []string
		if path == names.ChartsIndexFile {
			// The controllers' add-ons step substitutes the markers of the
			// release values itself, with the controller role's secrets.
			role, markers = names.RoleController, nodeplan.MarkerPattern.FindAllString(string(content), -1)
		} else {
			var ok bool
			if role, ok = userDataRole(path); !ok {
				continue
			}
			var err error
			if markers, err = roleSecrets(content); err != nil {
				return fmt.Errorf("the userdata of %s (%s): %w; run `kube-aws render` again", role, path, err)
			}
		}
		seen := map[string]bool{}
		for _, m := range markers {
			if seen[m] {
				continue
			}
			seen[m] = true
			if _, ok := p.t.Secrets[m]; !ok {
				return fmt.Errorf("%s (for %s) names %s, which deploy was not given: run `kube-aws render` again (a plugin's secret was removed?)", path, role, m)
			}
			items = append(items, item{role, m})
		}
	}
	if len(items) == 0 {
		return nil
	}
	keyARN := p.t.Cluster.KMSKeyARN
	if keyARN == "" {
		return errors.New("the machines' userdata holds secrets but cluster.yaml has no kmsKeyArn to encrypt them with: set kmsKeyArn to a KMS key the nodes' roles may decrypt with")
	}
	sort.Slice(items, func(i, j int) bool {
		if items[i].role != items[j].role {
			return items[i].role < items[j].role
		}
		return items[i].marker < items[j].marker
	})
	return forEach(ctx, uploadParallelism, items, func(ctx context.Context, it item) error {
		plain := []byte(p.t.Secrets[it.marker])
		key := p.loc.key(nodeplan.SecretKey(it.role, it.marker))
		ec := names.EncryptionContext(p.t.Cluster.ClusterName, it.role)
		same, err := e.secretUnchanged(ctx, p.loc.Bucket, key, plain, ec)
		if err != nil {
			return fmt.Errorf("sensitive value %s for %s: checking s3://%s/%s: %w", it.marker, it.role, p.loc.Bucket, key, err)
		}
		if same {
			a.present.Add(1)
			return nil
		}
		enc, err := e.kms.Encrypt(ctx, &kms.EncryptInput{KeyId: aws.String(keyARN), Plaintext: plain, EncryptionContext: ec})
		if err != nil {
			return fmt.Errorf("sensitive value %s: encrypting with KMS key %s: %w; check kmsKeyArn and that you may use the key", it.marker, keyARN, err)
		}
		_, err = e.s3.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(p.loc.Bucket), Key: aws.String(key),
			Body: bytes.NewReader(enc.CiphertextBlob), ContentLength: aws.Int64(int64(len(enc.CiphertextBlob))),
		})
		if err != nil {
			return fmt.Errorf("sensitive value %s: uploading its ciphertext to s3://%s/%s: %w", it.marker, p.loc.Bucket, key, err)
		}
		a.uploaded.Add(1)
		e.report(Event{Kind: EventUpload, Message: fmt.Sprintf("uploaded encrypted %s for %s to s3://%s/%s", it.marker, it.role, p.loc.Bucket, key)})
		return nil
	})
}

func (e *Engine) secretUnchanged(ctx context.Context, bucket, key string, plain []byte, ec map[string]string) (bool, error) {
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
	dec, err := e.kms.Decrypt(ctx, &kms.DecryptInput{CiphertextBlob: blob, EncryptionContext: ec})
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
