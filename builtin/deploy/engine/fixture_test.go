package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/kube-aws/kube-aws/core/nodeplan"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/test/awstest"
	"github.com/kube-aws/kube-aws/test/faultproxy"
)

// motoURL is one moto for the whole package: starting it takes about half a
// second, and every test works on its own cluster name and bucket.
var motoURL string

func TestMain(m *testing.M) {
	url, stop, err := awstest.StartServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, "engine tests need moto:", err)
		os.Exit(1)
	}
	motoURL = url
	if err := awstest.WarmUp(context.Background(), url); err != nil {
		stop()
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

var clusterSeq atomic.Int64

// fixture is one test cluster: a bucket, a KMS key, a proxy in front of
// moto, and a render output written by hand.
type fixture struct {
	t       testing.TB
	name    string
	bucket  string
	kmsARN  string
	proxy   *faultproxy.Proxy
	cfn     *cloudformation.Client
	s3      *s3.Client
	kms     *kms.Client
	dir     string
	pools   map[string]int // node pool -> desired capacity
	big     bool           // pad the control plane template over 51,200 bytes
	events  *eventLog
	secrets map[string]string
	// noCharts leaves charts/releases.json out of the render, as when the
	// helm plugin is disabled.
	noCharts bool
	// discovery, when set, is the issuer of OIDC discovery documents the
	// render holds (published at fixed, public keys).
	discovery string
	// releases is charts/releases.json's content ("[]" when nil).
	releases []byte
	// machines gives the pools' templates the bootstrap's node agent
	// parameters and the Target a kube-aws-node folder and a mirrored
	// artifact.
	machines bool
}

type eventLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *eventLog) Report(e Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, e.String())
}

func (l *eventLog) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func newFixture(t testing.TB, pools map[string]int) *fixture {
	t.Helper()
	n := clusterSeq.Add(1)
	f := &fixture{
		t:      t,
		name:   fmt.Sprintf("c%d%d", time.Now().UnixNano()%100000, n),
		pools:  pools,
		events: &eventLog{},
	}
	f.bucket = "kube-aws-test-" + f.name
	p, err := faultproxy.Start(motoURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	f.proxy = p
	cfg := f.awsConfig()
	f.cfn = cloudformation.NewFromConfig(cfg, func(o *cloudformation.Options) { o.BaseEndpoint = aws.String(motoURL) })
	f.s3 = s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(motoURL)
		o.UsePathStyle = true
		o.DisableLogOutputChecksumValidationSkipped = true
	})
	f.kms = kms.NewFromConfig(cfg, func(o *kms.Options) { o.BaseEndpoint = aws.String(motoURL) })
	ctx := context.Background()
	if _, err := f.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(f.bucket)}); err != nil {
		t.Fatal(err)
	}
	key, err := f.kms.CreateKey(ctx, &kms.CreateKeyInput{Description: aws.String("kube-aws test " + f.name)})
	if err != nil {
		t.Fatal(err)
	}
	f.kmsARN = aws.ToString(key.KeyMetadata.Arn)
	f.dir = t.TempDir()
	return f
}

func (f *fixture) awsConfig() aws.Config {
	cfg, err := awsconfig.LoadDefaultConfig(context.Background(),
		awsconfig.WithRegion(awstest.Region), awsconfig.WithCredentialsProvider(awstest.Credentials()))
	if err != nil {
		f.t.Fatal(err)
	}
	return cfg
}

// engine returns an engine that talks to moto through the fault proxy, with
// retries tuned so that a fault that never clears fails the test quickly.
func (f *fixture) engine(mod ...func(*Options)) *Engine {
	f.t.Helper()
	o := Options{
		Region:       awstest.Region,
		EndpointURL:  f.proxy.URL,
		Credentials:  awstest.Credentials(),
		Timeout:      2 * time.Minute,
		PollInterval: 200 * time.Millisecond,
		MaxAttempts:  4,
		MaxBackoff:   20 * time.Millisecond,
		Reporter:     f.events,
		Who:          "tester@" + f.name,
	}
	for _, m := range mod {
		m(&o)
	}
	e, err := New(context.Background(), o)
	if err != nil {
		f.t.Fatal(err)
	}
	return e
}

type obj = map[string]any

func ref(n string) obj { return obj{"Ref": n} }

