package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/kube-aws/kube-aws/core/config"
)

// LockInfo is the body of the deploy lock object.
type LockInfo struct {
	Who       string    `json:"who"`
	Since     time.Time `json:"since"`
	Operation string    `json:"operation"`
}

// LockedError is returned when another deploy of the cluster holds the lock.
type LockedError struct {
	Cluster string
	URI     string
	Holder  LockInfo
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("cluster %s is locked by another kube-aws %s: %s since %s (lock %s); wait for it to finish, or, if it is dead, rerun with --force-unlock",
		e.Cluster, e.Holder.Operation, e.Holder.Who, e.Holder.Since.UTC().Format(time.RFC3339), e.URI)
}

func lockKey(loc location) string { return loc.key("deploy.lock") }

// lock takes the deploy lock: an S3 object created with a conditional write
// (If-None-Match: *), so that of two deploys racing exactly one creates it.
// The returned release deletes it, only if it is still ours.
func (e *Engine) lock(ctx context.Context, p *prepared, op string) (func(), error) {
	key := lockKey(p.loc)
	info := LockInfo{Who: e.opts.Who, Since: time.Now().UTC().Truncate(time.Second), Operation: op}
	body, _ := json.Marshal(info)
	for attempt := 0; ; attempt++ {
		_, err := e.s3.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(p.loc.Bucket), Key: aws.String(key),
			Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body))),
			ContentType: aws.String("application/json"),
			IfNoneMatch: aws.String("*"),
		})
		if err == nil {
			break
		}
		switch apiCode(err) {
		case "PreconditionFailed":
			holder, herr := e.readLock(ctx, p.loc)
			if herr != nil {
				if apiCode(herr) == "NoSuchKey" && attempt < 3 {
					continue // released between our write and our read
				}
				return nil, fmt.Errorf("cluster %s is locked (s3://%s/%s) and reading who holds it failed: %w", p.cluster, p.loc.Bucket, key, herr)
			}
			return nil, &LockedError{Cluster: p.cluster, URI: "s3://" + p.loc.Bucket + "/" + key, Holder: *holder}
		case "ConditionalRequestConflict":
			if attempt < 3 {
				continue // a concurrent write to the key: ask again
			}
		case "NoSuchBucket":
			if e.opts.CreateBucket && attempt == 0 {
				if err := e.createBucket(ctx, p); err != nil {
					return nil, err
				}
				continue
			}
			return nil, noBucket(p.loc.Bucket, err)
		}
		return nil, fmt.Errorf("taking the deploy lock s3://%s/%s: %w", p.loc.Bucket, key, err)
	}
	e.report(Event{Kind: EventLock, Message: fmt.Sprintf("locked s3://%s/%s for %s by %s", p.loc.Bucket, key, op, info.Who)})
	return func() {
		// Release even when the deploy was cancelled or timed out.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		cur, err := e.readLock(ctx, p.loc)
		if err != nil || cur.Who != info.Who || !cur.Since.Equal(info.Since) {
			return // someone force-unlocked and locked again: not ours to delete
		}
		if _, err := e.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(p.loc.Bucket), Key: aws.String(key)}); err != nil {
			e.say("", "could not release the deploy lock s3://%s/%s: %v; the next run needs --force-unlock", p.loc.Bucket, key, err)
			return
		}
		e.report(Event{Kind: EventLock, Message: fmt.Sprintf("released s3://%s/%s", p.loc.Bucket, key)})
	}, nil
}

func (e *Engine) createBucket(ctx context.Context, p *prepared) error {
	in := &s3.CreateBucketInput{Bucket: aws.String(p.loc.Bucket)}
	if p.region != "us-east-1" {
		// us-east-1 is the default and refuses to be named as a constraint.
		in.CreateBucketConfiguration = &s3types.CreateBucketConfiguration{LocationConstraint: s3types.BucketLocationConstraint(p.region)}
	}
	if _, err := e.s3.CreateBucket(ctx, in); err != nil && apiCode(err) != "BucketAlreadyOwnedByYou" {
		return fmt.Errorf("creating bucket %s of cluster.yaml s3URI: %w", p.loc.Bucket, err)
	}
	e.say("", "created bucket s3://%s", p.loc.Bucket)
	return nil
}

func (e *Engine) readLock(ctx context.Context, loc location) (*LockInfo, error) {
	out, err := e.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(loc.Bucket), Key: aws.String(lockKey(loc))})
	if err != nil {
		return nil, err
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, err
	}
	var info LockInfo
	if err := json.Unmarshal(b, &info); err != nil {
		return &LockInfo{Who: "unknown (unreadable lock: " + err.Error() + ")"}, nil
	}
	return &info, nil
}

// LockHolder says who holds the deploy lock of the cluster, or nil when
// nobody does.
func (e *Engine) LockHolder(ctx context.Context, c *config.Cluster) (*LockInfo, error) {
	loc, err := parseS3URI(c.S3URI)
	if err != nil {
		return nil, err
	}
	info, err := e.readLock(ctx, loc)
	if err != nil {
		if apiCode(err) == "NoSuchKey" {
			return nil, nil
		}
		return nil, fmt.Errorf("reading the deploy lock s3://%s/%s: %w", loc.Bucket, lockKey(loc), err)
	}
	return info, nil
}

// Unlock removes the deploy lock whoever holds it (--force-unlock). Use it
// only when the holder is known to be dead.
func (e *Engine) Unlock(ctx context.Context, c *config.Cluster) error {
	loc, err := parseS3URI(c.S3URI)
	if err != nil {
		return err
	}
	if _, err := e.s3.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(loc.Bucket), Key: aws.String(lockKey(loc))}); err != nil {
		return fmt.Errorf("removing the deploy lock s3://%s/%s: %w", loc.Bucket, lockKey(loc), err)
	}
	e.say("", "removed the deploy lock s3://%s/%s", loc.Bucket, lockKey(loc))
	return nil
}

// IsLocked reports whether err says the cluster is locked by another deploy.
func IsLocked(err error) bool {
	var le *LockedError
	return errors.As(err, &le)
}
