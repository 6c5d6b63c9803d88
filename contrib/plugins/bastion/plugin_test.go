package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/contrib/internal/contribtest"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

func initialiseReq(t *testing.T, clusterYAML, values string) *stage.Result {
	t.Helper()
	req := contribtest.Request(t, stage.Initialise, contribtest.Cluster(t, clusterYAML), Name, schema, values, t.TempDir())
	res, err := sdk.Call(context.Background(), sdk.Typed[Values](plugin{}), req)
	if err != nil {
		t.Fatalf("initialise: %v", err)
	}
	return res
}

func body(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return m
}

func bastionStack(t *testing.T, res *stage.Result) construct.Stack {
	t.Helper()
	if res.Diagnostics.HasFatal() {
		t.Fatalf("diagnostics: %v", res.Diagnostics)
	}
	if res.Constructs == nil || len(res.Constructs.Stacks) != 1 {
		t.Fatalf("want one stack, got %+v", res.Constructs)
	}
	return res.Constructs.Stacks[0]
}

func TestBastionStackWiredToNetwork(t *testing.T) {
	res := initialiseReq(t, "", `{"allowedCIDRs": ["203.0.113.0/24", "198.51.100.7/32"], "keyName": "ops"}`)
	st := bastionStack(t, res)
	if st.Name != "bastion" || strings.Join(st.DependsOn, ",") != "network" {
		t.Errorf("stack %s depends on %v", st.Name, st.DependsOn)
	}
	// The first public subnet of the computed layout, named as the
	// cloudformation built-in names its outputs.
	wantSources := map[string]string{
		"VpcId":                     "network.VpcId",
		"SubnetId":                  "network.SubnetPublicUsEast1aId",
		"ControllerSecurityGroupId": "network.ControllerSecurityGroupId",
		"EtcdSecurityGroupId":       "network.EtcdSecurityGroupId",
		"WorkerSecurityGroupId":     "network.WorkerSecurityGroupId",
	}
	for p, src := range wantSources {
		if st.ParameterSources[p].String() != src {
			t.Errorf("parameter %s from %q, want %q", p, st.ParameterSources[p], src)
		}
		if _, ok := st.Parameters[p]; !ok {
			t.Errorf("parameter %s is wired but not declared", p)
		}
	}
	sg := body(t, st.Resources["BastionSecurityGroup"])
	ingress := sg["Properties"].(map[string]any)["SecurityGroupIngress"].([]any)
	if len(ingress) != 2 {
		t.Fatalf("ingress %v", ingress)
	}
	for i, cidr := range []string{"203.0.113.0/24", "198.51.100.7/32"} {
		r := ingress[i].(map[string]any)
		if r["CidrIp"] != cidr || r["FromPort"] != float64(22) || r["ToPort"] != float64(22) || r["IpProtocol"] != "tcp" {
			t.Errorf("ingress %d: %v", i, r)
		}
	}
	inst := body(t, st.Resources["BastionInstance"])
	props := inst["Properties"].(map[string]any)
	if inst["Type"] != "AWS::EC2::Instance" || props["InstanceType"] != "t3.micro" || props["KeyName"] != "ops" {
		t.Errorf("instance %v", inst)
	}
	if props["SubnetId"].(map[string]any)["Ref"] != "SubnetId" || len(props["SecurityGroupIds"].([]any)) != 1 {
		t.Errorf("instance placement %v", props)
	}
	for _, role := range []string{"Controller", "Etcd", "Worker"} {
		r := body(t, st.Resources["SSHFromBastionTo"+role])
		if r["Properties"].(map[string]any)["GroupId"].(map[string]any)["Ref"] != role+"SecurityGroupId" {
			t.Errorf("SSH rule into %s: %v", role, r)
		}
	}
	for _, o := range []string{OutputInstanceID, OutputPublicIP, "SecurityGroupId"} {
		if _, ok := st.Outputs[o]; !ok {
			t.Errorf("no output %s", o)
		}
	}
	if st.Tags["kube-aws:stack"] != "bastion" || st.Tags["kube-aws:cluster"] != "demo" {
		t.Errorf("tags %v", st.Tags)
	}
}

func TestChosenSubnetAndNoNodeAccess(t *testing.T) {
	res := initialiseReq(t, "", `{"allowedCIDRs": ["10.1.0.0/16"], "subnet": "public-us-east-1b", "sshToNodes": false, "instanceType": "t3.small"}`)
	st := bastionStack(t, res)
	if st.ParameterSources["SubnetId"].String() != "network.SubnetPublicUsEast1bId" {
		t.Errorf("subnet from %s", st.ParameterSources["SubnetId"])
	}
	if _, ok := st.Resources["SSHFromBastionToWorker"]; ok {
		t.Error("sshToNodes false, yet SSH rules into the nodes")
	}
	// No key pair anywhere: a warning, not a failure.
	var warned bool
	for _, d := range res.Diagnostics {
		warned = warned || (d.Severity == diag.Warning && d.Path == "plugins.bastion.values.keyName")
	}
	if !warned {
		t.Errorf("no key pair warning: %v", res.Diagnostics)
	}
}

func TestPrivateOrUnknownSubnetIsFatal(t *testing.T) {
	res := initialiseReq(t, "", `{"allowedCIDRs": ["10.1.0.0/16"], "subnet": "private-us-east-1a"}`)
	if !res.Diagnostics.HasFatal() || res.Diagnostics[len(res.Diagnostics)-1].Path != "plugins.bastion.values.subnet" ||
		!strings.Contains(res.Diagnostics[len(res.Diagnostics)-1].Hint, "public-us-east-1a, public-us-east-1b") {
		t.Errorf("diagnostics %v", res.Diagnostics)
	}
}

