package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/nodeplan"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/test/faultproxy"
)

type cloudformationStack = types.Stack

func params(s *types.Stack) map[string]string {
	m := map[string]string{}
	for _, p := range s.Parameters {
		m[aws.ToString(p.ParameterKey)] = aws.ToString(p.ParameterValue)
	}
	return m
}

func tags(s *types.Stack) map[string]string {
	m := map[string]string{}
	for _, t := range s.Tags {
		m[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return m
}

// TestOptionalParameterFileMissing: a parameter filled from a rendered file
// that the render does not have keeps the template's default, so a cluster
// rendered without the helm plugin (no charts/releases.json) deploys; one
// without a default is still an error.
func TestOptionalParameterFileMissing(t *testing.T) {
	f := newFixture(t, nil)
	f.noCharts = true
	e := f.engine()
	f.mustDeploy(e, f.render())
	cp := f.stack("control-plane")
	if k := outputsOf(cp)["ChartsKey"]; k != "key=" {
		t.Fatalf("ChartsKey output %q, want the default (empty)", k)
	}
	if v, ok := params(cp)["ChartsKey"]; ok && v != "" {
		t.Fatalf("ChartsKey parameter %q, want the default (empty)", v)
	}

	target := f.render()
	if err := os.Remove(filepath.Join(target.Rendered.Dir, "userdata", "controller.yaml")); err != nil {
		t.Fatal(err)
	}
	var files []stage.ManifestFile
	for _, mf := range target.Rendered.Files {
		if mf.Path != "userdata/controller.yaml" {
			files = append(files, mf)
		}
	}
	target.Rendered.Files = files
	if _, err := e.Deploy(context.Background(), target); err == nil || !strings.Contains(err.Error(), "fills BootKey with the S3 key of userdata/controller.yaml, which the render output does not have") {
		t.Fatalf("a required parameter file missing: %v", err)
	}
}

// The whole life of a cluster: up from nothing, a no-op up, a change to one
// node pool previewed and applied, validate, destroy.
func TestLifecycle(t *testing.T) {
	f := newFixture(t, map[string]int{"a": 1, "b": 1})
	e := f.engine()
	ctx := context.Background()

	// Up from nothing.
	res := f.mustDeploy(e, f.render())
	if len(res.Created) != 5 || !res.Changed {
		t.Fatalf("want 5 stacks created, got created %v updated %v unchanged %v", res.Created, res.Updated, res.Unchanged)
	}
	// 5 templates (the two node pools' are identical: one object), 3
	// userdata, 1 chart file.
	if res.Uploaded != 8 {
		t.Fatalf("first deploy uploaded %d objects, want 8", res.Uploaded)
	}
	// Dependency order: network before control-plane and pools; iam before pools.
	order := []string{}
	for _, s := range res.Deploy.Stacks {
		order = append(order, strings.TrimPrefix(s.Name, f.name+"-"))
	}
	idx := func(s string) int { return slices.Index(order, s) }
	for _, dep := range [][2]string{{"network", "control-plane"}, {"iam", "control-plane"}, {"network", "nodepool-a"}, {"iam", "nodepool-b"}} {
		if idx(dep[0]) < 0 || idx(dep[0]) > idx(dep[1]) {
			t.Fatalf("stack order %v: %s must come before %s", order, dep[0], dep[1])
		}
	}
	// Outputs became parameters; the engine filled AssetsBucket and UserDataKey.
	network, pool := f.stack("network"), f.stack("nodepool-a")
	np, nout := params(pool), outputsOf(network)
	if np["SubnetId"] != nout["SubnetId"] || np["SecurityGroupId"] != nout["NodeSG"] || np["SubnetId"] == "" {
		t.Fatalf("node pool parameters %v do not carry the network outputs %v", np, nout)
	}
	if np["AssetsBucket"] != f.bucket || !strings.HasPrefix(np["UserDataKey"], "clusters/"+f.name+"/roles/nodepool-a/userdata/") {
		t.Fatalf("node pool parameters %v: want AssetsBucket %s and a content-addressed UserDataKey", np, f.bucket)
	}
	ud, err := f.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(f.bucket), Key: aws.String(np["UserDataKey"])})
	if err != nil {
		t.Fatalf("the node pool's userdata is not at its UserDataKey: %v", err)
	}
	ud.Body.Close()
	if tg := tags(pool); tg[names.TagCluster] != f.name || tg["owner"] != "tests" {
		t.Fatalf("node pool tags %v: want %s=%s and the cluster's tags", tg, names.TagCluster, f.name)
	}
	if k := outputsOf(f.stack("control-plane"))["BootKey"]; !strings.HasPrefix(k, "clusters/"+f.name+"/roles/controller/userdata/") || k == np["UserDataKey"] {
		t.Fatalf("control-plane BootKey %q: want the key of userdata/controller.yaml named in the template's Metadata", k)
	}
	// The controllers' helm install script finds each chart beside
	// releases.json under its sha256: the key must be <prefix>/assets/<sha256>.
	sum := sha256.Sum256([]byte("[]\n"))
	if k, want := outputsOf(f.stack("control-plane"))["ChartsKey"], "key=clusters/"+f.name+"/assets/"+hex.EncodeToString(sum[:]); k != want {
		t.Fatalf("control-plane ChartsKey %q, want %q", k, want)
	}
	if got, want := res.Deploy.Outputs["APIEndpoint"], "https://api."+f.name+"-control-plane.example.com"; got != want {
		t.Fatalf("cluster output APIEndpoint = %q, want %q", got, want)
	}

	// A no-op up: nothing uploaded, no stack touched.
	putsBefore := f.proxy.Count("S3:PUT")
	res = f.mustDeploy(e, f.render())
	if res.Uploaded != 0 || res.Changed || len(res.Updated)+len(res.Created) != 0 || len(res.Unchanged) != 5 {
		t.Fatalf("no-op deploy: uploaded %d, changed %v, created %v, updated %v", res.Uploaded, res.Changed, res.Created, res.Updated)
	}
	if puts := f.proxy.Count("S3:PUT") - putsBefore; puts != 1 { // the lock only
		t.Fatalf("no-op deploy made %d S3 PUTs, want 1 (the lock)", puts)
	}
	for _, a := range []string{"ExecuteChangeSet", "UpdateStack", "CreateStack"} {
		if n := f.proxy.Count(a); a != "CreateStack" && n != 0 {
			t.Fatalf("no-op deploy called %s %d times", a, n)
		}
	}
	if n := f.proxy.Count("CreateStack"); n != 5 {
		t.Fatalf("CreateStack called %d times over two deploys, want 5", n)
	}

	// Resize node pool a: diff shows exactly that change.
	f.pools["a"] = 2
	target := f.render()
	d, err := e.Diff(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Changed {
		t.Fatal("diff after resizing a node pool says nothing changed")
	}
	for _, s := range d.Stacks {
		switch s.Stack {
		case "nodepool-a":
			if s.Action != stage.ActionUpdate || len(s.Changes) != 1 || s.Changes[0].LogicalID != "Group" || s.Changes[0].Action != "Modify" ||
				s.Changes[0].ResourceType != "AWS::AutoScaling::AutoScalingGroup" {
				t.Fatalf("diff of nodepool-a = %+v, want one Modify of Group", s)
			}
		default:
			if s.Action != stage.ActionNone || len(s.Changes) != 0 {
				t.Fatalf("diff of %s = %+v, want no change", s.Stack, s)
			}
		}
	}
	if n := f.proxy.Count("ExecuteChangeSet"); n != 0 {
		t.Fatalf("diff executed %d change sets", n)
	}
	sets, err := f.cfn.ListChangeSets(ctx, &cloudformation.ListChangeSetsInput{StackName: aws.String(f.name + "-nodepool-a")})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sets.Summaries {
		if aws.ToString(s.StackName) == f.name+"-nodepool-a" && s.ExecutionStatus == types.ExecutionStatusAvailable {
			t.Fatalf("diff left change set %s behind", aws.ToString(s.ChangeSetName))
		}
	}

	// Up applies it: one stack changes.
	res = f.mustDeploy(e, target)
	if !slices.Equal(res.Updated, []string{"nodepool-a"}) || len(res.Created) != 0 || !res.Changed {
		t.Fatalf("deploy after resize: updated %v created %v", res.Updated, res.Created)
	}
	if n := f.proxy.Count("ExecuteChangeSet"); n != 1 {
		t.Fatalf("ExecuteChangeSet called %d times, want 1", n)
	}
	if d, err := e.Diff(ctx, target); err != nil || d.Changed {
		t.Fatalf("diff after applying: changed=%v err=%v", d != nil && d.Changed, err)
	}

	// Validate: healthy stacks, outputs, two instances in pool a; the
	// pools' three machines have not booted yet (no status, just launched):
	// warnings.
	ds, err := e.Validate(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	if f, w := ds.Count(); f != 0 || w != 3 {
		t.Fatalf("validate: want 3 warnings (machines still booting), got %v", ds)
	}

	// Destroy: nothing left.
	dr, err := e.Destroy(ctx, target)
	if err != nil {
		t.Fatalf("destroy: %v\n%s", err, f.events.text())
	}
	if len(dr.Deleted) != 5 {
		t.Fatalf("destroy deleted %v, want all 5 stacks", dr.Deleted)
	}
	// Reverse order: pools and control-plane before network and iam.
	if slices.Index(dr.Deleted, "network") < slices.Index(dr.Deleted, "nodepool-a") || slices.Index(dr.Deleted, "iam") < slices.Index(dr.Deleted, "control-plane") {
		t.Fatalf("destroy order %v is not reverse dependency order", dr.Deleted)
	}
	for _, s := range []string{"network", "iam", "control-plane", "nodepool-a", "nodepool-b"} {
		if st := f.stack(s); st != nil && st.StackStatus != types.StackStatusDeleteComplete {
			t.Fatalf("stack %s still exists in %s after destroy", s, st.StackStatus)
		}
	}
	ds, err = e.Validate(ctx, target)
	if err != nil || len(ds) != 5 {
		t.Fatalf("validate after destroy: want 5 missing stacks, got %v (err %v)", ds, err)
	}
	// Destroy again: already gone, no error.
	if dr, err := e.Destroy(ctx, target); err != nil || len(dr.Absent) != 5 {
		t.Fatalf("second destroy: %+v %v", dr, err)
	}
}

// Sensitive values are encrypted with the cluster's KMS key, uploaded once,
// and re-uploaded only when they change; their plain text is never reported.
func TestSecrets(t *testing.T) {
	f := newFixture(t, map[string]int{"a": 1})
	const plain = "s3cr3t-token-value"
	marker := "((secret:dex/values/clientSecret))"
	f.secrets = map[string]string{marker: plain}
	e := f.engine()
	ctx := context.Background()
	f.mustDeploy(e, f.render())

	// For the role whose userdata names it, under its encryption context.
	key := location{Bucket: f.bucket, Prefix: "clusters/" + f.name}.key(nodeplan.SecretKey("nodepool-a", marker))
	ec := map[string]string{"kube-aws:cluster": f.name, "kube-aws:role": "nodepool-a"}
	out, err := f.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(f.bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("secret not uploaded to %s: %v", key, err)
	}
	blob := make([]byte, 4096)
	n, _ := out.Body.Read(blob)
	out.Body.Close()
	blob = blob[:n]
	if strings.Contains(string(blob), plain) {
		t.Fatal("the uploaded secret holds the plain text")
	}
	dec, err := f.kms.Decrypt(ctx, &kms.DecryptInput{CiphertextBlob: blob, EncryptionContext: ec})
	if err != nil || string(dec.Plaintext) != plain || aws.ToString(dec.KeyId) == "" {
		t.Fatalf("uploaded ciphertext does not decrypt to the value: %v", err)
	}
	if _, err := f.kms.Decrypt(ctx, &kms.DecryptInput{CiphertextBlob: blob, EncryptionContext: map[string]string{"kube-aws:cluster": f.name, "kube-aws:role": "controller"}}); err == nil {
		t.Fatal("the ciphertext decrypts under another role's context")
	}

	res := f.mustDeploy(e, f.render())
	if res.Uploaded != 0 {
		t.Fatalf("unchanged secret re-uploaded: %d uploads", res.Uploaded)
	}
	f.secrets[marker] = "rotated"
	res = f.mustDeploy(e, f.render())
	if res.Uploaded != 1 {
		t.Fatalf("rotated secret: %d uploads, want 1", res.Uploaded)
	}
	if strings.Contains(f.events.text(), plain) || strings.Contains(f.events.text(), "rotated\n") {
		t.Fatal("a secret's plain text reached the progress events")
	}

	// A marker the userdata names that deploy has no plain text for.
	delete(f.secrets, marker)
	tg := f.render()
	tg.Secrets = nil
	f.secrets = map[string]string{marker: "x"}
	ud := f.userdata("a")
	f.secrets = map[string]string{}
	if err := os.WriteFile(filepath.Join(f.dir, "userdata", "nodepool-a.yaml"), ud, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Deploy(ctx, tg); err == nil || !strings.Contains(err.Error(), "names "+marker+", which deploy was not given") {
		t.Fatalf("deploy of a userdata naming an unknown secret: %v", err)
	}
	f.secrets[marker] = plain

	// No KMS key: refused with what to do.
	tg = f.render()
	tg.Cluster.KMSKeyARN = ""
	if _, err := e.Deploy(ctx, tg); err == nil || !strings.Contains(err.Error(), "kmsKeyArn") {
		t.Fatalf("deploy of secrets without kmsKeyArn: %v", err)
	}
}

// A secret marker in the helm plugin's release values is uploaded for the
// controllers, whose add-ons step substitutes it.
func TestReleaseSecretsGoToControllers(t *testing.T) {
	f := newFixture(t, map[string]int{"a": 1})
	marker := "((secret:dex/values/password))"
	f.secrets = map[string]string{marker: `p"w\d` + "\n"}
	f.releases = []byte(`{"releases":[{"name":"dex","namespace":"auth","values":{"password":"` + marker + `"}}]}`)
	e := f.engine()
	ctx := context.Background()
	f.mustDeploy(e, f.render())
	loc := location{Bucket: f.bucket, Prefix: "clusters/" + f.name}
	out, err := f.s3.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(f.bucket), Key: aws.String(loc.key(nodeplan.SecretKey("controller", marker)))})
	if err != nil {
		t.Fatalf("the release's secret was not uploaded for the controllers: %v", err)
	}
	blob, err := io.ReadAll(out.Body)
	out.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	dec, err := f.kms.Decrypt(ctx, &kms.DecryptInput{CiphertextBlob: blob, EncryptionContext: map[string]string{"kube-aws:cluster": f.name, "kube-aws:role": "controller"}})
	if err != nil || string(dec.Plaintext) != f.secrets[marker] {
		t.Fatalf("the controllers' ciphertext does not decrypt to the value: %v", err)
	}
	// A release value naming a secret deploy was not given.
	f.releases = []byte(`{"releases":[{"values":{"x":"((secret:dex/values/gone))"}}]}`)
	if _, err := e.Deploy(ctx, f.render()); err == nil || !strings.Contains(err.Error(), "charts/releases.json (for controller) names ((secret:dex/values/gone))") {
		t.Fatalf("deploy of a release list naming an unknown secret: %v", err)
	}
}

// Two concurrent deploys of one cluster: exactly one runs, the other is
// refused by the lock with who holds it; a stale lock needs --force-unlock.
func TestLock(t *testing.T) {
	f := newFixture(t, map[string]int{"a": 1})
	// Slow the first stack down so that the two deploys overlap for sure.
	f.proxy.Add(faultproxy.Rule{Action: "CreateStack", Times: 1, Fault: faultproxy.Delay, Delay: 500 * time.Millisecond})
	e1 := f.engine(func(o *Options) { o.Who = "alice@host1 pid 1" })
	e2 := f.engine(func(o *Options) { o.Who = "bob@host2 pid 2" })
	var wg sync.WaitGroup
	errs := make([]error, 2)
	target := f.render()
	for i, e := range []*Engine{e1, e2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = e.Deploy(context.Background(), target)
		}()
	}
	wg.Wait()
	var locked *LockedError
	switch {
	case errs[0] == nil && errors.As(errs[1], &locked):
		if locked.Holder.Who != "alice@host1 pid 1" {
			t.Fatalf("refusal names %q as holder", locked.Holder.Who)
		}
	case errs[1] == nil && errors.As(errs[0], &locked):
		if locked.Holder.Who != "bob@host2 pid 2" {
			t.Fatalf("refusal names %q as holder", locked.Holder.Who)
		}
	default:
		t.Fatalf("want one deploy to succeed and one refused by the lock, got %v and %v", errs[0], errs[1])
	}
	msg := locked.Error()
	for _, want := range []string{"--force-unlock", "since", f.name} {
		if !strings.Contains(msg, want) {
			t.Fatalf("lock refusal %q does not mention %q", msg, want)
		}
	}
	// Released at the end.
	ctx := context.Background()
	if h, err := e1.LockHolder(ctx, f.render().Cluster); err != nil || h != nil {
		t.Fatalf("lock still held after the deploy: %+v %v", h, err)
	}

	// A deploy that died holding the lock (a crash) leaves it behind.
	p, err := e1.prepare(f.render())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e1.lock(ctx, p, "deploy"); err != nil {
		t.Fatal(err)
	}
	if _, err := e2.Deploy(ctx, f.render()); !IsLocked(err) {
		t.Fatalf("deploy with a stale lock: %v", err)
	}
	if err := e2.Unlock(ctx, f.render().Cluster); err != nil {
		t.Fatal(err)
	}
	f.mustDeploy(e2, f.render())
}

