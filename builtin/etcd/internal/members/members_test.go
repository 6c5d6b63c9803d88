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
		// Its volume, the zone and the role's policy on the zone (the
		// machine attaches the one and upserts its record in the other as
		// it boots).
		wantDeps := 3
		if i > 0 {
			wantDeps = 4 // and the group before it: members are replaced one at a time
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

// TestTheRoleActsOnlyOnTheMembersOwn: the etcd role changes records in the
// members' zone alone (a policy in the etcd stack, which names the zone,
// attached to the role the iam stack makes), and attaches only this
// cluster's etcd data volumes to this cluster's instances.
func TestTheRoleActsOnlyOnTheMembersOwn(t *testing.T) {
	c := load(t, fixtures["full"])
	set, d := Initialise(c, Values{})
	if d.HasFatal() {
		t.Fatal(d)
	}
	st := set.Stacks[0]
	if src := st.ParameterSources[paramRoleName]; src != names.From(names.StackIAM, names.RoleNameOutput(names.RoleEtcd, "")) {
		t.Errorf("parameter %s comes from %s, want the iam stack's etcd role name", paramRoleName, src)
	}
	var policy struct {
		Type       string
		Properties struct {
			Roles          []map[string]string
			PolicyDocument struct {
				Statement []struct {
					Sid      string
					Action   []string
					Resource []map[string]string
				}
			}
		}
	}
	if err := json.Unmarshal(st.Resources[RecordsPolicy], &policy); err != nil {
		t.Fatalf("%s: %v", RecordsPolicy, err)
	}
	if policy.Type != "AWS::IAM::Policy" || len(policy.Properties.Roles) != 1 || policy.Properties.Roles[0]["Ref"] != paramRoleName {
		t.Errorf("%s is %s on roles %v, want an AWS::IAM::Policy on the role of parameter %s", RecordsPolicy, policy.Type, policy.Properties.Roles, paramRoleName)
	}
	got := map[string]string{}
	for _, s := range policy.Properties.PolicyDocument.Statement {
		for _, a := range s.Action {
			for _, r := range s.Resource {
				got[a] = r["Fn::Sub"]
			}
		}
	}
	zone := "arn:${AWS::Partition}:route53:::hostedzone/${" + PrivateZone + "}"
	for action, want := range map[string]string{
		// The dns step reads the record, upserts it and waits for the
		// change to be in sync.
		"route53:ListResourceRecordSets":   zone,
		"route53:ChangeResourceRecordSets": zone,
		"route53:GetChange":                "arn:${AWS::Partition}:route53:::change/*",
	} {
		if got[action] != want {
			t.Errorf("%s on %q, want %q", action, got[action], want)
		}
	}
	if len(got) != 3 {
		t.Errorf("the records policy allows %v, want the dns step's three actions", got)
	}

	byID := map[string]string{}
	for _, s := range set.IAM {
		b, _ := json.Marshal(s)
		byID[s.Sid] = string(b)
		if strings.HasPrefix(s.Actions[0], "route53:") {
			t.Errorf("%s is an IAM construct; the records policy in the etcd stack holds the role's Route 53 actions", s.Sid)
		}
	}
	for sid, want := range map[string]string{
		"KubeAwsEtcdVolume": `"actions":["ec2:AttachVolume"],"resources":["arn:aws:ec2:eu-west-1:*:volume/*"],` +
			`"condition":{"StringEquals":{"aws:ResourceTag/kube-aws:cluster":"prod","aws:ResourceTag/kube-aws:role":"etcd-data"}}`,
		"KubeAwsEtcdVolumeInstance": `"actions":["ec2:AttachVolume"],"resources":["arn:aws:ec2:eu-west-1:*:instance/*"],` +
			`"condition":{"StringEquals":{"aws:ResourceTag/kubernetes.io/cluster/prod":"owned"}}`,
		"KubeAwsEtcdVolumeFind": `"actions":["ec2:DescribeVolumes"],"resources":["*"]`,
	} {
		if !strings.Contains(byID[sid], want) {
			t.Errorf("%s = %s\nwant it to hold %s", sid, byID[sid], want)
		}
	}
	// The tags the condition names are the ones the stack gives the
	// volumes and the instances.
	for _, tag := range []string{`{"Key":"kube-aws:cluster","Value":"prod"}`, `{"Key":"kube-aws:role","Value":"etcd-data"}`} {
		if !strings.Contains(string(st.Resources[DataVolume(0)]), tag) {
			t.Errorf("%s lacks the tag %s its IAM condition names", DataVolume(0), tag)
		}
	}
	if !strings.Contains(string(st.Resources[MemberGroup(0)]), `{"Key":"kubernetes.io/cluster/prod","PropagateAtLaunch":true,"Value":"owned"}`) {
		t.Errorf("%s does not tag its instances with the owner tag the IAM condition names: %s", MemberGroup(0), st.Resources[MemberGroup(0)])
	}
}