// render writes the templates of a small cluster and returns the target:
// network (VPC, subnet, security group) -> iam (role, instance profile) ->
// control-plane (security group, API endpoint output) -> one stack per node
// pool (launch template + auto scaling group) taking parameters from network
// and iam, plus AssetsBucket and UserDataKey: the shape of a real cluster.
func (f *fixture) render() Target {
	f.t.Helper()
	stacks := []stage.StackSpec{}
	files := map[string][]byte{}
	add := func(name string, tmpl obj, spec stage.StackSpec) {
		b, err := json.MarshalIndent(tmpl, "", "  ")
		if err != nil {
			f.t.Fatal(err)
		}
		spec.Name, spec.Template = name, "stacks/"+name+".json"
		files[spec.Template] = b
		stacks = append(stacks, spec)
	}
	add("network", obj{
		"Parameters": obj{"VPCCIDR": obj{"Type": "String", "Default": "10.0.0.0/16"}},
		"Resources": obj{
			"VPC":    obj{"Type": "AWS::EC2::VPC", "Properties": obj{"CidrBlock": ref("VPCCIDR")}},
			"Subnet": obj{"Type": "AWS::EC2::Subnet", "Properties": obj{"VpcId": ref("VPC"), "CidrBlock": "10.0.1.0/24", "AvailabilityZone": "us-east-1a"}},
			"NodeSG": obj{"Type": "AWS::EC2::SecurityGroup", "Properties": obj{"GroupDescription": "nodes", "VpcId": ref("VPC")}},
		},
		"Outputs": obj{
			"VPCId":    obj{"Value": ref("VPC")},
			"SubnetId": obj{"Value": ref("Subnet")},
			"NodeSG":   obj{"Value": ref("NodeSG")},
		},
	}, stage.StackSpec{Tags: map[string]string{"kube-aws:stack": "network"}})
	add("iam", obj{
		"Resources": obj{
			"NodeRole": obj{"Type": "AWS::IAM::Role", "Properties": obj{
				"AssumeRolePolicyDocument": obj{"Version": "2012-10-17", "Statement": []obj{{"Effect": "Allow", "Principal": obj{"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}}},
			}},
			"NodeProfile": obj{"Type": "AWS::IAM::InstanceProfile", "Properties": obj{"Roles": []any{ref("NodeRole")}}},
		},
		"Outputs": obj{"NodeProfile": obj{"Value": ref("NodeProfile")}},
	}, stage.StackSpec{})
	cp := obj{
		// The render side names the file that fills a parameter.
		// ChartsKey is optional, as the real ChartsIndexKey: its default
		// stands when the render has no charts/releases.json.
		"Metadata":   obj{"kube-aws": obj{"parameterFiles": obj{"BootKey": "userdata/controller.yaml", "ChartsKey": "charts/releases.json"}}},
		"Parameters": obj{"VPCId": obj{"Type": "String"}, "BootKey": obj{"Type": "String"}, "ChartsKey": obj{"Type": "String", "Default": ""}},
		"Resources": obj{
			"APISG": obj{"Type": "AWS::EC2::SecurityGroup", "Properties": obj{"GroupDescription": "api", "VpcId": ref("VPCId")}},
		},
		"Outputs": obj{
			"APIEndpoint": obj{"Value": obj{"Fn::Sub": "https://api.${AWS::StackName}.example.com"}},
			"BootKey":     obj{"Value": ref("BootKey")},
			"ChartsKey":   obj{"Value": obj{"Fn::Sub": "key=${ChartsKey}"}},
		},
	}
	if f.big {
		cp["Resources"].(obj)["APISG"].(obj)["Metadata"] = obj{"Padding": strings.Repeat("kube-aws ", 7000)}
	}
	add("control-plane", cp, stage.StackSpec{ParameterSources: map[string]names.Source{"VPCId": names.From("network", "VPCId")}, DependsOn: []string{"iam"}})
	for pool, size := range f.pools {
		add("nodepool-"+pool, obj{
			"Parameters": obj{
				"SubnetId": obj{"Type": "String"}, "SecurityGroupId": obj{"Type": "String"}, "InstanceProfile": obj{"Type": "String"},
				"AssetsBucket": obj{"Type": "String"}, "UserDataKey": obj{"Type": "String"},
			},
			"Resources": obj{
				"LaunchTemplate": obj{"Type": "AWS::EC2::LaunchTemplate", "Properties": obj{"LaunchTemplateData": obj{
					"ImageId": "ami-12c6146b", "InstanceType": "t3.micro",
					"SecurityGroupIds":   []any{ref("SecurityGroupId")},
					"IamInstanceProfile": obj{"Name": ref("InstanceProfile")},
					"UserData":           obj{"Fn::Base64": obj{"Fn::Sub": "#!/bin/sh\naws s3 cp s3://${AssetsBucket}/${UserDataKey} /var/lib/kube-aws/userdata\n"}},
				}}},
				"Group": obj{"Type": "AWS::AutoScaling::AutoScalingGroup", "Properties": obj{
					"MinSize": "0", "MaxSize": "10", "DesiredCapacity": fmt.Sprint(size),
					"VPCZoneIdentifier": []any{ref("SubnetId")},
					"LaunchTemplate":    obj{"LaunchTemplateId": ref("LaunchTemplate"), "Version": obj{"Fn::GetAtt": []any{"LaunchTemplate", "LatestVersionNumber"}}},
				}},
			},
			"Outputs": obj{"GroupName": obj{"Value": ref("Group")}},
		}, stage.StackSpec{DependsOn: []string{"control-plane"}, ParameterSources: map[string]names.Source{
			"SubnetId": names.From("network", "SubnetId"), "SecurityGroupId": names.From("network", "NodeSG"), "InstanceProfile": names.From("iam", "NodeProfile"),
		}})
		// The pools' userdata names every secret, so each pool gets them.
		files["userdata/nodepool-"+pool+".yaml"] = f.userdata(pool)
		if f.machines {
			params := stacks[len(stacks)-1]
			tmpl := map[string]any{}
			if err := json.Unmarshal(files[params.Template], &tmpl); err != nil {
				f.t.Fatal(err)
			}
			ps := tmpl["Parameters"].(map[string]any)
			for _, p := range []string{"AssetsPrefix", "NodeAgentKeyAmd64", "NodeAgentKeyArm64"} {
				ps[p] = obj{"Type": "String"}
			}
			tmpl["Outputs"].(map[string]any)["NodeAgent"] = obj{"Value": obj{"Fn::Sub": "${AssetsPrefix} ${NodeAgentKeyAmd64} ${UserDataKey}"}}
			b, _ := json.MarshalIndent(tmpl, "", "  ")
			files[params.Template] = b
		}
	}
	files["userdata/controller.yaml"] = []byte("#cloud-config\n")
	if f.discovery != "" {
		files["oidc/.well-known/openid-configuration"] = []byte(`{"issuer":"` + f.discovery + `"}`)
		files["oidc/keys.json"] = []byte(`{"keys":[]}`)
	}
	if !f.noCharts {
		files["charts/releases.json"] = []byte("[]\n")
		if f.releases != nil {
			files["charts/releases.json"] = f.releases
		}
	}
	if err := os.RemoveAll(f.dir); err != nil {
		f.t.Fatal(err)
	}
	var manifest []stage.ManifestFile
	for path, b := range files {
		full := filepath.Join(f.dir, filepath.FromSlash(path))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			f.t.Fatal(err)
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			f.t.Fatal(err)
		}
		manifest = append(manifest, stage.ManifestFile{Path: path, Size: int64(len(b))})
	}
	return Target{
		Cluster: &config.Cluster{
			ClusterName: f.name, Region: awstest.Region, S3URI: "s3://" + f.bucket + "/clusters/" + f.name,
			KMSKeyARN: f.kmsARN, Tags: map[string]string{"owner": "tests"},
		},
		Rendered: &stage.Rendered{Dir: f.dir, Files: manifest, Stacks: stacks},
		Secrets:  f.secrets,
	}
}

// stack describes a CloudFormation stack of the fixture's cluster directly
// in moto (not through the proxy), or nil when it does not exist.
func (f *fixture) stack(name string) *cloudformationStack {
	f.t.Helper()
	out, err := f.cfn.DescribeStacks(context.Background(), &cloudformation.DescribeStacksInput{StackName: aws.String(f.name + "-" + name)})
	if err != nil {
		if notExist(err) {
			return nil
		}
		f.t.Fatal(err)
	}
	return &out.Stacks[0]
}

func (f *fixture) mustDeploy(e *Engine, t Target) *Result {
	f.t.Helper()
	res, err := e.Deploy(context.Background(), t)
	if err != nil {
		f.t.Fatalf("deploy: %v\nevents:\n%s", err, f.events.text())
	}
	return res
}

// userdata is a pool's #cloud-config: a file holding every secret's marker,
// listed in the secrets plan, and a script that only mentions a marker.
func (f *fixture) userdata(pool string) []byte {
	env := ""
	for _, m := range slices.Sorted(maps.Keys(f.secrets)) {
		env += "S=" + m + "\n"
	}
	doc := obj{"write_files": []obj{
		{"path": "/etc/app.env", "content": env},
		{"path": "/etc/script.sh", "content": "# replaces ((secret:...)) markers\n"},
		{"path": nodeplan.SecretsPath, "content": `{"files": [{"path": "/etc/app.env", "format": "env"}]}`},
	}}
	b, err := json.Marshal(doc)
	if err != nil {
		f.t.Fatal(err)
	}
	return append([]byte("#cloud-config\n# pool "+pool+"\n"), b...)
}
