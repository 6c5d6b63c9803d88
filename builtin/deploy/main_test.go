package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/host"
	"github.com/kube-aws/kube-aws/plugins/plugintest"
	"github.com/kube-aws/kube-aws/test/awstest"
	"github.com/kube-aws/kube-aws/test/builtintest"
)

func TestMain(m *testing.M) { plugintest.Main(m) }

// The built plugin binary, driven by kube-aws's host code, deploys a small
// render output to moto, reports stack events, and validates it; a second
// deploy changes nothing.
func TestPluginDeploysAndValidates(t *testing.T) {
	url := awstest.Start(t)
	ctx := context.Background()
	if err := awstest.WarmUp(ctx, url); err != nil {
		t.Fatal(err)
	}
	cfg := aws.Config{Region: awstest.Region, Credentials: awstest.Credentials()}
	s3c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.BaseEndpoint = aws.String(url); o.UsePathStyle = true })
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("plugin-test")}); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	write := func(path string, v any) {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		full := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("stacks/network.json", map[string]any{
		"Resources": map[string]any{"VPC": map[string]any{"Type": "AWS::EC2::VPC", "Properties": map[string]any{"CidrBlock": "10.1.0.0/16"}}},
		"Outputs":   map[string]any{"VPCId": map[string]any{"Value": map[string]any{"Ref": "VPC"}}},
	})
	write("stacks/control-plane.json", map[string]any{
		"Parameters": map[string]any{"VPCId": map[string]any{"Type": "String"}, "AssetsBucket": map[string]any{"Type": "String"}, "UserDataKey": map[string]any{"Type": "String"}},
		"Resources":  map[string]any{"SG": map[string]any{"Type": "AWS::EC2::SecurityGroup", "Properties": map[string]any{"GroupDescription": "api", "VpcId": map[string]any{"Ref": "VPCId"}}}},
		"Outputs": map[string]any{
			"APIEndpoint": map[string]any{"Value": "https://api.example.com"},
			"UserData":    map[string]any{"Value": map[string]any{"Fn::Sub": "s3://${AssetsBucket}/${UserDataKey}"}},
		},
	})
	write("userdata/controller.yaml", map[string]any{"write_files": []any{}}) // JSON is YAML: a #cloud-config document

	cluster, _ := json.Marshal(config.Cluster{ClusterName: "plug", Region: awstest.Region, S3URI: "s3://plugin-test/kube-aws"})
	in := &stage.Input{
		Config:  cluster,
		WorkDir: filepath.Dir(dir),
		// The operator's AWS settings, which kube-aws gives this plugin
		// because it declares that it reaches AWS.
		AWS: &stage.AWSSettings{EndpointURL: url},
		Rendered: &stage.Rendered{Dir: filepath.Base(dir), Stacks: []stage.StackSpec{
			{Name: "network", Template: "stacks/network.json"},
			{Name: "control-plane", Template: "stacks/control-plane.json", ParameterSources: map[string]names.Source{"VPCId": names.From("network", "VPCId")}},
		}},
	}
	opts := host.Options{Env: []string{
		"AWS_ACCESS_KEY_ID=" + awstest.AccessKeyID,
		"AWS_SECRET_ACCESS_KEY=" + awstest.SecretAccessKey,
		"AWS_PROFILE=", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null",
	}}
	bin := builtintest.Path(t, "deploy")
	out, err := plugintest.RunWith(t, bin, opts, in, stage.Deploy, stage.Validate)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.Output)
	}
	if !out.Plugin.Info.ReachesAWS {
		t.Error("the deploy plugin does not declare that it reaches AWS: kube-aws would not give it the AWS settings")
	}
	dep := out.Results[stage.Deploy]
	if dep.Diagnostics.HasFatal() || dep.Deploy == nil {
		t.Fatalf("deploy: %v", dep.Diagnostics)
	}
	if len(dep.Deploy.Stacks) != 2 || dep.Deploy.Stacks[1].Name != "plug-control-plane" || dep.Deploy.Outputs["APIEndpoint"] != "https://api.example.com" {
		t.Fatalf("deploy result %+v", dep.Deploy)
	}
	if ud := dep.Deploy.Stacks[1].Outputs["UserData"]; !strings.HasPrefix(ud, "s3://plugin-test/kube-aws/roles/controller/userdata/") {
		t.Fatalf("control plane got UserDataKey %q", ud)
	}
	var logged strings.Builder
	for _, ev := range out.Events[stage.Deploy] {
		logged.WriteString(ev.Message + "\n")
	}
	if !strings.Contains(logged.String(), "CREATE_COMPLETE") {
		t.Fatalf("no stack events reported:\n%s", logged.String())
	}
	if v := out.Results[stage.Validate]; len(v.Diagnostics) != 0 {
		t.Fatalf("validate: %v", v.Diagnostics)
	}

	// Again: nothing changes.
	out, err = plugintest.RunWith(t, bin, opts, in, stage.Deploy)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range out.Results[stage.Deploy].Deploy.Stacks {
		if s.Changed {
			t.Fatalf("second deploy changed %s", s.Name)
		}
	}

	// A lock left by a dead deploy: a fatal diagnostic naming the holder and
	// --force-unlock; with --force-unlock the deploy goes through.
	lock := `{"who":"ci@runner-7 pid 4242","since":"2026-11-21T08:00:00Z","operation":"deploy"}`
	if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("plugin-test"), Key: aws.String("kube-aws/deploy.lock"), Body: strings.NewReader(lock)}); err != nil {
		t.Fatal(err)
	}
	out, err = plugintest.RunWith(t, bin, opts, in, stage.Deploy)
	if err != nil {
		t.Fatal(err)
	}
	ds := out.Results[stage.Deploy].Diagnostics
	if !ds.HasFatal() || !strings.Contains(ds[0].Message, "ci@runner-7 pid 4242") || !strings.Contains(ds[0].Hint, "--force-unlock") {
		t.Fatalf("deploy with a stale lock: %v", ds)
	}
	unlock := *in
	unlock.AWS = &stage.AWSSettings{EndpointURL: url, ForceUnlock: true}
	out, err = plugintest.RunWith(t, bin, opts, &unlock, stage.Deploy)
	if err != nil || out.Results[stage.Deploy].Diagnostics.HasFatal() {
		t.Fatalf("deploy with --force-unlock: %v %v", err, out.Results[stage.Deploy].Diagnostics)
	}
	// The lock a deploy takes names kube-aws's process (the plugin's
	// parent), not the plugin's own, which an operator never sees.
	if !lockedBy(t, out.Events[stage.Deploy], os.Getpid()) {
		t.Errorf("the deploy lock does not name kube-aws's process %d:\n%s", os.Getpid(), out.Output)
	}

	// Diff and destroy are operations of the same plugin: nothing to change
	// after the deploy, then every stack deleted.
	out, err = plugintest.RunWith(t, bin, opts, in, stage.Diff)
	if err != nil || out.Results[stage.Diff].Diagnostics.HasFatal() {
		t.Fatalf("diff: %v %v", err, out.Results[stage.Diff].Diagnostics)
	}
	if d := out.Results[stage.Diff].Diff; d == nil || d.Changed || len(d.Stacks) != 2 || d.Stacks[0].Action != stage.ActionNone {
		t.Fatalf("diff after deploy: %+v", d)
	}

	// plugins.deploy.values bound diff and destroy as they bound deploy:
	// a timeout too short for any AWS call fails them (the kube-aws-ops
	// helper that ran them before ignored the values).
	short := *in
	short.Values = map[string]stage.PluginValues{"deploy": {Values: json.RawMessage(`{"timeout":"1ns","parallelism":1}`)}}
	for _, op := range []stage.Name{stage.Diff, stage.Destroy} {
		out, err = plugintest.RunWith(t, bin, opts, &short, op)
		if err != nil {
			t.Fatal(err)
		}
		if ds := out.Results[op].Diagnostics; !ds.HasFatal() || !strings.Contains(ds[0].Message, "deadline exceeded") {
			t.Fatalf("%s with plugins.deploy.values.timeout 1ns: %v", op, ds)
		}
	}

	out, err = plugintest.RunWith(t, bin, opts, in, stage.Destroy)
	if err != nil || out.Results[stage.Destroy].Diagnostics.HasFatal() {
		t.Fatalf("destroy: %v %v", err, out.Results[stage.Destroy].Diagnostics)
	}
	if d := out.Results[stage.Destroy].Destroy; d == nil || len(d.Deleted) != 2 {
		t.Fatalf("destroy result %+v", d)
	}
}

// lockedBy reports whether the deploy's log names the locking process.
func lockedBy(t *testing.T, events []stage.Event, pid int) bool {
	t.Helper()
	for _, ev := range events {
		if strings.Contains(ev.Message, "locked") && strings.Contains(ev.Message, fmt.Sprintf("kube-aws pid %d", pid)) {
			return true
		}
	}
	return false
}
