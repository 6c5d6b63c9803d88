// Package etcdsnapshot is the `etcd-snapshot` step of the etcd members: it
// saves a snapshot of the member's data with etcd's own client (which
// checks the snapshot's integrity hash) and uploads it to
// etcd/snapshots/ in the cluster's bucket, encrypted with the cluster's KMS
// key (SSE-KMS). Run on every member by a timer, only the leader uploads,
// so each run makes one snapshot of the cluster.
package etcdsnapshot

import (
	"context"
	"flag"
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
	"github.com/kube-aws/kube-aws/node/step"
)

// Step is the step.
type Step struct {
	// AnyMember uploads from this member even when it is not the leader.
	AnyMember bool
	// Timeout bounds asking the member for its status, and the snapshot
	// and its upload.
	Timeout time.Duration
	// Now names the snapshot; time.Now when nil.
	Now func() time.Time
}

// New is the step as kube-aws-node runs it.
func New() *Step { return &Step{} }

func (*Step) Name() string { return nodeplan.StepEtcdSnapshot }

func (s *Step) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&s.AnyMember, "any-member", false, "snapshot even when this member is not the leader")
	fs.DurationVar(&s.Timeout, "timeout", 10*time.Minute, "how long the snapshot and its upload may take")
}

// upload is the snapshot to take and where it goes.
type upload struct {
	cfg    clientv3.Config
	status *clientv3.StatusResponse
	name   string
	key    string
}

// Check asks the member whether it is the leader: only the leader's run
// takes a snapshot, named by the time and the instance.
func (s *Step) Check(ctx context.Context, e *agent.Env) (step.Changes, error) {
	var plan nodeplan.GoalPlan
	found, err := e.Plan(nodeplan.GoalPath, &plan)
	if err != nil {
		return nil, err
	}
	if !found || plan.Etcd == nil {
		return nil, agent.BadInput(fmt.Errorf("etcd-snapshot runs on etcd members: %s has no etcd section", nodeplan.GoalPath))
	}
	if e.Settings.KMSKeyARN == "" {
		return nil, agent.BadInput(fmt.Errorf("%s is not set: snapshots are stored encrypted with the cluster's KMS key", nodeplan.EnvKMSKeyARN))
	}
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	cfg, err := etcdclient.Config(e, plan.Etcd)
	if err != nil {
		return nil, err
	}
	// The member this machine runs only.
	cfg.Endpoints = cfg.Endpoints[:1]
	cli, err := clientv3.New(cfg)
	if err != nil {
		return nil, err
	}
	st, err := cli.Status(ctx, cfg.Endpoints[0])
	cli.Close()
	if err != nil {
		return nil, fmt.Errorf("etcd member %s: %w", cfg.Endpoints[0], err)
	}
	if !s.AnyMember && st.Leader != st.Header.MemberId {
		e.Logf("member %x is not the leader (%x is): the leader takes the snapshot", st.Header.MemberId, st.Leader)
		return nil, nil
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	name := fmt.Sprintf("%s-%s.db", now().UTC().Format("20060102T150405Z"), e.Facts[nodeplan.FactInstanceID])
	snap := &upload{cfg: cfg, status: st, name: name, key: e.Settings.Key(nodeplan.SnapshotPrefix + name)}
	return step.Changes{{Action: "upload", Target: "s3://" + e.Settings.Bucket + "/" + snap.key, Data: snap,
		Detail: fmt.Sprintf("a snapshot of member %x at revision %d or later, encrypted with %s", st.Header.MemberId, st.Header.Revision, e.Settings.KMSKeyARN)}}, nil
}

// Apply saves the snapshot with etcd's client and uploads it.
func (s *Step) Apply(ctx context.Context, e *agent.Env, changes step.Changes) error {
	snap := changes[0].Data.(*upload)
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	dir := e.Path(filepath.Join(nodeplan.StateDir, "etcd-snapshots"))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	file := filepath.Join(dir, snap.name)
	defer os.Remove(file)
	started := time.Now()
	version, err := snapshot.SaveWithVersion(ctx, zap.NewNop(), snap.cfg, file)
	if err != nil {
		return fmt.Errorf("saving a snapshot of %s: %w", snap.cfg.Endpoints[0], err)
	}
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	st := snap.status
	_, err = e.Store.S3.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(e.Settings.Bucket), Key: aws.String(snap.key), Body: f, ContentLength: aws.Int64(info.Size()),
		ServerSideEncryption: s3types.ServerSideEncryptionAwsKms, SSEKMSKeyId: aws.String(e.Settings.KMSKeyARN),
		Metadata: map[string]string{"etcd-version": version, "etcd-revision": fmt.Sprint(st.Header.Revision), "etcd-member": fmt.Sprintf("%x", st.Header.MemberId)},
	})
	if err != nil {
		return fmt.Errorf("uploading the snapshot to s3://%s/%s: %w", e.Settings.Bucket, snap.key, err)
	}
	e.Logf("snapshot of revision %d (etcd %s, %d bytes) stored at s3://%s/%s, encrypted with %s, in %s",
		st.Header.Revision, version, info.Size(), e.Settings.Bucket, snap.key, e.Settings.KMSKeyARN, time.Since(started).Round(time.Millisecond))
	return nil
}
