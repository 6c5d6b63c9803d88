//go:build e2ecluster

package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/test/awstest"
	"github.com/kube-aws/kube-aws/test/builtintest"
	"github.com/kube-aws/kube-aws/test/machines"
)

// bootCluster is the smallest cluster kube-aws deploys: one controller, one
// etcd member, one node pool of one, in one public subnet, with the proof
// plugin's plans for the pool.
const bootCluster = `clusterName: proof
region: us-east-1
availabilityZones: [us-east-1a]
s3URI: s3://kube-aws-boot/clusters/proof
network:
  vpcCIDR: 10.44.0.0/16
  subnets:
    - {name: public-us-east-1a, availabilityZone: us-east-1a, cidr: 10.44.1.0/24}
controller: {count: 1}
etcd: {count: 1}
nodePools:
  - {name: proof, minSize: 1, maxSize: 1}
plugins:
  # moto takes every ELBv2 load balancer for an application one (no TCP).
  cloudformation: {values: {apiLoadBalancer: classic}}
  proof: {enabled: true}
`

// TestKubeAWSNodeBoots runs `kube-aws up` of a small cluster against the
// harness's moto; the harness boots the node pool's instance from its launch
// template (builtin/internal/bootstrap), which downloads kube-aws-node from
// the bucket and execs `kube-aws-node boot`: it fetches the role's userdata,
// writes its files, substitutes the fact marker (secrets step), starts the
// unit, and reports phase booted in its status object.
func TestKubeAWSNodeBoots(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	t0 := time.Now()

	// kube-aws as make build lays it out, and the proof plugin.
	root, err := awstest.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	cluster := filepath.Join(dir, "cluster")
	for _, b := range []struct{ out, pkg string }{
		{filepath.Join(bin, "kube-aws"), "./cmd/kube-aws"},
		{filepath.Join(bin, "kube-aws-plugins", "libexec", "kube-aws-builtins"), "./cmd/kube-aws-builtins"},
		{filepath.Join(bin, "kube-aws-plugins", "libexec", "kube-aws-node-linux-amd64"), "./cmd/kube-aws-node"},
		{filepath.Join(cluster, "plugins", "proof", "proof"), "./test/e2e/cluster/testdata/proof"},
	} {
		if err := os.MkdirAll(filepath.Dir(b.out), 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-trimpath", "-o", b.out}, strings.Fields(b.pkg)...)...)
		cmd.Dir, cmd.Env = root, append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", b.pkg, err, out)
		}
	}
	builtintest.Link(t, filepath.Join(bin, "kube-aws-plugins"), "apiserver", "cloudformation", "deploy", "helm", "iam", "userdata")
	if err := os.WriteFile(filepath.Join(cluster, "cluster.yaml"), []byte(bootCluster), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("kube-aws built in %v", time.Since(t0).Round(time.Millisecond))

	url, stop, err := awstest.StartServer()
	if err != nil {
		t.Fatal(err)
	}
	remove := machines.AtExit(stop)
	cfg := aws.Config{Region: awstest.Region, Credentials: awstest.Credentials(), BaseEndpoint: aws.String(url)}
	s3c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	if err := awstest.WarmUp(ctx, url); err != nil {
		t.Fatal(err)
	}
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("kube-aws-boot")}); err != nil {
		t.Fatal(err)
	}
	h, err := machines.Start(ctx, machines.Options{AWS: cfg, Moto: strings.TrimPrefix(url, "http://"), Log: os.Stderr})
	if err != nil {
		remove()
		stop()
		t.Fatal(err)
	}
	if pid, ok := awstest.PID(url); ok {
		if err := h.Adopt(pid); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		h.Hold()
		if err := h.Close(t.Failed()); err != nil {
			t.Errorf("teardown: %v", err)
		}
		remove()
		stop()
	})

	up := time.Now()
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "kube-aws"), "up", "--endpoint-url", url, "--region", awstest.Region)
	cmd.Dir = cluster
	cmd.Env = append(os.Environ(), "AWS_ACCESS_KEY_ID=testing", "AWS_SECRET_ACCESS_KEY=testing", "CI=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kube-aws up: %v\n%s", err, out)
	}
	t.Logf("kube-aws up took %v", time.Since(up).Round(time.Millisecond))

	// The pool's machine reports through its status object.
	prefix := "clusters/proof/" + "status/nodepool-proof/"
	var st nodeplan.Status
	deadline := time.Now().Add(5 * time.Minute)
	for {
		st, err = readStatus(ctx, s3c, prefix)
		if err == nil && (st.Phase == nodeplan.PhaseBooted || st.Phase == nodeplan.PhaseReady || st.Phase == nodeplan.PhaseFailed) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no final status under s3://kube-aws-boot/%s after 5 min (last: %+v, %v); machine logs: %s", prefix, st, err, string(h.Logs))
		}
		time.Sleep(time.Second)
	}
	if st.Phase == nodeplan.PhaseFailed {
		t.Fatalf("kube-aws-node boot failed at %s: %s", st.Step, st.Error)
	}
	t.Logf("node pool machine %s (%s) booted %.1f s after it started (%v after kube-aws up began)", st.InstanceID, st.Address, st.Seconds, time.Since(up).Round(time.Millisecond))
	if st.Role != "nodepool-proof" || st.Address == "" || st.Step != "runcmd done" {
		t.Errorf("status %+v: want role nodepool-proof, its address, and runcmd done", st)
	}
	// The unit ran with the file whose fact marker the secrets step
	// substituted: the machine's own address.
	m, ok := h.Player().Machine(st.InstanceID)
	if !ok {
		t.Fatalf("no machine for %s", st.InstanceID)
	}
	var got []byte
	for wait := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		if got, err = os.ReadFile(filepath.Join(m.Root(), "var/lib/kube-aws-proof")); err == nil || time.Now().After(wait) {
			break
		}
	}
	if string(got) != st.Address+"\n" {
		t.Errorf("/var/lib/kube-aws-proof = %q (%v), want the machine's address %s", got, err, st.Address)
	}
}

// readStatus reads the one status object under prefix.
func readStatus(ctx context.Context, c *s3.Client, prefix string) (nodeplan.Status, error) {
	var st nodeplan.Status
	l, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("kube-aws-boot"), Prefix: aws.String(prefix)})
	if err != nil {
		return st, err
	}
	if len(l.Contents) != 1 {
		return st, fmt.Errorf("%d status objects", len(l.Contents))
	}
	out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("kube-aws-boot"), Key: l.Contents[0].Key})
	if err != nil {
		return st, err
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal(b, &st)
}
