package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/stages"
	"github.com/kube-aws/kube-aws/test/awstest"
	"github.com/kube-aws/kube-aws/test/builtintest"
	"github.com/kube-aws/kube-aws/test/faultproxy"
)

// These tests run the real kube-aws and built-in plugin
// binaries, laid out as `make build` lays them out, against moto.

// awsLayout is a bin folder with every built-in plugin, and a cluster folder
// with cluster.yaml.example in it.
type awsLayout struct {
	t        *testing.T
	kubeAWS  string
	cluster  string
	endpoint string
	cfn      *cloudformation.Client
	// env is added to kube-aws's environment.
	env []string
}

func newAWSLayout(t *testing.T) *awsLayout {
	t.Helper()
	endpoint := awstest.Start(t)
	ctx := context.Background()
	if err := awstest.WarmUp(ctx, endpoint); err != nil {
		t.Fatal(err)
	}
	l := newExampleLayout(t)
	l.endpoint = endpoint
	cfg := aws.Config{Region: awstest.Region, Credentials: awstest.Credentials()}
	s3c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.BaseEndpoint = aws.String(endpoint); o.UsePathStyle = true })
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("kube-aws-demo-assets")}); err != nil {
		t.Fatal(err)
	}
	l.cfn = cloudformation.NewFromConfig(cfg, func(o *cloudformation.Options) { o.BaseEndpoint = aws.String(endpoint) })
	// The cluster's KMS key exists, as in an account (moto makes its own
	// ids): the pki plugin's generated secrets are encrypted with it.
	key, err := kms.NewFromConfig(cfg, func(o *kms.Options) { o.BaseEndpoint = aws.String(endpoint) }).CreateKey(ctx, &kms.CreateKeyInput{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(l.cluster, "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "kmsKeyArn: ") {
			line = "kmsKeyArn: " + aws.ToString(key.KeyMetadata.Arn)
		}
		lines = append(lines, line)
	}
	l.write(strings.Join(lines, "\n"))
	return l
}

// newExampleLayout is newAWSLayout without moto: enough for the commands
// that do not reach AWS (render, plugins).
func newExampleLayout(t *testing.T) *awsLayout {
	t.Helper()
	root := t.TempDir()
	bin := filepath.Join(root, "bin")
	l := &awsLayout{t: t, kubeAWS: filepath.Join(bin, "kube-aws"), cluster: filepath.Join(root, "cluster")}
	copyFile(t, plugintest.Build(t, "github.com/kube-aws/kube-aws/cmd/kube-aws"), l.kubeAWS)
	builtintest.Install(t, filepath.Join(bin, "kube-aws-plugins"), "apiserver", "cloudformation", "deploy", "etcd", "flannel", "helm", "iam", "kubernetes", "pki", "userdata")
	// Deploy uploads kube-aws-node for the machines' architecture (the
	// example's instance types are this machine's, amd64 on CI).
	copyFile(t, plugintest.Build(t, "github.com/kube-aws/kube-aws/cmd/kube-aws-node"),
		filepath.Join(bin, "kube-aws-plugins", "libexec", "kube-aws-node-linux-"+runtime.GOARCH))
	if err := os.MkdirAll(filepath.Join(bin, "kube-aws-plugins", "contrib"), 0o755); err != nil {
		t.Fatal(err)
	}
	// Deploy uploads the machines' program for every architecture the
	// bootstrap takes, as make build lays it out.
	for _, arch := range []string{"amd64", "arm64"} {
		copyFile(t, nodeAgent(t, arch), filepath.Join(bin, "kube-aws-plugins", "libexec", "kube-aws-node-linux-"+arch))
	}
	example, err := os.ReadFile(filepath.Join("..", "..", "cluster.yaml.example"))
	if err != nil {
		t.Fatal(err)
	}
	y := string(example)
	// moto gives hosted zones ids of its own, and takes every ELBv2 load
	// balancer for an application one (rejecting the API's TCP listener):
	// the same two changes make demo makes.
	var kept []string
	for _, line := range strings.Split(y, "\n") {
		if !strings.HasPrefix(line, "  hostedZoneId: ") {
			kept = append(kept, line)
		}
	}
	y = strings.Join(kept, "\n")
	anchor := "\n  cloudformation:\n    values:\n"
	if !strings.Contains(y, anchor) {
		t.Fatal("cluster.yaml.example has no plugins.cloudformation.values")
	}
	y = strings.Replace(y, anchor, anchor+"      apiLoadBalancer: classic\n", 1)
	if err := os.MkdirAll(l.cluster, 0o755); err != nil {
		t.Fatal(err)
	}
	l.write(y)
	return l
}