// Throttled calls are retried by the SDK and the deploy goes through.
func TestThrottlingRetried(t *testing.T) {
	f := newFixture(t, map[string]int{"a": 1})
	f.proxy.ThrottleN("DescribeStacks", 3)
	f.proxy.ThrottleN("CreateStack", 2)
	f.proxy.ThrottleN("S3:HEAD", 2)
	e := f.engine()
	res := f.mustDeploy(e, f.render())
	if len(res.Created) != 4 {
		t.Fatalf("created %v", res.Created)
	}
	for a, n := range map[string]int{"DescribeStacks": 3, "CreateStack": 2, "S3:HEAD": 2} {
		if got := f.proxy.Faulted(a); got != n {
			t.Fatalf("%s throttled %d times, want %d", a, got, n)
		}
	}
}

// A create that fails and rolls back names the failed resource; the rerun
// needs --yes to delete and recreate it, then converges.
func TestFailedCreateRecreated(t *testing.T) {
	f := newFixture(t, map[string]int{"a": 1})
	const reason = "You have requested more instances (1) than your current instance limit of 0 allows"
	f.proxy.FailStack(f.name+"-nodepool-a", "Group", "AWS::AutoScaling::AutoScalingGroup", reason)
	e := f.engine()
	ctx := context.Background()
	res, err := e.Deploy(ctx, f.render())
	if err == nil {
		t.Fatal("deploy of a failing stack succeeded")
	}
	for _, want := range []string{"nodepool-a", "ROLLBACK_COMPLETE", "resource Group (AWS::AutoScaling::AutoScalingGroup) CREATE_FAILED", reason} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("failure %q does not mention %q", err, want)
		}
	}
	if len(res.Created) != 3 {
		t.Fatalf("the other stacks should be created: %v", res.Created)
	}
	if !strings.Contains(f.events.text(), "CREATE_FAILED") {
		t.Fatalf("the failure event was not reported:\n%s", f.events.text())
	}

	// Rerun without --yes: refused, saying why and what to do.
	_, err = e.Deploy(ctx, f.render())
	if err == nil || !strings.Contains(err.Error(), "--yes") || !strings.Contains(err.Error(), reason) {
		t.Fatalf("rerun without confirmation: %v", err)
	}
	// Callers act on it through errors.Is, not its wording (the deploy
	// plugin turns it into diag.CodeNeedsConfirmation).
	if !errors.Is(err, ErrNeedsConfirmation) {
		t.Fatalf("the refusal is not ErrNeedsConfirmation: %v", err)
	}
	// With --yes: deleted, recreated, converged.
	e = f.engine(func(o *Options) { o.ConfirmRecreate = true })
	res = f.mustDeploy(e, f.render())
	if !slices.Equal(res.Created, []string{"nodepool-a"}) || len(res.Unchanged) != 3 {
		t.Fatalf("recreate run: created %v unchanged %v", res.Created, res.Unchanged)
	}
	if st := f.stack("nodepool-a"); st.StackStatus != types.StackStatusCreateComplete {
		t.Fatalf("nodepool-a is %s after the recreate", st.StackStatus)
	}
	if f.proxy.Count("DeleteStack") != 1 {
		t.Fatalf("DeleteStack called %d times, want 1", f.proxy.Count("DeleteStack"))
	}
}

