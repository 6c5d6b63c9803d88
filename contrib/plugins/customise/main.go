// Command customise is a contrib kube-aws plugin for seed 004's fourth use
// case: changing the parts of kube-aws's CloudFormation a user needs changed
// without forking its templates. From its values it contributes extra IAM
// statements (IAM constructs, merged into the iam stack's policies), tags on
// every stack, the CIDRs that may reach the API and SSH on the control plane
// (a patch to the network stack's API ingress rule plus new rules), and any
// JSON merge patches the user writes. kube-aws's merge refuses a patch to a
// protected path (a launch template's bootstrap UserData, say) with a fatal.
// It is built only on the public SDK.
package main

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

func main() { sdk.Serve(sdk.Typed[Values](plugin{})) }

// Name and Version identify the plugin.
const (
	Name    = "customise"
	Version = "0.1.0"
)

//go:embed schema.json
var schema []byte

// Values are the plugin's values (schema.json).
type Values struct {
	IAM            []Statement       `json:"iam,omitempty"`
	Tags           map[string]string `json:"tags,omitempty"`
	APIAccessCIDRs []string          `json:"apiAccessCIDRs,omitempty"`
	SSHAccessCIDRs []string          `json:"sshAccessCIDRs,omitempty"`
	Patches        []construct.Patch `json:"patches,omitempty"`
}

// Statement is an IAM statement as written in cluster.yaml.
type Statement struct {
	Role      string          `json:"role,omitempty"`
	NodePool  string          `json:"nodePool,omitempty"`
	Sid       string          `json:"sid,omitempty"`
	Effect    string          `json:"effect,omitempty"`
	Actions   []string        `json:"actions"`
	Resources []string        `json:"resources"`
	Condition json.RawMessage `json:"condition,omitempty"`
}

type plugin struct{}

func (plugin) Info() stage.PluginInfo {
	return stage.PluginInfo{
		Name:         Name,
		Version:      Version,
		Description:  "contrib: customise kube-aws's CloudFormation from values (IAM, stack tags, API/SSH CIDRs, patches)",
		ValuesSchema: schema,
	}
}

func (plugin) Initialise(_ context.Context, in *sdk.Input[Values]) (*stage.Result, error) {
	c, v := in.Cluster, in.Values
	set, diags := build(c, v)
	if diags.HasFatal() {
		return &stage.Result{Diagnostics: diags}, nil
	}
	return &stage.Result{Constructs: set, Diagnostics: diags}, nil
}

func path(c *config.Cluster, ptr string, args ...any) string {
	return c.ValuesPath(Name, "", fmt.Sprintf(ptr, args...))
}

// build turns the values into constructs.
func build(c *config.Cluster, v Values) (*construct.Set, diag.List) {
	var diags diag.List
	set := &construct.Set{}
	pools := map[string]bool{}
	for _, p := range c.NodePools {
		pools[p.Name] = true
	}

	for i, s := range v.IAM {
		role := construct.Role(s.Role)
		if role == "" {
			role = construct.Worker
		}
		if s.NodePool != "" && role != construct.Worker {
			diags = append(diags, diag.Fatalf("plugin customise: iam[%d] names node pool %q for role %s; only worker statements are per pool", i, s.NodePool, role).
				At(path(c, "/iam/%d/nodePool", i)))
			continue
		}
		if s.NodePool != "" && !pools[s.NodePool] {
			diags = append(diags, diag.Fatalf("plugin customise: iam[%d] names node pool %q, which cluster.yaml does not define", i, s.NodePool).
				At(path(c, "/iam/%d/nodePool", i)))
			continue
		}
		effect := s.Effect
		if effect == "" {
			effect = "Allow"
		}
		sid := s.Sid
		if sid == "" {
			// IAM diagnostics and the rendered policy name each statement;
			// a Sid that says where it came from helps whoever reads them.
			sid = fmt.Sprintf("Customise%d", i)
		}
		set.IAM = append(set.IAM, construct.IAMStatement{
			Target: construct.Target{Role: role, NodePool: s.NodePool}, Sid: sid, Effect: effect,
			Actions: s.Actions, Resources: s.Resources, Condition: s.Condition,
		})
	}

	if len(v.Tags) > 0 {
		for _, k := range sortedKeys(v.Tags) {
			if strings.HasPrefix(k, "aws:") || strings.HasPrefix(k, names.ReservedTagPrefix) {
				diags = append(diags, diag.Fatalf("plugin customise: tag %q uses a reserved prefix (aws: belongs to AWS, kube-aws: to kube-aws)", k).
					At(path(c, "/tags/%s", k)))
			}
		}
		for _, name := range stackNames(c) {
			set.Stacks = append(set.Stacks, construct.Stack{Name: name, Tags: v.Tags})
		}
	}

	extra := map[string]json.RawMessage{}
	if len(v.APIAccessCIDRs) > 0 {
		// The cloudformation built-in opens the API to 0.0.0.0/0 in one
		// rule. Patch that rule to the first CIDR and add one rule per
		// other CIDR: a rule holds one CIDR.
		set.Patches = append(set.Patches, construct.Patch{
			Stack: names.StackNetwork, LogicalID: names.ControllerIngressAPI,
			Merge: mustJSON(map[string]any{"Properties": map[string]any{
				"CidrIp": v.APIAccessCIDRs[0], "Description": "Kubernetes API (restricted by plugin customise)",
			}}),
		})
		for i, cidr := range v.APIAccessCIDRs[1:] {
			extra[fmt.Sprintf("CustomiseControllerIngressAPI%d", i+1)] = ingress(443, cidr, "Kubernetes API (plugin customise)")
		}
	}
	// The network stack has no SSH rule to patch: SSH is closed unless
	// asked for, so these are new rules beside the built-in's.
	for i, cidr := range v.SSHAccessCIDRs {
		extra[fmt.Sprintf("CustomiseControllerIngressSSH%d", i)] = ingress(22, cidr, "SSH to the controllers (plugin customise)")
	}
	if len(extra) > 0 {
		set.Stacks = append(set.Stacks, construct.Stack{Name: names.StackNetwork, Resources: extra})
	}

	// User patches go through as they are: kube-aws's merge checks that the
	// resource exists, that Type is not changed and that no protected path
	// is touched, and reports each refusal as a fatal naming this plugin.
	set.Patches = append(set.Patches, v.Patches...)
	return set, diags
}

// stackNames lists the stacks kube-aws makes for this cluster: the
// cloudformation built-in's, the iam built-in's and the bastion contrib
// plugin's when it is enabled. A tags-only contribution to a stack nobody
// else makes would create an empty stack, so only these are tagged.
func stackNames(c *config.Cluster) []string {
	out := []string{names.StackIAM, names.StackNetwork, names.StackEtcd, names.StackControlPlane}
	for _, p := range c.NodePools {
		out = append(out, names.NodePoolStack(p.Name))
	}
	if c.PluginEnabled("bastion", false) {
		out = append(out, "bastion")
	}
	return out
}

func ingress(port int, cidr, desc string) json.RawMessage {
	return mustJSON(map[string]any{
		"Type": "AWS::EC2::SecurityGroupIngress",
		"Properties": map[string]any{
			"GroupId":     map[string]any{"Fn::GetAtt": []string{names.ControllerSecurityGroup, "GroupId"}},
			"IpProtocol":  "tcp",
			"FromPort":    port,
			"ToPort":      port,
			"CidrIp":      cidr,
			"Description": desc,
		},
	})
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
