//go:build e2ecluster

package cluster

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// checkRestore proves docs/etcd.md's snapshot and restore on the booted
// members: a Secret written before a snapshot, the snapshot taken by the
// members' own unit and stored in the bucket, a Secret written after it,
// then the restore procedure's steps 2 to 4 run on every member as the
// document gives them. Step 1 (aws s3 cp) is the test's download put in each
// machine's /root: the harness's image has no AWS CLI. After the restore,
// etcd holds the first Secret and not the second. It changes the cluster's
// data under the API servers (step 5 is theirs to restart): run it last.
func (e *example) checkRestore(ctx context.Context, t *testing.T, cs *kubernetes.Clientset, members []string) {
	t.Helper()
	put := func(name string) {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{"k": name}}
		if _, err := cs.CoreV1().Secrets("default").Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	put("e2e-before-snapshot")

	// The timer's unit, started now on every member: the leader stores one.
	for _, id := range members {
		if _, err := e.inMachine(ctx, id, "systemctl", "start", "kube-aws-etcd-snapshot.service"); err != nil {
			t.Fatalf("snapshot unit on %s: %v", id, err)
		}
	}
	prefix := examplePrefix + "/etcd/snapshots/"
	out, err := e.s3.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(exampleBucket), Prefix: aws.String(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Contents) != 1 {
		t.Fatalf("%d snapshots under s3://%s/%s after every member ran the snapshot unit, want the leader's one", len(out.Contents), exampleBucket, prefix)
	}
	key := aws.ToString(out.Contents[0].Key)
	if !regexp.MustCompile(`/\d{8}T\d{6}Z-i-[0-9a-f]+\.db$`).MatchString(key) {
		t.Errorf("snapshot key %s is not <time>-<instance>.db", key)
	}
	obj, err := e.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(exampleBucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := io.ReadAll(obj.Body)
	obj.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("snapshot s3://%s/%s: %d bytes", exampleBucket, key, len(snap))
	put("e2e-after-snapshot")

	// Step 1: the snapshot on every member.
	for _, id := range members {
		m, err := e.machineOf(id)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(m.Root(), "root", "snapshot.db"), snap, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Step 2: stop etcd on every member before restoring any.
	for _, id := range members {
		if _, err := e.inMachine(ctx, id, "systemctl", "stop", "kube-aws-etcd-snapshot.timer", "etcd.service"); err != nil {
			t.Fatalf("step 2 on %s: %v", id, err)
		}
	}
	// Step 3, as docs/etcd.md gives it, with the example's cluster name.
	var initial []string
	for _, n := range []string{"etcd0", "etcd1", "etcd2"} {
		initial = append(initial, fmt.Sprintf("%s=https://%s.demo.internal:2380", n, n))
	}
	restore := `. /etc/kube-aws/facts.env
mv /var/lib/etcd/data /var/lib/etcd/data.before-restore
/usr/local/bin/etcdutl snapshot restore /root/snapshot.db \
  --name "$KUBE_AWS_FACT_ETCDMEMBER" \
  --initial-cluster ` + strings.Join(initial, ",") + ` \
  --initial-cluster-token demo \
  --initial-advertise-peer-urls "https://$KUBE_AWS_FACT_ETCDMEMBER.demo.internal:2380" \
  --data-dir /var/lib/etcd/data`
	for _, id := range members {
		if _, err := e.inMachine(ctx, id, "sh", "-ec", restore); err != nil {
			t.Fatalf("step 3 on %s: %v", id, err)
		}
	}
	// Step 4: start etcd on every member, then check the cluster.
	for _, id := range members {
		if _, err := e.inMachine(ctx, id, "systemctl", "start", "--no-block", "etcd.service", "kube-aws-etcd-snapshot.timer"); err != nil {
			t.Fatalf("step 4 on %s: %v", id, err)
		}
	}
	if err := eventually(ctx, "3 healthy members after the restore", func() error {
		out, err := e.etcdctl(ctx, members[0], "endpoint", "health", "--cluster")
		if err != nil {
			return err
		}
		if n := strings.Count(out, "is healthy"); n != 3 {
			return fmt.Errorf("%d healthy:\n%s", n, out)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	keys, err := e.etcdctl(ctx, members[1], "get", "/registry/secrets/default/", "--prefix", "--keys-only")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(keys, "/registry/secrets/default/e2e-before-snapshot") || strings.Contains(keys, "/registry/secrets/default/e2e-after-snapshot") {
		t.Fatalf("after the restore etcd holds:\n%s\nwant the Secret written before the snapshot and not the one written after", keys)
	}
	t.Logf("restored every member from the snapshot by docs/etcd.md: 3 members healthy, the data as it was at the snapshot")
}
