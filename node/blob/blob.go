// Package blob fetches what a machine needs from the cluster's bucket or
// an upstream URL and checks its sha256 before anything uses a byte of it
// (a Stream hands bytes on early, but never the end a consumer acts on
// before the check); verified files are kept in a cache by digest, so a
// second run fetches nothing. It also stores objects (the status).
package blob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/retry"
	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

// Store reads and writes one bucket, and downloads from upstream URLs.
type Store struct {
	S3     *s3.Client
	Bucket string
	// HTTP fetches upstream URLs (proxies from the environment).
	HTTP *http.Client
	// CacheDir keeps verified downloads, one file per sha256.
	CacheDir string

	fetching sync.Map // sha256 -> *sync.Mutex held while fetching it
}

// Source is one object to fetch: a full S3 Key or a URL, with its sha256.
type Source struct {
	Key    string
	URL    string
	SHA256 string
}

func (s Source) String() string {
	if s.URL != "" {
		return s.URL
	}
	return "s3://<bucket>/" + s.Key
}

// Get reads an object of at most limit bytes. A missing object is a
// permanent error: retrying will not make it appear.
func (st *Store) Get(ctx context.Context, key string, limit int64) ([]byte, error) {
	out, err := st.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(st.Bucket), Key: aws.String(key)})
	if err != nil {
		return nil, st.s3Error("reading", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(io.LimitReader(out.Body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading s3://%s/%s: %w", st.Bucket, key, err)
	}
	if int64(len(b)) > limit {
		return nil, retry.Permanent(fmt.Errorf("s3://%s/%s is larger than %d bytes", st.Bucket, key, limit))
	}
	return b, nil
}

// GetVerified reads a content-addressed object and checks its sha256.
func (st *Store) GetVerified(ctx context.Context, key, sum string, limit int64) ([]byte, error) {
	b, err := st.Get(ctx, key, limit)
	if err != nil {
		return nil, err
	}
	if got := nodeplan.SHA256Hex(b); got != sum {
		return nil, mismatch("s3://"+st.Bucket+"/"+key, got, sum)
	}
	return b, nil
}

// Put stores an object.
func (st *Store) Put(ctx context.Context, key string, body []byte, contentType string) error {
	_, err := st.S3.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(st.Bucket), Key: aws.String(key), Body: bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))), ContentType: aws.String(contentType),
	})
	if err != nil {
		return st.s3Error("writing", key, err)
	}
	return nil
}

// Cached returns the path of a verified copy of the object whose sha256 is
// sum in the cache, if there is one; it downloads nothing.
func (st *Store) Cached(sum string) (string, bool) {
	p := filepath.Join(st.CacheDir, sum)
	return p, nodeplan.IsSHA256(sum) && HasSum(p, sum)
}

// Fetch returns the path of a verified copy of src in the cache,
// downloading it when it is not there yet. A copy whose sha256 is wrong is
// never kept. Callers fetching the same sha256 at once (members of one
// archive installed side by side) share one download.
func (st *Store) Fetch(ctx context.Context, src Source) (string, error) {
	if !nodeplan.IsSHA256(src.SHA256) {
		return "", retry.Permanent(fmt.Errorf("%s: %q is not a sha256", src, src.SHA256))
	}
	unlock := st.lock(src.SHA256)
	defer unlock()
	if p, ok := st.Cached(src.SHA256); ok {
		return p, nil
	}
	dest := filepath.Join(st.CacheDir, src.SHA256)
	if err := os.MkdirAll(st.CacheDir, 0o700); err != nil {
		return "", err
	}
	tmp, err := st.download(ctx, src, st.CacheDir, ".download-*", false)
	if err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dest); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return dest, nil
}

