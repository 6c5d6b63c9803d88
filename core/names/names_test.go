package names

import (
	"encoding/json"
	"testing"
)

func TestLogicalName(t *testing.T) {
	for in, want := range map[string]string{"spot-pool": "SpotPool", "general": "General", "a1-b2-c3": "A1B2C3",
		"eu-west-1a": "EuWest1a", "a_b.c": "ABC", "x": "X"} {
		if got := LogicalName(in); got != want {
			t.Errorf("LogicalName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNames(t *testing.T) {
	// Names follow LogicalName in every output.
	if SubnetOutput("public-eu-west-1a") != "SubnetPublicEuWest1aId" {
		t.Errorf("SubnetOutput: %s", SubnetOutput("public-eu-west-1a"))
	}
	if InstanceProfileOutput(RoleWorker, "spot-pool") != "NodePoolSpotPoolInstanceProfile" ||
		InstanceProfileOutput(RoleController, "") != "ControllerInstanceProfile" ||
		InstanceProfileOutput(RoleEtcd, "") != "EtcdInstanceProfile" {
		t.Error("instance profile output names changed: the machine stacks' ParameterSources depend on them")
	}
	for stack, want := range map[string]string{"control-plane": "userdata/controller.yaml", "etcd": "userdata/etcd.yaml",
		"nodepool-a": "userdata/nodepool-a.yaml", "network": ""} {
		if got := UserDataFile(stack); got != want {
			t.Errorf("UserDataFile(%s) = %q, want %q", stack, got, want)
		}
	}
}

// A source travels as "<stack>.<output>" and parses back; a text that is
// not one survives to be reported, and is not Valid.
func TestSource(t *testing.T) {
	tests := []struct {
		text  string
		want  Source
		valid bool
	}{
		{"network.VpcId", From(StackNetwork, OutputVpcID), true},
		{"iam.NodePoolAInstanceProfile", From(StackIAM, "NodePoolAInstanceProfile"), true},
		{"VpcId", Source{Output: "VpcId"}, false},
		{"network.", Source{Stack: "network"}, false},
		{".VpcId", Source{Output: "VpcId"}, false},
	}
	for _, tt := range tests {
		var got Source
		if err := json.Unmarshal([]byte(`"`+tt.text+`"`), &got); err != nil {
			t.Fatal(err)
		}
		if got != tt.want || (got.Valid() == nil) != tt.valid {
			t.Errorf("%q: %+v valid=%v, want %+v valid=%v", tt.text, got, got.Valid(), tt.want, tt.valid)
		}
		if tt.valid {
			b, _ := json.Marshal(map[string]Source{"p": got})
			if string(b) != `{"p":"`+tt.text+`"}` {
				t.Errorf("%q encodes as %s", tt.text, b)
			}
		}
	}
}
