// Package etcdsnap is the `etcd-snapshot` step of the etcd members: it
// saves a snapshot of the member's data with etcd's own client (which
// checks the snapshot's integrity hash) and uploads it to
// etcd/snapshots/ in the cluster's bucket, encrypted with the cluster's KMS
// key (SSE-KMS). Run on every member by a timer, only the leader uploads,
// so each run makes one snapshot of the cluster.
package etcdsnap

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/client/v3/snapshot"
	"go.uber.org/zap"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/etcdclient"
)

// Options tune the step.
type Options struct {
	// AnyMember uploads from this member even when it is not the leader.
	AnyMember bool
	// Timeout bounds the snapshot and its upload.
	Timeout time.Duration
	// Now names the snapshot; time.Now when nil.
	Now func() time.Time
}

// Run is the step. It returns the key of the snapshot ("" when this
// member is not the leader).
func Run(ctx context.Context, e *agent.Env, o Options) (string, error) {
	var plan nodeplan.GoalPlan
	found, err := e.Plan(nodeplan.GoalPath, &plan)
	if err != nil {
		return "", err
	}
	if !found || plan.Etcd == nil {
		return "", agent.BadInput(fmt.Errorf("etcd-snapshot runs on etcd members: %s has no etcd section", nodeplan.GoalPath))
	}
	if e.Settings.KMSKeyARN == "" {
		return "", agent.BadInput(fmt.Errorf("%s is not set: snapshots are stored encrypted with the cluster's KMS key", nodeplan.EnvKMSKeyARN))
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	cfg, err := etcdclient.Config(e, plan.Etcd)
	if err != nil {
		return "", err
	}
	// The member this machine runs only.
	cfg.Endpoints = cfg.Endpoints[:1]
	cli, err := clientv3.New(cfg)
	if err != nil {
		return "", err
	}
	st, err := cli.Status(ctx, cfg.Endpoints[0])
	cli.Close()
	if err != nil {
		return "", fmt.Errorf("etcd member %s: %w", cfg.Endpoints[0], err)
	}
	if !o.AnyMember && st.Leader != st.Header.MemberId {
		e.Logf("member %x is not the leader (%x is): the leader takes the snapshot", st.Header.MemberId, st.Leader)
		return "", nil
	}
	dir := e.Path(filepath.Join(nodeplan.StateDir, "etcd-snapshots"))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	at := now().UTC()
	name := fmt.Sprintf("%s-%s.db", at.Format("20060102T150405Z"), e.Facts[nodeplan.FactInstanceID])
	file := filepath.Join(dir, name)
	defer os.Remove(file)
	started := time.Now()
	version, err := snapshot.SaveWithVersion(ctx, zap.NewNop(), cfg, file)
	if err != nil {
		return "", fmt.Errorf("saving a snapshot of %s: %w", cfg.Endpoints[0], err)
	}
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", err
	}
	key := e.Settings.Key(nodeplan.SnapshotPrefix + name)
	_, err = e.Store.S3.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(e.Settings.Bucket), Key: aws.String(key), Body: f, ContentLength: aws.Int64(info.Size()),
		ServerSideEncryption: s3types.ServerSideEncryptionAwsKms, SSEKMSKeyId: aws.String(e.Settings.KMSKeyARN),
		Metadata: map[string]string{"etcd-version": version, "etcd-revision": fmt.Sprint(st.Header.Revision), "etcd-member": fmt.Sprintf("%x", st.Header.MemberId)},
	})
	if err != nil {
		return "", fmt.Errorf("uploading the snapshot to s3://%s/%s: %w", e.Settings.Bucket, key, err)
	}
	e.Logf("snapshot of revision %d (etcd %s, %d bytes) stored at s3://%s/%s, encrypted with %s, in %s",
		st.Header.Revision, version, info.Size(), e.Settings.Bucket, key, e.Settings.KMSKeyARN, time.Since(started).Round(time.Millisecond))
	return key, nil
}