// The connection drops while kube-aws waits for the network stack (as if it
// was killed half way); the rerun finds the stack done and goes on.
func TestWaitCutOffThenRerun(t *testing.T) {
	f := newFixture(t, map[string]int{"a": 1})
	// Whether the stack exists comes from one listing of all stacks; every
	// DescribeStacks of the network stack itself is a wait: cut them.
	f.proxy.Add(faultproxy.Rule{Action: "DescribeStacks", StackName: f.name + "-network", Times: -1, Fault: faultproxy.Drop})
	e := f.engine()
	_, err := e.Deploy(context.Background(), f.render())
	if err == nil || !strings.Contains(err.Error(), "rerun") {
		t.Fatalf("deploy with the wait cut off: %v", err)
	}
	if f.stack("network") == nil || f.stack("control-plane") != nil {
		t.Fatal("want the network created and nothing after it")
	}
	f.proxy.Clear()
	res := f.mustDeploy(e, f.render())
	// iam ran beside the network and finished too.
	if !slices.Equal(res.Unchanged, []string{"network", "iam"}) || len(res.Created) != 2 {
		t.Fatalf("rerun: unchanged %v created %v", res.Unchanged, res.Created)
	}
}

// kube-aws dies between two stacks: the network and iam are up, the rest is
// not. The rerun creates only what is missing.
func TestCrashBetweenStacksThenRerun(t *testing.T) {
	f := newFixture(t, map[string]int{"a": 1, "b": 1})
	f.proxy.Add(faultproxy.Rule{Action: "CreateStack", StackName: f.name + "-control-plane", Times: -1, Fault: faultproxy.Drop})
	f.proxy.Add(faultproxy.Rule{Action: "CreateStack", StackName: f.name + "-nodepool-a", Times: -1, Fault: faultproxy.Drop})
	f.proxy.Add(faultproxy.Rule{Action: "CreateStack", StackName: f.name + "-nodepool-b", Times: -1, Fault: faultproxy.Drop})
	e := f.engine()
	res, err := e.Deploy(context.Background(), f.render())
	if err == nil {
		t.Fatal("deploy with dropped connections succeeded")
	}
	if len(res.Created) != 2 {
		t.Fatalf("before the crash: created %v", res.Created)
	}
	f.proxy.Clear()
	res = f.mustDeploy(e, f.render())
	slices.Sort(res.Created)
	if !slices.Equal(res.Created, []string{"control-plane", "nodepool-a", "nodepool-b"}) || len(res.Unchanged) != 2 {
		t.Fatalf("rerun: created %v unchanged %v", res.Created, res.Unchanged)
	}
}

