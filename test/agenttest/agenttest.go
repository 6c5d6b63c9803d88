// Package agenttest sets up the world of a kube-aws-node step for tests:
// moto for S3, KMS, EC2 and Route 53 (reached through the SDK's own
// AWS_ENDPOINT_URL setting, as a machine whose image sets it), an instance
// metadata service speaking IMDSv2 (reached through the SDK's
// AWS_EC2_METADATA_SERVICE_ENDPOINT), a bucket, and an agent.Env made by
// agent.New exactly as on a machine, with its files under a temporary root;
// and a step's dry run, checked to change nothing under that root.
package agenttest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kms"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/awsenv"
	"github.com/kube-aws/kube-aws/node/step"
	"github.com/kube-aws/kube-aws/test/awstest"
)

// Moto starts one moto for a test package (call from TestMain; stop it
// after m.Run).
func Moto() (url string, stop func(), err error) {
	url, stop, err = awstest.StartServer()
	if err != nil {
		return "", nil, fmt.Errorf("kube-aws-node tests need moto: %w", err)
	}
	return url, stop, nil
}

// UseMoto points the SDK of this process at moto, with test credentials,
// for the rest of the test.
func UseMoto(t testing.TB, url string) {
	t.Setenv("AWS_ENDPOINT_URL", url)
	t.Setenv("AWS_ACCESS_KEY_ID", awstest.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", awstest.SecretAccessKey)
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", os.DevNull)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", os.DevNull)
}

// Instance is the machine the fake metadata service describes.
type Instance struct {
	ID, PrivateIPv4, Hostname, AvailabilityZone string
}

// IMDS serves the instance's metadata with IMDSv2's token protocol (PUT
// /latest/api/token, then GETs with X-aws-ec2-metadata-token) and points
// the SDK at it for the rest of the test. Gets counts metadata reads.
type IMDS struct {
	Gets atomic.Int64
}

// ServeIMDS starts the metadata service of in.
func ServeIMDS(t testing.TB, in Instance) *IMDS {
	m := &IMDS{}
	region := strings.TrimRight(in.AvailabilityZone, "abcdefghijklmnopqrstuvwxyz")
	paths := map[string]string{
		"/latest/meta-data/instance-id":                 in.ID,
		"/latest/meta-data/local-ipv4":                  in.PrivateIPv4,
		"/latest/meta-data/local-hostname":              in.Hostname,
		"/latest/meta-data/placement/availability-zone": in.AvailabilityZone,
		"/latest/meta-data/placement/region":            region,
	}
	const token = "kube-aws-test-token"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && r.URL.Path == "/latest/api/token" {
			w.Header().Set("X-Aws-Ec2-Metadata-Token-Ttl-Seconds", r.Header.Get("X-Aws-Ec2-Metadata-Token-Ttl-Seconds"))
			fmt.Fprint(w, token)
			return
		}
		if r.Header.Get("X-Aws-Ec2-Metadata-Token") != token {
			http.Error(w, "IMDSv2 token required", http.StatusUnauthorized)
			return
		}
		v, ok := paths[r.URL.Path]
		if !ok || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		m.Gets.Add(1)
		fmt.Fprint(w, v)
	}))
	t.Cleanup(srv.Close)
	t.Setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", srv.URL)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "")
	return m
}

// DefaultInstance is the machine tests run as unless they say otherwise.
var DefaultInstance = Instance{ID: "i-0123456789abcdef0", PrivateIPv4: "10.0.1.23", Hostname: "ip-10-0-1-23.ec2.internal", AvailabilityZone: awstest.Region + "a"}

var bucketSeq atomic.Int64

// Settings makes a bucket in moto and returns settings naming it.
func Settings(t testing.TB, role string) nodeplan.Settings {
	t.Helper()
	s := nodeplan.Settings{
		Cluster: "demo", Region: awstest.Region, Role: role,
		Bucket: fmt.Sprintf("kube-aws-node-test-%d-%d", os.Getpid(), bucketSeq.Add(1)), Prefix: "clusters/demo",
	}
	cfg, err := awsenv.Load(context.Background(), s.Region)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := awsenv.S3(cfg).CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(s.Bucket)}); err != nil {
		t.Fatalf("creating bucket %s in moto: %v", s.Bucket, err)
	}
	return s
}

// SetSettings puts s in the environment, as the bootstrap does.
func SetSettings(t testing.TB, s nodeplan.Settings) {
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	for _, k := range []string{nodeplan.EnvPrefix, nodeplan.EnvUserDataKey, nodeplan.EnvKMSKeyARN} {
		if _, set := os.LookupEnv(k); !set {
			t.Setenv(k, "")
		}
	}
}

// Output collects what a step writes for people.
type Output struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

// Reset forgets what was written.
func (o *Output) Reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.b.Reset()
}

func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// Env makes the Env of a step with agent.New, on a machine whose files
// are under root: settings from the environment (SetSettings), facts from
// the metadata service (ServeIMDS), AWS from moto (UseMoto).
func Env(t testing.TB, step, root string) (*agent.Env, *Output) {
	t.Helper()
	out := &Output{}
	e, err := agent.New(context.Background(), step, agent.Options{Root: root, Stderr: out})
	if err != nil {
		t.Fatalf("agent.New: %v", err)
	}
	return e, out
}

// Machine is the usual set-up of a test: moto, a bucket, the metadata
// service of DefaultInstance, settings for role in the environment, and an
// Env for step under a fresh root.
func Machine(t testing.TB, motoURL, role, step string) (*agent.Env, *Output) {
	t.Helper()
	UseMoto(t, motoURL)
	ServeIMDS(t, DefaultInstance)
	s := Settings(t, role)
	SetSettings(t, s)
	return Env(t, step, t.TempDir())
}