func (l *awsLayout) write(clusterYAML string) {
	l.t.Helper()
	if err := os.WriteFile(filepath.Join(l.cluster, "cluster.yaml"), []byte(clusterYAML), 0o644); err != nil {
		l.t.Fatal(err)
	}
}

func (l *awsLayout) edit(from, to string) {
	l.t.Helper()
	b, err := os.ReadFile(filepath.Join(l.cluster, "cluster.yaml"))
	if err != nil {
		l.t.Fatal(err)
	}
	if strings.Count(string(b), from) != 1 {
		l.t.Fatalf("cluster.yaml holds %q %d times, want once", from, strings.Count(string(b), from))
	}
	l.write(strings.Replace(string(b), from, to, 1))
}

func (l *awsLayout) command(ctx context.Context, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, l.kubeAWS, args...)
	c.Dir = l.cluster
	c.Env = awstest.CLIEnv()
	c.Env = append(c.Env, l.env...)
	return c
}

func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

func (l *awsLayout) run(args ...string) (stdout, stderr string, code int) {
	l.t.Helper()
	c := l.command(context.Background(), args...)
	var o, e bytes.Buffer
	c.Stdout, c.Stderr = &o, &e
	code = exitCode(l.t, c.Run())
	return o.String(), e.String(), code
}

// up runs kube-aws up and returns the deploy result it wrote to --outputs-file.
func (l *awsLayout) up(endpoint string) (*stage.DeployResult, string) {
	l.t.Helper()
	return l.upWith("--endpoint-url", endpoint)
}

func (l *awsLayout) upWith(args ...string) (*stage.DeployResult, string) {
	l.t.Helper()
	file := filepath.Join(l.t.TempDir(), "deploy.json")
	start := time.Now()
	stdout, stderr, code := l.run(append([]string{"up", "--outputs-file", file}, args...)...)
	l.t.Logf("kube-aws up took %s", time.Since(start).Round(time.Millisecond))
	if code != 0 {
		l.t.Fatalf("kube-aws up: exit %d\n%s\n%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(file)
	if err != nil {
		l.t.Fatal(err)
	}
	var d stage.DeployResult
	if err := json.Unmarshal(b, &d); err != nil {
		l.t.Fatalf("--outputs-file is not a deploy result: %v\n%s", err, b)
	}
	if !strings.Contains(stdout, "outputs:\n") || !strings.Contains(stdout, "  APIEndpoint: ") {
		l.t.Fatalf("up printed no outputs:\n%s\n%s", stdout, stderr)
	}
	return &d, stderr
}

func changedStacks(d *stage.DeployResult) []string {
	var out []string
	for _, s := range d.Stacks {
		if s.Changed {
			out = append(out, s.Name)
		}
	}
	return out
}

// liveStacks lists the cluster's stacks that exist (not deleted).
func (l *awsLayout) liveStacks() []string {
	l.t.Helper()
	var out []string
	p := cloudformation.NewListStacksPaginator(l.cfn, &cloudformation.ListStacksInput{})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			l.t.Fatal(err)
		}
		for _, s := range page.StackSummaries {
			if s.StackStatus != cfntypes.StackStatusDeleteComplete && strings.HasPrefix(aws.ToString(s.StackName), "demo-") {
				out = append(out, aws.ToString(s.StackName))
			}
		}
	}
	return out
}

