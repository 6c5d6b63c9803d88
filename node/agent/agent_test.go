package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/envfile"
	"github.com/kube-aws/kube-aws/node/retry"
	"github.com/kube-aws/kube-aws/test/agenttest"
)

var motoURL string

func TestMain(m *testing.M) { agenttest.MotoMain(m, &motoURL) }

func TestNew(t *testing.T) {
	agenttest.UseMoto(t, motoURL)
	imds := agenttest.ServeIMDS(t, agenttest.DefaultInstance)
	s := agenttest.Settings(t, "nodepool-spot")
	s.UserDataKey = "clusters/demo/roles/nodepool-spot/userdata/" + strings.Repeat("ab", 32)
	agenttest.SetSettings(t, s)
	root := t.TempDir()
	e, out := agenttest.Env(t, "boot", root)

	f := e.Facts
	if f[nodeplan.FactInstanceID] != "i-0123456789abcdef0" || f[nodeplan.FactPrivateIPv4] != "10.0.1.23" || f[nodeplan.FactRegion] != "us-east-1" || f[nodeplan.FactAvailabilityZone] != "us-east-1a" {
		t.Errorf("facts = %v", f)
	}
	// Kept for later steps and for units.
	env, err := os.ReadFile(filepath.Join(root, nodeplan.FactsEnvPath))
	if err != nil {
		t.Fatal(err)
	}
	parsed, _ := envfile.Parse(env)
	if v, _ := parsed.Lookup("KUBE_AWS_FACT_HOSTNAME"); v != "ip-10-0-1-23.ec2.internal" {
		t.Errorf("facts.env = %s", env)
	}
	gets := imds.Gets.Load()
	e2, _ := agenttest.Env(t, "secrets", root)
	if imds.Gets.Load() != gets || e2.Facts[nodeplan.FactInstanceID] != f[nodeplan.FactInstanceID] {
		t.Error("a later step read IMDS again instead of the kept facts")
	}
	if err := e2.AddFacts(nodeplan.Facts{"member": "etcd1"}); err != nil {
		t.Fatal(err)
	}
	// A fresh read keeps derived facts.
	e3, err := agent.New(t.Context(), "boot", agent.Options{Root: root, Stderr: io.Discard, FreshFacts: true})
	if err != nil {
		t.Fatal(err)
	}
	if e3.Facts["member"] != "etcd1" || imds.Gets.Load() == gets {
		t.Errorf("fresh facts = %v", e3.Facts)
	}

	// Lines name role, time and step; the status lands in S3.
	e.Logf("hello")
	if !strings.Contains(out.String(), "kube-aws-node[nodepool-spot]") || !strings.Contains(out.String(), "boot: hello") {
		t.Errorf("line = %q", out)
	}
	e.Report.Report(t.Context(), nodeplan.PhaseFailed, "runcmd[2]", errors.New("exit status 1"))
	res, err := e.Store.S3.GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String(s.Bucket), Key: aws.String("clusters/demo/status/nodepool-spot/i-0123456789abcdef0.json")})
	if err != nil {
		t.Fatal(err)
	}
	var st nodeplan.Status
	json.NewDecoder(res.Body).Decode(&st)
	if st.Phase != nodeplan.PhaseFailed || st.Step != "runcmd[2]" || st.Error != "exit status 1" || st.Address != "10.0.1.23" || st.Role != "nodepool-spot" || st.Time == "" {
		t.Errorf("status = %+v", st)
	}
	// Every status says which userdata the machine booted from.
	if st.UserData != s.UserDataKey {
		t.Errorf("status names userdata %q, want %q", st.UserData, s.UserDataKey)
	}
	if last, ok := e.Report.Last(); !ok || last.Phase != nodeplan.PhaseFailed {
		t.Errorf("local status = %+v %v", last, ok)
	}
	if !strings.Contains(out.String(), "runcmd[2]: FAILED: exit status 1") {
		t.Errorf("failure not on the console: %s", out)
	}
}