// Containerd starts a containerd of the test's own (its root, state and
// socket in a temporary folder) and returns its socket; it is stopped at
// the end of the test. The machine image's containerd is the same program.
func Containerd(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kube-aws-containerd-")
	if err != nil {
		t.Fatal(err)
	}
	sock := dir + "/containerd.sock"
	cfg := fmt.Sprintf("version = 2\nroot = %q\nstate = %q\n[grpc]\n  address = %q\n[ttrpc]\n  address = %q\n", dir+"/root", dir+"/state", sock, sock+".ttrpc")
	if err := os.WriteFile(dir+"/config.toml", []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var log Output
	cmd := exec.Command("containerd", "--config", dir+"/config.toml")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting containerd (the machine image has it; here: apt-get install containerd): %v", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		// Unpacked layers may still be mounted by the snapshotter.
		_ = exec.Command("umount", "-R", dir+"/root").Run()
		os.RemoveAll(dir)
	})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if err := exec.Command("ctr", "--address", sock, "version").Run(); err == nil {
			return sock
		}
		select {
		case <-exited:
			t.Fatalf("containerd exited:\n%s", log.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	t.Fatalf("containerd did not answer within 20s:\n%s", log.String())
	return ""
}

// MotoMain is a test package's TestMain: it starts one moto for the
// package, sets *url to it, runs the tests and stops it.
func MotoMain(m *testing.M, url *string) {
	u, stop, err := Moto()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*url = u
	code := m.Run()
	stop()
	os.Exit(code)
}

// WritePlan writes a plan where the role's userdata would, under e's root.
func WritePlan(t testing.TB, e *agent.Env, path string, p nodeplan.Plan) {
	t.Helper()
	b, err := nodeplan.Encode(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(e.Path(nodeplan.Dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(e.Path(path), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// UploadSecrets encrypts each marker's value with a new KMS key under
// context, as deploy does, and stores it where role's machines look
// (nodeplan.SecretKey).
func UploadSecrets(t testing.TB, e *agent.Env, role string, context map[string]string, values map[string]string) {
	t.Helper()
	ctx := t.Context()
	k := kms.NewFromConfig(e.AWS)
	key, err := k.CreateKey(ctx, &kms.CreateKeyInput{})
	if err != nil {
		t.Fatal(err)
	}
	for marker, v := range values {
		enc, err := k.Encrypt(ctx, &kms.EncryptInput{KeyId: key.KeyMetadata.Arn, Plaintext: []byte(v), EncryptionContext: context})
		if err != nil {
			t.Fatal(err)
		}
		_, err = awsenv.S3(e.AWS).PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(e.Settings.Bucket), Key: aws.String(e.Settings.Key(nodeplan.SecretKey(role, marker))),
			Body: bytes.NewReader(enc.CiphertextBlob),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// DryEnv is e's machine as `kube-aws-node <step> --dry-run` sees it: an
// Env made by agent.New with DryRun, under e's root, with the settings of
// the process's environment and the facts e kept.
func DryEnv(t testing.TB, e *agent.Env) (*agent.Env, *Output) {
	t.Helper()
	out := &Output{}
	d, err := agent.New(context.Background(), e.Step, agent.Options{Root: e.Root, Stderr: out, DryRun: true})
	if err != nil {
		t.Fatalf("agent.New: %v", err)
	}
	return d, out
}

// DryRun runs s's dry run on e, as `kube-aws-node <step> --dry-run --json`
// does, fails the test if anything under e's root changed meanwhile, and
// returns the changes it printed, as Change.String says them.
func DryRun(t testing.TB, e *agent.Env, s step.Step) ([]string, error) {
	t.Helper()
	before := tree(t, e.Root)
	var out bytes.Buffer
	err := step.DryRun(context.Background(), e, s, &out, true)
	if after := tree(t, e.Root); !maps.Equal(before, after) {
		for p, v := range after {
			if before[p] != v {
				t.Errorf("the dry run changed %s", p)
			}
		}
		for p := range before {
			if _, ok := after[p]; !ok {
				t.Errorf("the dry run removed %s", p)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	var printed struct {
		Step    string
		Changes step.Changes
	}
	if err := json.Unmarshal(out.Bytes(), &printed); err != nil || printed.Step != s.Name() || printed.Changes == nil {
		t.Fatalf("the dry run printed %s (%v)", out.Bytes(), err)
	}
	lines := []string{}
	for _, c := range printed.Changes {
		lines = append(lines, c.String())
	}
	return lines, nil
}

// Want is what a dry run should say: its changes, as Change.String says
// them, or an error holding Err with exit code Code.
type Want struct {
	Changes []string
	Err     string
	Code    int
}

// ExpectDryRun runs DryRun and checks what it said against want.
func ExpectDryRun(t testing.TB, e *agent.Env, s step.Step, want Want) {
	t.Helper()
	got, err := DryRun(t, e, s)
	switch {
	case want.Err != "":
		if err == nil || !strings.Contains(err.Error(), want.Err) || agent.ExitCode(err) != want.Code {
			t.Errorf("dry run: err = %v (exit %d), want %q (exit %d)", err, agent.ExitCode(err), want.Err, want.Code)
		}
	case err != nil:
		t.Errorf("dry run: %v", err)
	case strings.Join(got, "\n") != strings.Join(want.Changes, "\n"):
		t.Errorf("dry run: changes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want.Changes, "\n"))
	}
}

// tree is every file, folder and link under root: its mode, time and
// content (a link's target).
func tree(t testing.TB, root string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		v := fmt.Sprintf("%v %d", info.Mode(), info.ModTime().UnixNano())
		switch {
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += " " + nodeplan.SHA256Hex(b)
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			v += " -> " + target
		}
		m[p] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
