package bootstrap

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/test/awstest"
)

var apiFact = Fact{Name: "apiLoadBalancerDNS", Parameter: "APILoadBalancerDNS"}

// Every ${...} is for CloudFormation, and names a declared parameter.
func TestScriptNamesOnlyItsParameters(t *testing.T) {
	s, err := Script("demo", "nodepool-general", []Fact{apiFact})
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{"AWS::Region": true, apiFact.Parameter: true}
	for _, p := range Parameters {
		known[p.Name] = true
	}
	used := map[string]bool{}
	for _, m := range regexp.MustCompile(`\$\{([^}]*)\}`).FindAllStringSubmatch(s, -1) {
		if !known[m[1]] {
			t.Errorf("the script names ${%s}, which is no parameter", m[1])
		}
		used[m[1]] = true
	}
	for p := range known {
		if !used[p] {
			t.Errorf("parameter %s is declared but not used", p)
		}
	}
	for _, sh := range []string{"sh", "bash"} {
		if out, err := exec.Command(sh, "-n", "-c", s).CombinedOutput(); err != nil {
			t.Errorf("%s -n: %v\n%s", sh, err, out)
		}
	}
	if !strings.Contains(s, "export KUBE_AWS_FACT_APILOADBALANCERDNS='${APILoadBalancerDNS}'\n") {
		t.Errorf("fact not passed:\n%s", s)
	}
}

func TestBadInputs(t *testing.T) {
	for _, tc := range []struct {
		cluster, role string
		facts         []Fact
		want          string
	}{
		{"", "etcd", nil, "empty cluster name"},
		{"demo", "etcd'; rm -rf /", nil, "role"},
		{"demo", "etcd", []Fact{{Name: "api-dns", Parameter: "P"}}, `fact name "api-dns"`},
		{"demo", "etcd", []Fact{{Name: "dns", Parameter: "P"}, {Name: "DNS", Parameter: "Q"}}, "given twice"},
		{"demo", "etcd", []Fact{{Name: "dns", Parameter: "${x}"}}, "fact parameter"},
	} {
		if _, err := UserData(tc.cluster, tc.role, tc.facts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q %q %v: error %v, want %q", tc.cluster, tc.role, tc.facts, err, tc.want)
		}
	}
}