// Steps run by systemd after boot have no bootstrap environment: boot kept
// the settings in node.env.
func TestSettingsFromFile(t *testing.T) {
	agenttest.UseMoto(t, motoURL)
	agenttest.ServeIMDS(t, agenttest.DefaultInstance)
	s := agenttest.Settings(t, "etcd")
	root := t.TempDir()
	p := filepath.Join(root, nodeplan.SettingsEnvPath)
	os.MkdirAll(filepath.Dir(p), 0o755)
	var pairs [][2]string
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		pairs = append(pairs, [2]string{k, v})
	}
	os.WriteFile(p, envfile.Encode(pairs), 0o644)
	for _, k := range []string{nodeplan.EnvCluster, nodeplan.EnvRegion, nodeplan.EnvBucket, nodeplan.EnvPrefix, nodeplan.EnvRole, nodeplan.EnvUserDataKey, nodeplan.EnvKMSKeyARN} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv(nodeplan.EnvRole, "controller") // the environment wins
	e, _ := agenttest.Env(t, "etcd-snapshot", root)
	if e.Settings.Bucket != s.Bucket || e.Settings.Role != "controller" || e.Settings.Cluster != "demo" {
		t.Errorf("settings = %+v", e.Settings)
	}
}

func TestMainExitCodes(t *testing.T) {
	agenttest.UseMoto(t, motoURL)
	agenttest.ServeIMDS(t, agenttest.DefaultInstance)
	root := t.TempDir()
	var out agenttest.Output

	// No settings at all: bad input, and the message says which.
	for _, k := range []string{nodeplan.EnvCluster, nodeplan.EnvRegion, nodeplan.EnvBucket, nodeplan.EnvRole} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	code := agent.Main("secrets", agent.Options{Root: root, Stderr: &out}, func(context.Context, *agent.Env) error { return nil })
	if code != agent.ExitBadInput || !strings.Contains(out.String(), "KUBE_AWS_CLUSTER, KUBE_AWS_REGION, KUBE_AWS_BUCKET, KUBE_AWS_ROLE not set") {
		t.Errorf("code %d, output %s", code, out.String())
	}

	agenttest.SetSettings(t, agenttest.Settings(t, "controller"))
	tests := []struct {
		err  error
		code int
		line string
	}{
		{nil, agent.ExitOK, "x: done in"},
		{errors.New("S3 said no"), agent.ExitFailed, "x: FAILED after"},
		{agent.BadInput(errors.New("plan is wrong")), agent.ExitBadInput, "plan is wrong"},
		{fmt.Errorf("wrapped: %w", agent.BadInput(errors.New("deep"))), agent.ExitBadInput, "wrapped: deep"},
	}
	for _, tt := range tests {
		var out agenttest.Output
		code := agent.Main("x", agent.Options{Root: root, Stderr: &out}, func(context.Context, *agent.Env) error { return tt.err })
		if code != tt.code || !strings.Contains(out.String(), tt.line) {
			t.Errorf("%v: code %d, output %q", tt.err, code, out.String())
		}
	}
	if !retry.IsPermanent(agent.BadInput(errors.New("x"))) {
		t.Error("bad input is retried")
	}
}

func TestPlanAndExpand(t *testing.T) {
	e, _ := agenttest.Machine(t, motoURL, "etcd", "dns")
	var p nodeplan.DNSPlan
	if found, err := e.Plan(nodeplan.DNSPath, &p); found || err != nil {
		t.Errorf("missing plan: %v %v", found, err)
	}
	os.MkdirAll(e.Path(nodeplan.Dir), 0o755)
	os.WriteFile(e.Path(nodeplan.DNSPath), []byte(`{"records": [{"name": "x"}]}`), 0o644)
	_, err := e.Plan(nodeplan.DNSPath, &p)
	if err == nil || agent.ExitCode(err) != agent.ExitBadInput || !strings.Contains(err.Error(), "dns.json: records[0]") {
		t.Errorf("invalid plan: %v", err)
	}
	if v, err := e.Expand("records[0].name", "{hostname}."); err != nil || v != "ip-10-0-1-23.ec2.internal." {
		t.Errorf("Expand = %q %v", v, err)
	}
	if _, err := e.Expand("records[0].name", "{member}.x"); err == nil || agent.ExitCode(err) != agent.ExitBadInput || !strings.Contains(err.Error(), "records[0].name") {
		t.Errorf("unknown fact: %v", err)
	}
}