func TestOpenToTheWorldWarns(t *testing.T) {
	res := initialiseReq(t, "", `{"allowedCIDRs": ["0.0.0.0/0"], "keyName": "k"}`)
	if len(res.Diagnostics) != 1 || res.Diagnostics[0].Severity != diag.Warning || res.Diagnostics[0].Path != "plugins.bastion.values.allowedCIDRs[0]" {
		t.Errorf("diagnostics %v", res.Diagnostics)
	}
}

func TestSubnetOutputMatchesTheNetworkStack(t *testing.T) {
	for in, want := range map[string]string{"public-us-east-1a": "SubnetPublicUsEast1aId", "dmz_a": "SubnetDmzAId", "eu-west-1c": "SubnetEuWest1cId"} {
		if got := names.SubnetOutput(in); got != want {
			t.Errorf("SubnetOutput(%q) = %q, want %q", in, got, want)
		}
	}
}

func deployResult(status, id string) *stage.DeployResult {
	return &stage.DeployResult{Stacks: []stage.StackStatus{
		{Name: "demo-network", Status: "CREATE_COMPLETE"},
		{Name: "demo-bastion", ID: "arn:bastion", Status: status, Outputs: map[string]string{OutputInstanceID: id}},
	}}
}

func runValidate(t *testing.T, dep *stage.DeployResult, states map[string]string, fail error) diag.List {
	t.Helper()
	p := plugin{describe: func(_ context.Context, id string) (string, error) {
		if fail != nil {
			return "", fail
		}
		s, ok := states[id]
		if !ok {
			return "", errNotFound
		}
		return s, nil
	}}
	req := contribtest.Request(t, stage.Validate, nil, Name, schema, `{"allowedCIDRs": ["10.0.0.0/8"]}`, t.TempDir())
	req.Deploy = dep
	res, err := sdk.Call(context.Background(), sdk.Typed[Values](p), req)
	if err != nil {
		t.Fatal(err)
	}
	return res.Diagnostics
}

func TestValidateChecksTheInstance(t *testing.T) {
	running := map[string]string{"i-1": "running"}
	if d := runValidate(t, deployResult("CREATE_COMPLETE", "i-1"), running, nil); len(d) != 0 {
		t.Errorf("running instance: %v", d)
	}
	cases := []struct {
		name   string
		dep    *stage.DeployResult
		states map[string]string
		fail   error
		want   string
	}{
		{"stopped", deployResult("CREATE_COMPLETE", "i-1"), map[string]string{"i-1": "stopped"}, nil, "is stopped, not running"},
		{"terminated", deployResult("UPDATE_COMPLETE", "i-2"), running, nil, "is gone"},
		{"stack failed", deployResult("ROLLBACK_COMPLETE", "i-1"), running, nil, "ROLLBACK_COMPLETE"},
		{"no output", deployResult("CREATE_COMPLETE", ""), running, nil, "no InstanceId output"},
		{"no stack", &stage.DeployResult{Stacks: []stage.StackStatus{{Name: "demo-network", Status: "CREATE_COMPLETE"}}}, running, nil, `stack "demo-bastion" is not in the deploy result`},
		// The stack's name without its cluster is not the deploy result's.
		{"the short name", &stage.DeployResult{Stacks: []stage.StackStatus{{Name: "bastion", Status: "CREATE_COMPLETE", Outputs: map[string]string{OutputInstanceID: "i-1"}}}}, running, nil, "not in the deploy result"},
		{"no deploy", nil, running, nil, "no deploy result"},
		{"AWS error", deployResult("CREATE_COMPLETE", "i-1"), running, errors.New("AccessDenied"), "AccessDenied"},
	}
	for _, c := range cases {
		d := runValidate(t, c.dep, c.states, c.fail)
		if !d.HasFatal() || !strings.Contains(d[0].Message, c.want) || d[0].Plugin != Name || d[0].Stage != "validate" {
			t.Errorf("%s: want a fatal containing %q, got %v", c.name, c.want, d)
		}
	}
}

func TestBadValuesRejectedWithTheirPath(t *testing.T) {
	contribtest.ExpectRejected(t, Name, schema, `{}`, "plugins.bastion.values", "allowedCIDRs")
	contribtest.ExpectRejected(t, Name, schema, `{"allowedCIDRs": []}`, "plugins.bastion.values.allowedCIDRs", "")
	contribtest.ExpectRejected(t, Name, schema, `{"allowedCIDRs": ["10.0.0.0"]}`, "plugins.bastion.values.allowedCIDRs[0]", "match pattern")
	contribtest.ExpectRejected(t, Name, schema, `{"allowedCIDRs": ["10.0.0.0/8"], "instanceType": "big"}`, "plugins.bastion.values.instanceType", "")
	contribtest.ExpectRejected(t, Name, schema, `{"allowedCIDRs": ["10.0.0.0/8"], "sshToNodes": "yes"}`, "plugins.bastion.values.sshToNodes", "")
	if d := contribtest.Validate(t, Name, schema, `{"allowedCIDRs": ["10.0.0.0/8"], "instanceType": "t4g.nano", "keyName": "k", "subnet": "public-a"}`); len(d) > 0 {
		t.Errorf("good values rejected: %v", d)
	}
}