// A stack left in REVIEW_IN_PROGRESS (a CREATE change set never executed)
// holds no resources: it is replaced by a created stack.
func TestReviewInProgressContinued(t *testing.T) {
	f := newFixture(t, map[string]int{"a": 1})
	e := f.engine()
	ctx := context.Background()
	target := f.render()
	target.Rendered.Stacks = target.Rendered.Stacks[:1] // network only
	_, err := f.cfn.CreateChangeSet(ctx, &cloudformation.CreateChangeSetInput{
		StackName: aws.String(f.name + "-network"), ChangeSetName: aws.String("interrupted"), ChangeSetType: types.ChangeSetTypeCreate,
		TemplateBody: aws.String(string(mustRead(t, target.Rendered.Dir+"/stacks/network.json"))),
	})
	if err != nil {
		t.Fatal(err)
	}
	if st := f.stack("network"); st.StackStatus != types.StackStatusReviewInProgress {
		t.Fatalf("setup: network is %s", st.StackStatus)
	}
	d, err := e.Diff(ctx, target)
	if err != nil || d.Stacks[0].Action != stage.ActionCreate {
		t.Fatalf("diff of a REVIEW_IN_PROGRESS stack: %+v %v", d, err)
	}
	res := f.mustDeploy(e, target)
	if !slices.Equal(res.Created, []string{"network"}) {
		t.Fatalf("created %v", res.Created)
	}
	if st := f.stack("network"); st.StackStatus != types.StackStatusCreateComplete {
		t.Fatalf("network is %s", st.StackStatus)
	}
	if f.proxy.Count("DeleteStack") != 1 || f.proxy.Count("CreateStack") != 1 {
		t.Fatal("want the empty REVIEW_IN_PROGRESS stack replaced by a new one")
	}
}