// The script, run by a real shell with real curl against moto's S3 and an
// IMDSv2 server, downloads kube-aws-node, checks it and execs it with the
// settings; a download whose sha256 differs from its key is refused. It
// runs in a user and mount namespace with a tmpfs on /opt, where the
// bootstrap installs kube-aws-node.
func TestScriptBootsKubeAWSNode(t *testing.T) {
	url := awstest.Start(t)
	ctx := context.Background()
	cfg := aws.Config{Region: awstest.Region, Credentials: awstest.Credentials()}
	s3c := s3.NewFromConfig(cfg, func(o *s3.Options) { o.BaseEndpoint = aws.String(url); o.UsePathStyle = true })
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("boot-test")}); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "ran")
	node := []byte(fmt.Sprintf("#!/bin/sh\n{ echo \"args=$*\"; env | grep ^KUBE_AWS_ | sort; } > %s\n", out))
	sum := sha256.Sum256(node)
	key := "clusters/demo/assets/" + hex.EncodeToString(sum[:])
	put := func(key string, body []byte) {
		if _, err := s3c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("boot-test"), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
			t.Fatal(err)
		}
	}
	put(key, node)
	wrongKey := "clusters/demo/assets/" + strings.Repeat("0", 64)
	put(wrongKey, node)

	var tokens atomic.Int32
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodPut && r.URL.Path == "/latest/api/token":
			tokens.Add(1)
			fmt.Fprint(w, "tok")
		case r.Header.Get("X-aws-ec2-metadata-token") != "tok":
			http.Error(w, "no token", http.StatusUnauthorized)
		case r.URL.Path == "/latest/meta-data/iam/security-credentials/":
			fmt.Fprint(w, "demo-nodepool-general")
		case r.URL.Path == "/latest/meta-data/iam/security-credentials/demo-nodepool-general":
			fmt.Fprint(w, `{"Code": "Success", "AccessKeyId": "AKIAEXAMPLE", "SecretAccessKey": "c2VjcmV0/+=", "Token": "sess/ion+token=", "Expiration": "2099-01-01T00:00:00Z"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer imds.Close()

	// A folder of the tools the script and this test call, less openssl:
	// the script then checks the download with sha256sum.
	noOpenSSL := t.TempDir()
	for _, tool := range []string{"sh", "curl", "mkdir", "basename", "sed", "head", "tr", "chmod", "mv", "cut", "sha256sum", "uname", "unshare", "mount", "env", "sort", "grep", "cat"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(noOpenSSL, tool)); err != nil {
			t.Fatal(err)
		}
	}
	path := os.Getenv("PATH")
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Fatal("openssl is not installed: the test covers the script with it and without it")
	}

	run := func(nodeKey string) (string, error) {
		s, err := Script("demo", "nodepool-general", []Fact{apiFact})
		if err != nil {
			t.Fatal(err)
		}
		// What Fn::Sub does with the parameters deploy fills.
		for k, v := range map[string]string{
			"AWS::Region": awstest.Region, names.ParamAssetsBucket: "boot-test", names.ParamAssetsPrefix: "clusters/demo",
			names.ParamUserDataKey: "clusters/demo/roles/nodepool-general/userdata/abc", names.ParamNodeAgentKeyAMD64: nodeKey,
			names.ParamNodeAgentKeyARM64: nodeKey, apiFact.Parameter: "api-1.elb.example",
		} {
			s = strings.ReplaceAll(s, "${"+k+"}", v)
		}
		cmd := exec.Command("unshare", "-r", "-m", "sh", "-c", `mount -t tmpfs none /opt && exec sh -c "$0"`, s)
		cmd.Env = []string{"PATH=" + path, "AWS_ENDPOINT_URL=" + url + "/", "AWS_EC2_METADATA_SERVICE_ENDPOINT=" + imds.URL}
		b, err := cmd.CombinedOutput()
		return string(b), err
	}

	want := "args=boot\nKUBE_AWS_BUCKET=boot-test\nKUBE_AWS_CLUSTER=demo\nKUBE_AWS_FACT_APILOADBALANCERDNS=api-1.elb.example\n" +
		"KUBE_AWS_PREFIX=clusters/demo\nKUBE_AWS_REGION=" + awstest.Region + "\nKUBE_AWS_ROLE=nodepool-general\n" +
		"KUBE_AWS_USERDATA_KEY=clusters/demo/roles/nodepool-general/userdata/abc\n"
	for _, checker := range []struct{ name, path string }{{"openssl", os.Getenv("PATH")}, {"sha256sum", noOpenSSL}} {
		path = checker.path
		os.Remove(out)
		if o, err := run(key); err != nil {
			t.Fatalf("bootstrap checking with %s: %v\n%s", checker.name, err, o)
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatalf("checking with %s: %v", checker.name, err)
		}
		if string(got) != want {
			t.Fatalf("checking with %s, kube-aws-node ran with\n%s\nwant\n%s", checker.name, got, want)
		}

		os.Remove(out)
		o, err := run(wrongKey)
		if err == nil || !strings.Contains(o, "does not have the sha256 its key names") {
			t.Fatalf("checking with %s, a download with another sha256: %v\n%s", checker.name, err, o)
		}
		if _, err := os.Stat(out); err == nil {
			t.Fatalf("checking with %s, kube-aws-node ran from a download whose sha256 differs", checker.name)
		}
	}
	if tokens.Load() == 0 {
		t.Fatal("no IMDSv2 token was asked for")
	}
}

// What EC2 keeps of a launch template version is the script with its
// parameters filled in: ReadLaunched finds the keys in it.
func TestReadLaunched(t *testing.T) {
	s, err := Script("demo", "nodepool-a", nil)
	if err != nil {
		t.Fatal(err)
	}
	filled := strings.NewReplacer("${AWS::Region}", "us-east-1", "${AssetsBucket}", "b", "${AssetsPrefix}", "p",
		"${UserDataKey}", "p/roles/nodepool-a/userdata/abc", "${NodeAgentKeyAmd64}", "p/assets/111", "${NodeAgentKeyArm64}", "p/assets/222").Replace(s)
	want := Launched{UserDataKey: "p/roles/nodepool-a/userdata/abc", NodeAgentAMD64: "p/assets/111", NodeAgentARM64: "p/assets/222"}
	if got := ReadLaunched(filled); got != want {
		t.Errorf("ReadLaunched = %+v, want %+v", got, want)
	}
	if got := ReadLaunched("#!/bin/sh\necho hello\n"); got != (Launched{}) {
		t.Errorf("a foreign script: %+v", got)
	}
}