// The whole life of a cluster through the commands a user runs: up from
// nothing, a no-op up, a one-pool change seen by diff and applied by up,
// validate, and destroy.
func TestUpDiffValidateDestroyAgainstMoto(t *testing.T) {
	l := newAWSLayout(t)

	d, _ := l.up(l.endpoint)
	if len(d.Stacks) != 6 || d.Outputs["APIEndpoint"] == "" || d.Outputs["VPCId"] == "" {
		t.Fatalf("first up: deploy result %+v", d)
	}
	if got := changedStacks(d); len(got) != 6 {
		t.Fatalf("first up changed %v, want all 6 stacks", got)
	}
	// The etcd plugin's members: a data volume and a group of one each, and
	// their private zone.
	res, err := l.cfn.ListStackResources(context.Background(), &cloudformation.ListStackResourcesInput{StackName: aws.String("demo-etcd")})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for _, r := range res.StackResourceSummaries {
		kinds[aws.ToString(r.ResourceType)]++
	}
	if kinds["AWS::EC2::Volume"] != 3 || kinds["AWS::AutoScaling::AutoScalingGroup"] != 3 || kinds["AWS::Route53::HostedZone"] != 1 ||
		kinds["AWS::IAM::Policy"] != 1 {
		t.Fatalf("etcd stack resources %v, want 3 volumes, 3 groups of one, the zone and the etcd role's policy on it", kinds)
	}
	// That policy is on the etcd role the iam stack made, and names the
	// zone the etcd stack made, by the id moto gave it.
	role, zone := l.parameter("demo-etcd", "EtcdRoleName"), l.physicalID("demo-etcd", "PrivateZone")
	iamc := iam.NewFromConfig(aws.Config{Region: awstest.Region, Credentials: awstest.Credentials()}, func(o *iam.Options) { o.BaseEndpoint = aws.String(l.endpoint) })
	pol, err := iamc.GetRolePolicy(context.Background(), &iam.GetRolePolicyInput{RoleName: aws.String(role), PolicyName: aws.String("kube-aws-etcd-records")})
	if err != nil {
		t.Fatalf("the etcd role %q has no records policy: %v", role, err)
	}
	policy, err := url.QueryUnescape(aws.ToString(pol.PolicyDocument))
	if err != nil {
		policy = aws.ToString(pol.PolicyDocument)
	}
	if zone == "" || !strings.Contains(policy, "arn:aws:route53:::hostedzone/"+zone+`"`) || strings.Contains(policy, `"*"`) {
		t.Fatalf("the etcd role's records policy, want it on zone %s alone:\n%s", zone, policy)
	}

	// Again, with nothing changed: no stack updated, nothing uploaded.
	d, stderr := l.up(l.endpoint)
	if got := changedStacks(d); len(got) != 0 {
		t.Fatalf("no-op up changed %v", got)
	}
	if !strings.Contains(stderr, "0 created, 0 updated, 6 unchanged; 0 objects uploaded") {
		t.Fatalf("no-op up: want 0 created, 0 updated, 0 uploads reported:\n%s", stderr)
	}

	// diff with nothing to change: exit 0 even with --exit-code.
	if stdout, stderr, code := l.run("diff", "--exit-code", "--endpoint-url", l.endpoint); code != 0 || !strings.Contains(stdout, "no change\n") {
		t.Fatalf("diff of an up-to-date cluster: exit %d\n%s\n%s", code, stdout, stderr)
	}

	// One node pool grows: diff shows exactly that, --exit-code exits 3.
	l.edit("    maxSize: 5\n", "    maxSize: 6\n")
	stdout, stderr, code := l.run("diff", "--exit-code", "--output", "json", "--endpoint-url", l.endpoint)
	if code != stages.ExitChanges {
		t.Fatalf("diff --exit-code after a change: exit %d, want 3\n%s\n%s", code, stdout, stderr)
	}
	var doc struct {
		ExitCode int              `json:"exitCode"`
		Diff     stage.DiffResult `json:"diff"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("diff --output json: %v\n%s", err, stdout)
	}
	if doc.ExitCode != 3 || !doc.Diff.Changed || len(doc.Diff.Stacks) != 6 {
		t.Fatalf("diff document %+v", doc)
	}
	for _, s := range doc.Diff.Stacks {
		want := "none"
		if s.Stack == "nodepool-general" {
			want = "update"
		}
		if s.Action != want {
			t.Fatalf("diff: stack %s would %s, want %s (%+v)", s.Stack, s.Action, want, doc.Diff)
		}
		if s.Stack == "nodepool-general" {
			if len(s.Changes) != 1 || s.Changes[0].Action != "Modify" || s.Changes[0].ResourceType != "AWS::AutoScaling::AutoScalingGroup" {
				t.Fatalf("diff of nodepool-general: %+v, want one Modify of its auto scaling group", s.Changes)
			}
		}
	}
	// The text form names the resource too, and diff executed nothing.
	stdout, _, _ = l.run("diff", "--endpoint-url", l.endpoint)
	if !strings.Contains(stdout, "nodepool-general (demo-nodepool-general): would update") || !strings.Contains(stdout, "~ Modify") {
		t.Fatalf("diff text:\n%s", stdout)
	}

	// diff deleted the change sets it made.
	cs, err := l.cfn.ListChangeSets(context.Background(), &cloudformation.ListChangeSetsInput{StackName: aws.String("demo-nodepool-general")})
	if err != nil {
		t.Fatal(err)
	}
	if len(cs.Summaries) != 0 {
		t.Fatalf("diff left %d change set(s) on demo-nodepool-general", len(cs.Summaries))
	}

	// up applies it: exactly one stack changes (so diff executed nothing).
	d, _ = l.up(l.endpoint)
	if got := changedStacks(d); len(got) != 1 || got[0] != "demo-nodepool-general" {
		t.Fatalf("up after the change changed %v, want [demo-nodepool-general]", got)
	}

	if stdout, stderr, code := l.run("validate", "--endpoint-url", l.endpoint); code != 0 || !strings.Contains(stdout, "cluster demo is valid") {
		t.Fatalf("validate: exit %d\n%s\n%s", code, stdout, stderr)
	}

	// destroy asks; without a terminal it wants --yes.
	if _, stderr, code := l.run("destroy", "--endpoint-url", l.endpoint); code != 2 || !strings.Contains(stderr, "--yes") {
		t.Fatalf("destroy without --yes and no terminal: exit %d, want 2 naming --yes\n%s", code, stderr)
	}
	if len(l.liveStacks()) != 6 {
		t.Fatalf("destroy without --yes deleted stacks: %v left", l.liveStacks())
	}
	// moto answers DeleteStack of the network stack with DependencyViolation
	// (it keeps terminated instances' interfaces) yet removes the stack: the
	// engine looks again rather than trust the error, so one run is enough.
	stdout, stderr, code = l.run("destroy", "--yes", "--endpoint-url", l.endpoint)
	if code != 0 {
		t.Fatalf("destroy --yes: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if left := l.liveStacks(); len(left) != 0 {
		t.Fatalf("destroy left stacks %v\n%s", left, stdout)
	}
}

// Two ups of one cluster at once: the second is refused by the deploy lock
// and says who holds it; the first finishes.
func TestConcurrentUpIsRefusedByTheLock(t *testing.T) {
	l := newAWSLayout(t)
	l.up(l.endpoint)

	// The first up goes through a proxy that holds its change sets, so it
	// still holds the lock when the second one starts.
	proxy, err := faultproxy.Start(l.endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	proxy.Add(faultproxy.Rule{Action: "CreateChangeSet", Times: -1, Fault: faultproxy.Delay, Delay: 3 * time.Second})
	first := l.command(context.Background(), "up", "--endpoint-url", proxy.URL)
	var o1, e1 bytes.Buffer
	first.Stdout, first.Stderr = &o1, &e1
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for proxy.Count("CreateChangeSet") == 0 {
		if time.Now().After(deadline) {
			_ = first.Process.Kill()
			t.Fatalf("the first up never reached its change sets:\n%s", e1.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	stdout, stderr, code := l.run("up", "--endpoint-url", l.endpoint)
	proxy.Clear()
	if code != 1 || !strings.Contains(stderr, "is locked by another kube-aws deploy") || !strings.Contains(stderr, " pid ") {
		t.Fatalf("second up: exit %d, want 1 refused by the lock naming its holder\n%s\n%s", code, stdout, stderr)
	}
	if code := exitCode(t, first.Wait()); code != 0 {
		t.Fatalf("first up: exit %d\n%s\n%s", code, o1.String(), e1.String())
	}
	// The lock is released: a third up goes through.
	l.up(l.endpoint)

	// A lock left by a deploy that died: refused, naming the holder;
	// --force-unlock needs --yes without a terminal; with it, up goes through.
	cfg := aws.Config{Region: awstest.Region, Credentials: awstest.Credentials()}
	s3c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.BaseEndpoint = aws.String(l.endpoint); o.UsePathStyle = true })
	lock := `{"who":"ci@runner-7 pid 4242","since":"2026-11-21T08:00:00Z","operation":"deploy"}`
	if _, err := s3c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("kube-aws-demo-assets"),
		Key: aws.String("clusters/demo/deploy.lock"), Body: strings.NewReader(lock)}); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := l.run("up", "--endpoint-url", l.endpoint); code != 1 || !strings.Contains(stderr, "ci@runner-7 pid 4242") || !strings.Contains(stderr, "--force-unlock") {
		t.Fatalf("up with a stale lock: exit %d, want 1 naming the holder and --force-unlock\n%s", code, stderr)
	}
	if _, stderr, code := l.run("up", "--force-unlock", "--endpoint-url", l.endpoint); code != 2 || !strings.Contains(stderr, "--yes") {
		t.Fatalf("up --force-unlock without --yes and no terminal: exit %d, want 2 naming --yes\n%s", code, stderr)
	}
	if stdout, stderr, code := l.run("up", "--force-unlock", "--yes", "--endpoint-url", l.endpoint); code != 0 {
		t.Fatalf("up --force-unlock --yes: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// A changed s3URI changes the service-account issuer, which every pod's
// token names: up refuses it at s3URI before any stack changes, saying how
// to go on; with --allow-issuer-change it goes through.
func TestAnIssuerChangeIsRefusedUntilAllowed(t *testing.T) {
	l := newAWSLayout(t)
	l.up(l.endpoint)
	issuer := func() string {
		t.Helper()
		out, err := l.cfn.DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{StackName: aws.String("demo-iam")})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range out.Stacks[0].Outputs {
			if aws.ToString(o.OutputKey) == "ServiceAccountIssuer" {
				return aws.ToString(o.OutputValue)
			}
		}
		t.Fatal("the iam stack has no ServiceAccountIssuer output")
		return ""
	}
	before := issuer()
	l.edit("s3URI: s3://kube-aws-demo-assets/clusters/demo\n", "s3URI: s3://kube-aws-demo-assets/clusters/demo-moved\n")
	if _, stderr, _ := l.run("diff", "--endpoint-url", l.endpoint); !strings.Contains(stderr, "up would refuse this: s3URI s3://kube-aws-demo-assets/clusters/demo-moved") {
		t.Fatalf("diff does not say that up would refuse the moved s3URI:\n%s", stderr)
	}
	stdout, stderr, code := l.run("up", "--endpoint-url", l.endpoint)
	if code != 1 || !strings.Contains(stderr, "s3URI") || !strings.Contains(stderr, "service-account issuer of the running cluster from "+before) ||
		!strings.Contains(stderr, "--allow-issuer-change") || !strings.Contains(stderr, "no stack was changed") {
		t.Fatalf("up with a moved s3URI: exit %d, want 1 refused at s3URI naming the issuer and --allow-issuer-change\n%s\n%s", code, stdout, stderr)
	}
	s3c := s3.NewFromConfig(aws.Config{Region: awstest.Region, Credentials: awstest.Credentials()},
		func(o *s3.Options) { o.BaseEndpoint = aws.String(l.endpoint); o.UsePathStyle = true })
	moved, err := s3c.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String("kube-aws-demo-assets"), Prefix: aws.String("clusters/demo-moved/")})
	if err != nil {
		t.Fatal(err)
	}
	if len(moved.Contents) != 0 {
		t.Fatalf("the refused up left %d object(s) under the moved s3URI, first %s", len(moved.Contents), aws.ToString(moved.Contents[0].Key))
	}
	if got := issuer(); got != before {
		t.Fatalf("the refused up changed the issuer: %s, was %s", got, before)
	}
	// Allowed, the stacks are updated; the machines' roll that follows
	// needs machines that report their health, which moto's instances do
	// not (make e2e-cluster boots them): it stops at the first one.
	stdout, stderr, code = l.run("up", "--allow-issuer-change", "--endpoint-url", l.endpoint)
	if code != 1 || !strings.Contains(stderr, "the service-account issuer changes from "+before) || !strings.Contains(stderr, "rolling cluster demo: roll stopped at etcd machine") {
		t.Fatalf("up --allow-issuer-change: exit %d, want the change announced, the stacks updated and the roll stopped at the first etcd machine\n%s\n%s", code, stdout, stderr)
	}
	if after := issuer(); after == before || !strings.Contains(after, "demo-moved") {
		t.Fatalf("up --allow-issuer-change: the issuer is %s, was %s; want one of the moved s3URI", after, before)
	}
}

// A node pool whose create failed (injected in front of moto, which cannot
// fail one): up names the failed resource and its reason; a rerun without
// --yes refuses to delete the stack, saying so; up --yes recreates it and
// converges.
func TestUpAfterAFailedCreateNeedsYes(t *testing.T) {
	l := newAWSLayout(t)
	proxy, err := faultproxy.Start(l.endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	const reason = "You have requested more instances (1) than your current instance limit of 0 allows"
	proxy.FailStack("demo-nodepool-spot", "AutoScalingGroup", "AWS::AutoScaling::AutoScalingGroup", reason)

	_, stderr, code := l.run("up", "--endpoint-url", proxy.URL)
	if code != 1 || !strings.Contains(stderr, "AutoScalingGroup") || !strings.Contains(stderr, reason) {
		t.Fatalf("up with a failing node pool: exit %d, want 1 naming the failed resource and its reason\n%s", code, stderr)
	}
	_, stderr, code = l.run("up", "--endpoint-url", proxy.URL)
	if code != 1 || !strings.Contains(stderr, "ROLLBACK_COMPLETE") || !strings.Contains(stderr, "--yes") {
		t.Fatalf("rerun without --yes: exit %d, want 1 asking for --yes\n%s", code, stderr)
	}
	// What a program (and up's own prompt) acts on is the diagnostic's code,
	// carried over the plugin protocol, not its wording.
	stdout, _, code := l.run("up", "--endpoint-url", proxy.URL, "--output", "json")
	var doc struct {
		Diagnostics []diag.Diagnostic `json:"diagnostics"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || code != 1 {
		t.Fatalf("up --output json: exit %d, %v\n%s", code, err, stdout)
	}
	coded := false
	for _, d := range doc.Diagnostics {
		coded = coded || (d.Plugin == "deploy" && d.Code == diag.CodeNeedsConfirmation)
	}
	if !coded {
		t.Fatalf("no deploy diagnostic with code %q in\n%s", diag.CodeNeedsConfirmation, stdout)
	}
	d, _ := l.upWith("--endpoint-url", proxy.URL, "--yes")
	if got := changedStacks(d); len(got) != 1 || got[0] != "demo-nodepool-spot" {
		t.Fatalf("up --yes changed %v, want only the recreated demo-nodepool-spot", got)
	}
	for _, s := range d.Stacks {
		if s.Status != "CREATE_COMPLETE" {
			t.Fatalf("after up --yes: %s is %s", s.Name, s.Status)
		}
	}
}

// stage deploy and stage validate take the AWS flags every command that
// reaches AWS takes (issue 10, point 7): a CI pipeline runs one stage per
// job against the endpoint it names, no environment variable needed.
func TestStageDeployAndValidateTakeTheAWSFlags(t *testing.T) {
	l := newAWSLayout(t)
	for _, args := range [][]string{
		{"stage", "initialise"},
		{"stage", "render"},
		{"stage", "deploy", "--endpoint-url", l.endpoint, "--region", awstest.Region, "--profile", "", "--timeout", "20m"},
		{"stage", "validate", "--endpoint-url", l.endpoint, "--region", awstest.Region, "--timeout", "20m"},
	} {
		if stdout, stderr, code := l.run(args...); code != 0 {
			t.Fatalf("kube-aws %v: exit %d\n%s\n%s", args, code, stdout, stderr)
		}
	}
	if live := l.liveStacks(); len(live) == 0 {
		t.Fatal("stage deploy deployed nothing")
	}
}

// SIGTERM (or Ctrl-C) during up stops the deploy's waits and releases its
// lock before kube-aws exits 130, so the next up goes through without
// --force-unlock (issue 10, point 9); the lock names kube-aws's own process.
func TestInterruptedUpReleasesTheLock(t *testing.T) {
	l := newAWSLayout(t)
	proxy, err := faultproxy.Start(l.endpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	// The first stack's create hangs, as a slow CloudFormation would.
	proxy.Add(faultproxy.Rule{Action: "CreateStack", Times: 1, Fault: faultproxy.Delay, Delay: 2 * time.Minute})
	up := l.command(context.Background(), "up", "--endpoint-url", proxy.URL)
	var o, e bytes.Buffer
	up.Stdout, up.Stderr = &o, &e
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for proxy.Count("CreateStack") == 0 {
		if time.Now().After(deadline) {
			_ = up.Process.Kill()
			t.Fatalf("up never reached its first create:\n%s", e.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cfg := aws.Config{Region: awstest.Region, Credentials: awstest.Credentials()}
	s3c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.BaseEndpoint = aws.String(l.endpoint); o.UsePathStyle = true })
	lock, err := s3c.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("kube-aws-demo-assets"), Key: aws.String("clusters/demo/deploy.lock")})
	if err != nil {
		t.Fatalf("up holds no lock while it deploys: %v", err)
	}
	holder, _ := io.ReadAll(lock.Body)
	lock.Body.Close()
	if want := fmt.Sprintf("kube-aws pid %d", up.Process.Pid); !strings.Contains(string(holder), want) {
		t.Errorf("the lock names %s, want %q (kube-aws, not its deploy plugin)", holder, want)
	}

	start := time.Now()
	if err := up.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, up.Wait()); code != 130 {
		t.Fatalf("interrupted up: exit %d, want 130\n%s\n%s", code, o.String(), e.String())
	}
	t.Logf("up stopped %s after SIGTERM", time.Since(start).Round(time.Millisecond))
	if !strings.Contains(e.String(), "released s3://kube-aws-demo-assets/clusters/demo/deploy.lock") {
		t.Errorf("the interrupted deploy did not say it released the lock:\n%s", e.String())
	}
	if _, err := s3c.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String("kube-aws-demo-assets"), Key: aws.String("clusters/demo/deploy.lock")}); err == nil {
		t.Fatal("the interrupted up left its deploy lock behind")
	}
	// A rerun needs no --force-unlock and resumes.
	l.up(l.endpoint)
}

// nodeAgents are kube-aws-node built once per test binary and architecture,
// in a folder removed when the tests end.
var (
	nodeAgentDir = sync.OnceValues(func() (string, error) { return os.MkdirTemp("", "kube-aws-node-e2e-") })
	nodeAgents   sync.Map // arch -> func() (string, error)
)

func nodeAgent(t *testing.T, arch string) string {
	t.Helper()
	f, _ := nodeAgents.LoadOrStore(arch, sync.OnceValues(func() (string, error) {
		dir, err := nodeAgentDir()
		if err != nil {
			return "", err
		}
		out := filepath.Join(dir, "kube-aws-node-linux-"+arch)
		cmd := exec.Command("go", "build", "-trimpath", "-o", out, "github.com/kube-aws/kube-aws/cmd/kube-aws-node")
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
		if b, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build kube-aws-node for linux/%s: %v\n%s", arch, err, b)
		}
		return out, nil
	}))
	path, err := f.(func() (string, error))()
	if err != nil {
		t.Fatal(err)
	}
	return path
}