// A template over 51,200 bytes goes by TemplateURL.
func TestBigTemplateByURL(t *testing.T) {
	f := newFixture(t, map[string]int{})
	f.big = true
	e := f.engine()
	target := f.render()
	p, err := e.prepare(target)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(p.tmpl["control-plane"].Body); n <= MaxInlineTemplate {
		t.Fatalf("setup: control-plane template is only %d bytes", n)
	}
	keys, _, err := assetKeys(p)
	if err != nil {
		t.Fatal(err)
	}
	in, err := e.input(p, "control-plane", keys, func(string) (map[string]string, bool) { return map[string]string{"VPCId": "vpc-1"}, true }, false)
	if err != nil {
		t.Fatal(err)
	}
	want := "https://" + f.bucket + ".s3.us-east-1.amazonaws.com/clusters/" + f.name + "/assets/"
	if in.templateBody != nil || in.templateURL == nil || !strings.HasPrefix(*in.templateURL, want) {
		t.Fatalf("big template: body set %v, url %v; want a URL starting %s", in.templateBody != nil, aws.ToString(in.templateURL), want)
	}
	f.mustDeploy(e, target)
	if st := f.stack("control-plane"); st == nil || st.StackStatus != types.StackStatusCreateComplete {
		t.Fatal("control-plane not created from its URL")
	}
	if d, err := e.Diff(context.Background(), target); err != nil || d.Changed {
		t.Fatalf("diff after deploying the big template: %+v %v", d, err)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A missing bucket is an error that says how to create it, unless the
// engine may create it.
func TestMissingBucket(t *testing.T) {
	f := newFixture(t, map[string]int{})
	target := f.render()
	target.Cluster.S3URI = "s3://no-such-bucket-" + f.name + "/x"
	_, err := f.engine().Deploy(context.Background(), target)
	if err == nil || !strings.Contains(err.Error(), "aws s3 mb") {
		t.Fatalf("deploy to a missing bucket: %v", err)
	}
	res := f.mustDeploy(f.engine(func(o *Options) { o.CreateBucket = true }), target)
	if len(res.Created) != 3 {
		t.Fatalf("created %v", res.Created)
	}
}

// An update that fails and rolls back names the failed resource; the rerun
// updates the stack from UPDATE_ROLLBACK_COMPLETE (no delete, no --yes).
func TestFailedUpdateThenRerun(t *testing.T) {
	f := newFixture(t, map[string]int{"a": 1})
	e := f.engine()
	ctx := context.Background()
	f.mustDeploy(e, f.render())
	f.pools["a"] = 3
	const reason = "Resource handler returned message: capacity not available"
	f.proxy.FailUpdate(f.name+"-nodepool-a", "Group", "AWS::AutoScaling::AutoScalingGroup", reason)
	_, err := e.Deploy(ctx, f.render())
	if err == nil || !strings.Contains(err.Error(), "UPDATE_ROLLBACK_COMPLETE") || !strings.Contains(err.Error(), "resource Group (AWS::AutoScaling::AutoScalingGroup) UPDATE_FAILED: "+reason) {
		t.Fatalf("failed update: %v", err)
	}
	before := f.proxy.Count("CreateChangeSet")
	res := f.mustDeploy(e, f.render())
	if f.proxy.Count("CreateChangeSet") == before || f.proxy.Count("DeleteStack") != 0 {
		t.Fatal("want the rolled-back stack updated through a change set, not recreated")
	}
	for _, s := range res.Deploy.Stacks {
		if s.Status != "CREATE_COMPLETE" && s.Status != "UPDATE_COMPLETE" {
			t.Fatalf("after the rerun %s is %s", s.Name, s.Status)
		}
	}
	if ds, err := e.Validate(ctx, f.render()); err != nil || ds.HasFatal() {
		t.Fatalf("validate after the rerun: %v %v", ds, err)
	}
}

// A node pool removed from the configuration leaves its stack behind: diff
// lists it, destroy deletes it with the rest.
func TestOrphanedStack(t *testing.T) {
	f := newFixture(t, map[string]int{"a": 1, "b": 1})
	e := f.engine()
	ctx := context.Background()
	f.mustDeploy(e, f.render())
	delete(f.pools, "b")
	target := f.render()
	d, err := e.Diff(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Orphans, []string{f.name + "-nodepool-b"}) || d.Changed {
		t.Fatalf("diff orphans %v changed %v", d.Orphans, d.Changed)
	}
	if res := f.mustDeploy(e, target); res.Changed || f.stack("nodepool-b") == nil {
		t.Fatal("up must leave a no longer rendered stack alone")
	}
	if !strings.Contains(f.events.text(), "stack "+f.name+"-nodepool-b of cluster "+f.name+" is no longer rendered") {
		t.Fatalf("up did not warn about the orphan:\n%s", f.events.text())
	}
	dr, err := e.Destroy(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dr.Orphans, []string{f.name + "-nodepool-b"}) || len(dr.Deleted) != 4 {
		t.Fatalf("destroy: %+v", dr)
	}
	if st := f.stack("nodepool-b"); st != nil {
		t.Fatalf("nodepool-b left in %s", st.StackStatus)
	}
}

// kube-aws interrupted (Ctrl-C) half way: the deploy stops, says how to
// resume, releases the lock; the rerun creates what is missing.
func TestInterruptedThenRerun(t *testing.T) {
	f := newFixture(t, map[string]int{"a": 1})
	f.proxy.Add(faultproxy.Rule{Action: "CreateStack", StackName: f.name + "-control-plane", Times: -1, Fault: faultproxy.Delay, Delay: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e := f.engine(func(o *Options) {
		o.Reporter = ReporterFunc(func(ev Event) {
			f.events.Report(ev)
			if ev.Kind == EventAction && strings.HasPrefix(ev.Message, "creating "+f.name+"-control-plane") {
				go func() { time.Sleep(100 * time.Millisecond); cancel() }()
			}
		})
	})
	start := time.Now()
	res, err := e.Deploy(ctx, f.render())
	if !errors.Is(err, context.Canceled) || time.Since(start) > 30*time.Second {
		t.Fatalf("interrupted deploy: %v after %v", err, time.Since(start))
	}
	if len(res.Created) != 2 {
		t.Fatalf("before the interrupt: created %v", res.Created)
	}
	if h, err := e.LockHolder(context.Background(), f.render().Cluster); err != nil || h != nil {
		t.Fatalf("lock left after an interrupt: %+v %v", h, err)
	}
	f.proxy.Clear()
	res = f.mustDeploy(f.engine(), f.render())
	if !slices.Equal(res.Created, []string{"control-plane", "nodepool-a"}) {
		t.Fatalf("rerun created %v", res.Created)
	}
}

// A render with machine stacks: deploy uploads kube-aws-node for every
// architecture and every file air-gapped mode took from the mirror to
// <prefix>/assets/<sha256>, and fills the bootstrap's parameters.
func TestMachineAssets(t *testing.T) {
	f := newFixture(t, map[string]int{"a": 1})
	f.machines = true
	ctx := context.Background()
	dir := t.TempDir()
	write := func(rel, content string) string {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(content))
		return hex.EncodeToString(sum[:])
	}
	amd := write("libexec/kube-aws-node-linux-amd64", "node agent amd64")
	arm := write("libexec/kube-aws-node-linux-arm64", "node agent arm64")
	pause := write("mirror/pause/3.10.1/linux-amd64/image.tar", "pause image")
	tg := f.render()
	tg.NodeAgentDir, tg.MirrorDir = filepath.Join(dir, "libexec"), filepath.Join(dir, "mirror")
	// Controllers on amd64 (the default instance type's), a pool on Graviton.
	tg.Cluster.NodePools = []config.NodePool{{Name: "a", InstanceType: "m7g.large"}}
	tg.Artifacts = []construct.Artifact{{Name: "pause", Version: "3.10.1", Kind: construct.Image, Reference: "registry.k8s.io/pause:3.10.1",
		Sources: map[string]construct.ArtifactSource{"amd64": {Mirrored: map[string]string{construct.MirrorImageFile: pause}}}}}
	e := f.engine()
	f.mustDeploy(e, tg)
	prefix := "clusters/" + f.name
	out := outputsOf(f.stack("nodepool-a"))["NodeAgent"]
	if !strings.HasPrefix(out, prefix+" "+prefix+"/assets/"+amd+" "+prefix+"/roles/nodepool-a/userdata/") {
		t.Fatalf("node pool parameters: %q", out)
	}
	for _, sum := range []string{amd, arm, pause} {
		if _, err := f.s3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(f.bucket), Key: aws.String(prefix + "/assets/" + sum)}); err != nil {
			t.Errorf("assets/%s not uploaded: %v", sum, err)
		}
	}
	if res := f.mustDeploy(e, tg); res.Uploaded != 0 {
		t.Errorf("a second deploy uploaded %d objects", res.Uploaded)
	}

	// A mirror file changed since initialise, a missing kube-aws-node.
	write("mirror/pause/3.10.1/linux-amd64/image.tar", "another pause")
	if _, err := e.Deploy(ctx, tg); err == nil || !strings.Contains(err.Error(), "changed since kube-aws read it") {
		t.Fatalf("a changed mirror file: %v", err)
	}
	tg.NodeAgentDir = filepath.Join(dir, "nowhere")
	if _, err := e.Deploy(ctx, tg); err == nil || !strings.Contains(err.Error(), "make build writes bin/kube-aws-plugins/libexec/kube-aws-node-linux-amd64") {
		t.Fatalf("no kube-aws-node: %v", err)
	}
}