// Install puts a verified copy of src at dest with mode perm, replacing
// the file there by a rename (a running binary is not changed under its
// process, and no one runs half a file). The download goes straight to a
// temporary file beside dest, hashed as it arrives: a file is written
// once, not written to the cache and read back, and one whose sha256 is
// wrong is removed before anything sees it at dest. A copy already in the
// cache is used instead of downloading.
func (st *Store) Install(ctx context.Context, src Source, dest string, perm os.FileMode) error {
	if !nodeplan.IsSHA256(src.SHA256) {
		return retry.Permanent(fmt.Errorf("%s: %q is not a sha256", src, src.SHA256))
	}
	if cached, ok := st.Cached(src.SHA256); ok {
		b, err := os.ReadFile(cached)
		if err != nil {
			return err
		}
		return fileutil.WriteAtomic(dest, b, perm)
	}
	dir := filepath.Dir(dest)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := st.download(ctx, src, dir, "."+filepath.Base(dest)+".tmp-*", true)
	if err != nil {
		return err
	}
	if err := os.Chmod(tmp, perm); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, dest); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// download writes src to a new file in dir named after pattern, checking
// its sha256 as it arrives, and returns the file's path once it is
// verified (and synced to disk when durable: a cached copy is checked
// again before use, an installed file is not); on any failure the file is
// removed.
func (st *Store) download(ctx context.Context, src Source, dir, pattern string, durable bool) (string, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	kept := false
	defer func() {
		if !kept {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	body, err := st.open(ctx, src)
	if err != nil {
		return "", err
	}
	defer body.Close()
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(f, h), body); err != nil {
		return "", fmt.Errorf("downloading %s: %w", st.where(src), err)
	}
	if err := checkSum(h, st.where(src), src.SHA256); err != nil {
		return "", err
	}
	if durable {
		if err := f.Sync(); err != nil {
			return "", err
		}
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	kept = true
	return f.Name(), nil
}

// lock serializes fetches of one sha256 and returns the unlock.
func (st *Store) lock(sum string) func() {
	m, _ := st.fetching.LoadOrStore(sum, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// open starts the download of src and returns its body.
func (st *Store) open(ctx context.Context, src Source) (io.ReadCloser, error) {
	if src.URL == "" {
		out, err := st.S3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(st.Bucket), Key: aws.String(src.Key)})
		if err != nil {
			return nil, st.s3Error("downloading", src.Key, err)
		}
		return out.Body, nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, src.URL, nil)
	if err != nil {
		return nil, retry.Permanent(err)
	}
	client := st.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("downloading %s: %w", src.URL, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		err := fmt.Errorf("downloading %s: HTTP %s", src.URL, resp.Status)
		if resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusGone {
			return nil, retry.Permanent(err)
		}
		return nil, err
	}
	return resp.Body, nil
}

// where names src in errors.
func (st *Store) where(src Source) string {
	if src.URL != "" {
		return src.URL
	}
	return "s3://" + st.Bucket + "/" + src.Key
}

// s3Error says what failed; a missing object or bucket is permanent.
func (st *Store) s3Error(verb, key string, err error) error {
	e := fmt.Errorf("%s s3://%s/%s: %w", verb, st.Bucket, key, err)
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "NoSuchKey", "NotFound", "NoSuchBucket":
			return retry.Permanent(e)
		}
	}
	return e
}

// checkSum compares the sha256 h computed with want.
func checkSum(h hash.Hash, where, want string) error {
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return mismatch(where, got, want)
	}
	return nil
}

func mismatch(where, got, want string) error {
	return retry.Permanent(fmt.Errorf("%s has sha256 %s, the plan says %s: it is not what kube-aws rendered and is not used (a corrupted or replaced object; deploy again)", where, got, want))
}

// HasSum reports whether the file at p exists with sha256 sum.
func HasSum(p, sum string) bool {
	got, err := fileutil.SHA256(p)
	return err == nil && got == sum
}

// IsNotFound reports whether err is a missing S3 object.
func IsNotFound(err error) bool {
	var api smithy.APIError
	return errors.As(err, &api) && (api.ErrorCode() == "NoSuchKey" || api.ErrorCode() == "NotFound")
}
