package members

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// load parses a cluster.yaml the way kube-aws does before any stage.
func load(t *testing.T, file string) *config.Cluster {
	t.Helper()
	y, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	c, diags := config.Parse(file, y)
	config.ApplyDefaults(c)
	diags = append(diags, config.Validate(c, file)...)
	if diags.HasFatal() {
		t.Fatalf("%s: %v", file, diags)
	}
	return c
}

var fixtures = map[string]string{
	"full":    filepath.Join("..", "..", "..", "cloudformation", "testdata", "full.yaml"),
	"minimal": filepath.Join("..", "..", "..", "cloudformation", "testdata", "minimal.yaml"),
	"example": filepath.Join("..", "..", "..", "..", "cluster.yaml.example"),
}

// TestInitialiseGolden pins everything the plugin contributes for each
// fixture; -update rewrites the golden files.
func TestInitialiseGolden(t *testing.T) {
	for name, file := range fixtures {
		t.Run(name, func(t *testing.T) {
			c := load(t, file)
			set, d := Initialise(c, Values{})
			if d.HasFatal() {
				t.Fatal(d)
			}
			got, err := json.MarshalIndent(set, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden := filepath.Join("testdata", name+".json")
			if *update {
				if err := os.WriteFile(golden, append(got, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (go test -update writes it)", err)
			}
			if string(want) != string(got)+"\n" {
				t.Errorf("constructs differ from %s (go test -update to accept)", golden)
			}
		})
	}
}

func TestMembersSpreadOverSubnets(t *testing.T) {
	c := load(t, fixtures["full"])
	subnets, err := c.MachineSubnets(c.Etcd.Subnets)
	if err != nil {
		t.Fatal(err)
	}
	ms := Members(c, subnets)
	zones := map[string]bool{}
	for i, m := range ms {
		if m.Name != names.EtcdMember(i) {
			t.Errorf("member %d is %s", i, m.Name)
		}
		zones[m.Subnet.AvailabilityZone] = true
	}
	if len(ms) != 3 || len(zones) != 3 {
		t.Errorf("%d members in %d zones; want 3 in 3", len(ms), len(zones))
	}
	st := Stack(c, ms, 20)
	for i := range ms {
		var g struct {
			DependsOn  []string
			Properties struct{ VPCZoneIdentifier []any }
		}
		if err := json.Unmarshal(st.Resources[MemberGroup(i)], &g); err != nil {
			t.Fatal(err)
		}
		if len(g.Properties.VPCZoneIdentifier) != 1 {
			t.Errorf("member %d's group spans %d subnets; want its volume's one", i, len(g.Properties.VPCZoneIdentifier))
		}
		wantDeps := 2
		if i > 0 {
			wantDeps = 3 // and the group before it: members are replaced one at a time
		}
		if len(g.DependsOn) != wantDeps {
			t.Errorf("member %d depends on %v", i, g.DependsOn)
		}
	}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name     string
		count    int
		interval string
		want     string
		sev      diag.Severity
	}{
		{"three members", 3, "", "", ""},
		{"one member", 1, "", "etcd.count is 1", diag.Warning},
		{"snapshots off", 3, "0", "", ""},
		{"snapshots every 30m", 3, "30m", "", ""},
		{"too often", 3, "1m", "shorter than 5m", diag.Fatal},
		{"not a duration", 3, "hourly", "not a duration", diag.Fatal},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &config.Cluster{Etcd: config.MachineSet{Count: tc.count}}
			d := Check(c, Values{SnapshotInterval: tc.interval})
			if tc.want == "" {
				if len(d) != 0 {
					t.Fatalf("got %v", d)
				}
				return
			}
			if len(d) != 1 || d[0].Severity != tc.sev || !strings.Contains(d[0].Message, tc.want) || d[0].Path == "" || d[0].Hint == "" {
				t.Errorf("got %v; want one %s with %q, a path and a hint", d, tc.sev, tc.want)
			}
		})
	}
}

// TestUnit checks what etcd reads from the unit: every member of the
// cluster in --initial-cluster under the names their records have, the
// member's name from the fact kube-aws-node writes, and the files the pki
// plugin issues.
func TestUnit(t *testing.T) {
	u := UnitContent("demo", 3)
	for _, want := range []string{
		"--initial-cluster=etcd0=https://etcd0.demo.internal:2380,etcd1=https://etcd1.demo.internal:2380,etcd2=https://etcd2.demo.internal:2380",
		"--name=${" + nodeplan.FactEnvName(names.FactEtcdMember) + "}",
		"--advertise-client-urls=https://${KUBE_AWS_FACT_ETCDMEMBER}.demo.internal:2379",
		"EnvironmentFile=" + nodeplan.FactsEnvPath,
		"--peer-cert-file=" + names.PKIEtcdPeerCert,
		"--trusted-ca-file=" + names.PKIEtcdCACert,
		"RequiresMountsFor=" + names.EtcdDataDir,
	} {
		if !strings.Contains(u, want) {
			t.Errorf("unit lacks %s:\n%s", want, u)
		}
	}
}

func TestInitialiseBadSubnet(t *testing.T) {
	c := load(t, fixtures["minimal"])
	c.Etcd.Subnets = []string{"nowhere"}
	_, d := Initialise(c, Values{})
	if f, _ := d.Count(); f != 1 || d[len(d)-1].Path != "etcd.subnets" {
		t.Errorf("got %v", d)
	}
}

// TestSnapshotsNeedKMS: without the cluster's KMS key there is nothing to
// store snapshots under, so they are off, with a warning naming kmsKeyArn.
func TestSnapshotsNeedKMS(t *testing.T) {
	c := load(t, fixtures["full"])
	c.KMSKeyARN = ""
	set, d := Initialise(c, Values{})
	if len(d) != 1 || d[0].Severity != diag.Warning || d[0].Path != "kmsKeyArn" || len(set.Units) != 1 {
		t.Errorf("got %v and units %d; want a warning at kmsKeyArn and etcd.service alone", d, len(set.Units))
	}
	c.KMSKeyARN = "arn:aws:kms:us-east-1:123456789012:key/k"
	set, d = Initialise(c, Values{})
	if len(d) != 0 || len(set.Units) != 3 || !strings.Contains(set.Units[1].Content, "KUBE_AWS_KMS_KEY_ARN=arn:aws:kms:us-east-1:123456789012:key/k") {
		t.Errorf("got %v and units %+v", d, set.Units)
	}
}
