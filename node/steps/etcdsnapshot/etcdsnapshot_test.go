package etcdsnapshot

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/etcdclient"
	"github.com/kube-aws/kube-aws/node/step"
	"github.com/kube-aws/kube-aws/test/agenttest"
	"github.com/kube-aws/kube-aws/test/etcdtest"
)

var motoURL string

func TestMain(m *testing.M) { agenttest.MotoMain(m, &motoURL) }

func writePlan(t *testing.T, e *agent.Env, g *nodeplan.EtcdGoal) {
	t.Helper()
	b, err := nodeplan.Encode(&nodeplan.GoalPlan{Etcd: g})
	if err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(e.Path(nodeplan.Dir), 0o755)
	os.WriteFile(e.Path(nodeplan.GoalPath), b, 0o644)
}

func TestSnapshot(t *testing.T) {
	e, out := agenttest.Machine(t, motoURL, "etcd", "etcd-snapshot")
	key, err := kms.NewFromConfig(e.AWS).CreateKey(t.Context(), &kms.CreateKeyInput{})
	if err != nil {
		t.Fatal(err)
	}
	e.Settings.KMSKeyARN = aws.ToString(key.KeyMetadata.Arn)
	m := etcdtest.Start(t, e.Root)
	writePlan(t, e, m.Goal())
	cfg, _ := etcdclient.Config(e, m.Goal())
	cli, err := clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.Put(t.Context(), "/registry/secrets/default/x", "value"); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 4, 5, 6, 0, time.UTC)
	s := &Step{Timeout: 30 * time.Second, Now: func() time.Time { return at }}

	// The dry run names the snapshot it would upload, and uploads nothing.
	lines, err := agenttest.DryRun(t, e, s)
	if err != nil || len(lines) != 1 || !strings.HasPrefix(lines[0], "upload s3://"+e.Settings.Bucket+"/clusters/demo/etcd/snapshots/20260301T040506Z-i-0123456789abcdef0.db: a snapshot of member ") ||
		!strings.HasSuffix(lines[0], " or later, encrypted with "+e.Settings.KMSKeyARN) {
		t.Errorf("dry run: %q %v", lines, err)
	}
	if list, err := e.Store.S3.ListObjectsV2(t.Context(), &s3.ListObjectsV2Input{Bucket: aws.String(e.Settings.Bucket), Prefix: aws.String("clusters/demo/etcd/")}); err != nil || len(list.Contents) != 0 {
		t.Errorf("the dry run uploaded %v (%v)", list.Contents, err)
	}

	changes, err := s.Check(t.Context(), e)
	if err != nil || len(changes) != 1 {
		t.Fatalf("%v %v\n%s", changes, err, out)
	}
	if err := s.Apply(t.Context(), e, changes); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := changes[0].Data.(*upload).key
	want := "clusters/demo/etcd/snapshots/20260301T040506Z-i-0123456789abcdef0.db"
	if got != want || changes[0].Target != "s3://"+e.Settings.Bucket+"/"+want {
		t.Errorf("key %s (%s), want %s", got, changes[0].Target, want)
	}
	head, err := e.Store.S3.HeadObject(t.Context(), &s3.HeadObjectInput{Bucket: aws.String(e.Settings.Bucket), Key: aws.String(got)})
	if err != nil {
		t.Fatal(err)
	}
	if head.ServerSideEncryption != "aws:kms" || aws.ToString(head.SSEKMSKeyId) != e.Settings.KMSKeyARN {
		t.Errorf("encryption %s with %s", head.ServerSideEncryption, aws.ToString(head.SSEKMSKeyId))
	}
	obj, _ := e.Store.S3.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(e.Settings.Bucket), Key: aws.String(got)})
	body, _ := io.ReadAll(obj.Body)
	if !strings.Contains(string(body), "/registry/secrets/default/x") || head.Metadata["etcd-revision"] == "" {
		t.Errorf("the snapshot (%d bytes, metadata %v) lacks the key written", len(body), head.Metadata)
	}
	entries, _ := os.ReadDir(e.Path(nodeplan.StateDir + "/etcd-snapshots"))
	if len(entries) != 0 {
		t.Errorf("local snapshot files left: %v", entries)
	}
}

func TestSnapshotRefusals(t *testing.T) {
	e, _ := agenttest.Machine(t, motoURL, "etcd", "etcd-snapshot")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	writePlan(t, e, &nodeplan.EtcdGoal{Endpoints: []string{"https://127.0.0.1:1"}, CACert: "/a", Cert: "/b", Key: "/c"})
	if err := step.Run(ctx, e, &Step{Timeout: time.Second}); err == nil || agent.ExitCode(err) != agent.ExitBadInput || !strings.Contains(err.Error(), nodeplan.EnvKMSKeyARN) {
		t.Errorf("no KMS key: %v", err)
	}
	b, _ := nodeplan.Encode(&nodeplan.GoalPlan{Node: &nodeplan.NodeGoal{Kubeconfig: "/k"}})
	os.WriteFile(e.Path(nodeplan.GoalPath), b, 0o644)
	e.Settings.KMSKeyARN = "arn:aws:kms:us-east-1:123456789012:key/x"
	if err := step.Run(ctx, e, &Step{Timeout: time.Second}); err == nil || !strings.Contains(err.Error(), "runs on etcd members") {
		t.Errorf("not an etcd member: %v", err)
	}
}
