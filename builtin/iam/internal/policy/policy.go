// Package policy is the logic of the iam built-in plugin, apart from the SDK
// server so it is testable as plain functions. Initialise contributes the
// IAM statements kube-aws itself needs as ordinary IAM constructs (so every
// plugin sees them, and they merge in plugin order like anyone's); Render
// builds the iam stack: one role, inline policy and instance profile per
// role (controller, etcd, each node pool) holding every merged statement for
// it, with outputs the machine stacks take as parameters.
package policy

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/awslabs/goformation/v4/cloudformation"
	"github.com/awslabs/goformation/v4/cloudformation/iam"

	"github.com/kube-aws/kube-aws/builtin/internal/cfn"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/merge"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
)

// Plugin is the iam plugin's name; it renders names.StackIAM late.
const Plugin = "iam"

// MaxInlinePolicyBytes is IAM's limit on the inline policies of one role,
// counted without whitespace.
const MaxInlinePolicyBytes = 10_240

// Initialise returns the statements every kube-aws machine needs, and the
// user's pod roles.
func Initialise(c *config.Cluster, v Values) (*construct.Set, diag.List) {
	var diags diag.List
	var out []construct.IAMStatement
	// One policy per machine role (each node pool its own): a machine reads
	// the shared assets and its own role's objects only, writes only its
	// role's status, and decrypts only the ciphertext made for its role.
	type machineRole struct {
		target construct.Target
		name   string
	}
	roles := []machineRole{{construct.Target{Role: construct.Controller}, names.RoleController}, {construct.Target{Role: construct.Etcd}, names.RoleEtcd}}
	for _, p := range c.NodePools {
		roles = append(roles, machineRole{construct.Target{Role: construct.Worker, NodePool: p.Name}, names.NodePoolRole(p.Name)})
	}

	bucket, prefix, err := config.ParseS3URI(c.S3URI)
	if err != nil {
		diags = append(diags, diag.Fatalf("%v", err).At("s3URI").WithHint("write it as s3://bucket/prefix"))
	} else {
		arn := func(key string) string {
			if prefix != "" {
				key = prefix + "/" + key
			}
			return fmt.Sprintf("arn:%s:s3:::%s/%s", config.Partition(c.Region), bucket, key)
		}
		for _, r := range roles {
			// kube-aws-node, charts and artifacts (assets/), the role's
			// userdata and secrets (roles/<role>/).
			out = append(out, construct.IAMStatement{Target: r.target, Sid: "KubeAwsRead", Effect: "Allow",
				Actions: []string{"s3:GetObject"}, Resources: []string{arn("assets/*"), arn("roles/" + r.name + "/*")}})
			// kube-aws-node's status objects, status/<role>/<instance-id>.json.
			out = append(out, construct.IAMStatement{Target: r.target, Sid: "KubeAwsStatus", Effect: "Allow",
				Actions: []string{"s3:PutObject"}, Resources: []string{arn("status/" + r.name + "/*")}})
		}
	}
	if c.KMSKeyARN != "" {
		for _, r := range roles {
			// Secrets are encrypted per role (deploy) with this context:
			// another role's ciphertext does not decrypt with this grant.
			cond, _ := json.Marshal(map[string]any{"StringEquals": names.EncryptionContextCondition(c.ClusterName, r.name)})
			out = append(out, construct.IAMStatement{Target: r.target, Sid: "KubeAwsDecrypt", Effect: "Allow",
				Actions: []string{"kms:Decrypt"}, Resources: []string{c.KMSKeyARN}, Condition: cond})
		}
	}
	// What the AWS cloud provider on the controllers needs to manage load
	// balancers, volumes and routes (cloud-provider-aws's documented policy).
	out = append(out, construct.IAMStatement{
		Target: construct.Target{Role: construct.Controller}, Sid: "KubeAwsCloudProvider", Effect: "Allow",
		Actions: []string{
			"autoscaling:DescribeAutoScalingGroups", "autoscaling:DescribeLaunchConfigurations", "autoscaling:DescribeTags",
			"ec2:AttachVolume", "ec2:AuthorizeSecurityGroupIngress", "ec2:CreateRoute", "ec2:CreateSecurityGroup",
			"ec2:CreateTags", "ec2:CreateVolume", "ec2:DeleteRoute", "ec2:DeleteSecurityGroup", "ec2:DeleteVolume",
			"ec2:Describe*", "ec2:DetachVolume", "ec2:ModifyInstanceAttribute", "ec2:ModifyVolume",
			"ec2:RevokeSecurityGroupIngress", "elasticloadbalancing:*", "iam:CreateServiceLinkedRole", "kms:DescribeKey",
		},
		Resources: []string{"*"},
	})
	// The kubelet looks itself up and pulls images from ECR.
	out = append(out, construct.IAMStatement{
		Target: construct.Target{Role: construct.Worker}, Sid: "KubeAwsNode", Effect: "Allow",
		Actions: []string{
			"ec2:DescribeInstances", "ec2:DescribeRegions",
			"ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:DescribeRepositories",
			"ecr:GetAuthorizationToken", "ecr:GetDownloadUrlForLayer", "ecr:GetRepositoryPolicy", "ecr:ListImages",
		},
		Resources: []string{"*"},
	})
	return &construct.Set{IAM: out, PodRoles: podRoles(v)}, diags
}

// role is one machine role and what its policy holds so far.
type role struct {
	prefix     string
	label      string // for descriptions: controller, etcd, node pool NAME
	role       construct.Role
	pool       string
	statements []json.RawMessage // compact, as cfn.Marshal writes them
	sids       map[string]string // Sid -> its statement JSON
}

var sidPattern = regexp.MustCompile(`^[A-Za-z0-9]*$`)

// Render builds stacks/iam.json from the cluster and the merged constructs.
func Render(c *config.Cluster, set *construct.Set) ([]stage.File, []stage.StackSpec, diag.List) {
	if set == nil {
		set = &construct.Set{}
	}
	var diags diag.List
	roles := []*role{
		{prefix: names.RolePrefix(string(construct.Controller), ""), label: "controller", role: construct.Controller},
		{prefix: names.RolePrefix(string(construct.Etcd), ""), label: "etcd", role: construct.Etcd},
	}
	pools := map[string]*role{}
	seen := map[string]string{}
	for i, p := range c.NodePools {
		prefix := names.RolePrefix(string(construct.Worker), p.Name)
		if other, dup := seen[prefix]; dup || names.LogicalName(p.Name) == "" {
			diags = append(diags, diag.Fatalf("node pool %q cannot be told apart from %q in IAM names (%s)", p.Name, other, prefix).
				At(fmt.Sprintf("nodePools[%d].name", i)))
			continue
		}
		seen[prefix] = p.Name
		r := &role{prefix: prefix, label: "node pool " + p.Name, role: construct.Worker, pool: p.Name}
		roles = append(roles, r)
		pools[p.Name] = r
	}

	for i, st := range set.IAM {
		targets, d := targetsOf(st.Target, roles, pools)
		if d != nil {
			diags = append(diags, d.At(fmt.Sprintf("iam[%d]", i)).About(st.Plugin))
			continue
		}
		body, d2 := statement(st)
		if len(d2) > 0 {
			for _, d := range d2 {
				diags = append(diags, d.At(fmt.Sprintf("iam[%d]", i)).About(st.Plugin))
			}
			if d2.HasFatal() {
				continue
			}
		}
		key, _ := cfn.Marshal(body, false)
		for _, r := range targets {
			if st.Sid != "" {
				if prev, ok := r.sids[st.Sid]; ok {
					if prev != string(key) {
						diags = append(diags, diag.Fatalf("two different IAM statements with Sid %s for the %s role", st.Sid, r.label).
							At(fmt.Sprintf("iam[%d]", i)).WithHint("Sids must be unique within a role's policy; rename one").About(st.Plugin))
					}
					continue
				}
				if r.sids == nil {
					r.sids = map[string]string{}
				}
				r.sids[st.Sid] = string(key)
			}
			r.statements = append(r.statements, key)
		}
	}

	s := construct.Stack{
		Name:        names.StackIAM,
		Description: fmt.Sprintf("kube-aws %s: IAM roles and instance profiles", c.ClusterName),
		Resources:   map[string]json.RawMessage{},
		Outputs:     map[string]json.RawMessage{},
		Tags:        names.StackTags(c.ClusterName, names.StackIAM),
	}
	assume := map[string]any{
		"Version": "2012-10-17",
		"Statement": []any{map[string]any{
			"Effect":    "Allow",
			"Principal": map[string]any{"Service": []any{"ec2.amazonaws.com"}},
			"Action":    []any{"sts:AssumeRole"},
		}},
	}
	for _, r := range roles {
		res := &iam.Role{AssumeRolePolicyDocument: assume, Path: "/"}
		if len(r.statements) > 0 {
			doc := policyDocument(r.statements)
			if n := len(doc); n > MaxInlinePolicyBytes {
				diags = append(diags, diag.Fatalf("the %s role's policy is %d bytes, over IAM's limit of %d for a role's inline policies", r.label, n, MaxInlinePolicyBytes).
					WithHint("merge statements, use wildcards in action names, or attach a managed policy through a patch to ManagedPolicyArns"))
			}
			res.Policies = []iam.Role_Policy{{PolicyName: "kube-aws-" + strings.ToLower(string(r.role)) + poolSuffix(r.pool), PolicyDocument: doc}}
		}
		roleID, profileID := names.RoleResource(string(r.role), r.pool), names.InstanceProfileResource(string(r.role), r.pool)
		s.Resources[roleID] = cfn.MustRaw(res)
		s.Resources[profileID] = cfn.MustRaw(&iam.InstanceProfile{Path: "/", Roles: []string{cfn.Ref(roleID)}})
		s.Outputs[names.InstanceProfileOutput(string(r.role), r.pool)] = cfn.MustRaw(cloudformation.Output{
			Value: cfn.Ref(profileID), Description: "Instance profile of the " + r.label + " machines"})
		// A node pool gets one output: CloudFormation allows 200 per stack,
		// and three per pool stopped a cluster at 64 pools. Its role is
		// reachable from the instance profile (aws iam get-instance-profile).
		if r.pool != "" {
			continue
		}
		s.Outputs[names.RoleArnOutput(string(r.role), r.pool)] = cfn.MustRaw(cloudformation.Output{
			Value: cfn.GetAtt(roleID, "Arn"), Description: "Role ARN of the " + r.label + " machines"})
		s.Outputs[names.RoleNameOutput(string(r.role), r.pool)] = cfn.MustRaw(cloudformation.Output{
			Value: cfn.Ref(roleID), Description: "Role name of the " + r.label + " machines"})
	}

	diags = append(diags, renderPodIdentity(c, set, &s)...)

	// Other plugins may add to the iam stack (a managed policy, say) and
	// patch its roles: core/merge folds them in with the merge's own rules.
	s, d := merge.Late(s, Plugin, set)
	diags = append(diags, d...)

	if d := tooManyOutputs(len(s.Outputs), len(pools)); d != nil {
		// The stack's own check would say the same to a plugin author.
		return nil, nil, append(diags, *d)
	}
	r, d := cfn.RenderStack(s, c.Tags, nil)
	diags = append(diags, d...)
	if r == nil {
		return nil, nil, diags
	}
	return []stage.File{r.File}, []stage.StackSpec{r.Spec}, diags
}

// tooManyOutputs explains, to whoever writes cluster.yaml, an iam stack
// with more outputs than CloudFormation allows: each node pool has one
// (its instance profile, which the pool's stack takes as a parameter), so
// the number of node pools is what the user can change.
func tooManyOutputs(outputs, pools int) *diag.Diagnostic {
	if outputs <= cfn.MaxOutputs || pools == 0 {
		return nil
	}
	others := outputs - pools
	d := diag.Fatalf("%d node pools need %d outputs of the iam stack, one each, beside the %d of the controllers, etcd, the OIDC provider and pod roles: "+
		"over CloudFormation's limit of %d outputs per stack", pools, pools, others, cfn.MaxOutputs).
		At("nodePools").
		WithHint(fmt.Sprintf("this cluster can have at most %d node pools: merge pools that differ only in their sizes, "+
			"or split the workloads across two clusters", max(cfn.MaxOutputs-others, 0)))
	return &d
}

// policyDocument writes the policy of the statements, compact: what
// cfn.Marshal writes for {"Version": "2012-10-17", "Statement": [...]},
// keys sorted, from the statements' JSON each was checked as. A node pool's
// role holds the statements every worker gets: encoding them again for
// each of 100 pools, to measure the policy and then inside the role, made
// a third of the plugin's allocations in its render.
func policyDocument(statements []json.RawMessage) json.RawMessage {
	n := len(`{"Statement":[],"Version":"2012-10-17"}`)
	for _, st := range statements {
		n += len(st) + 1
	}
	doc := make([]byte, 0, n)
	doc = append(doc, `{"Statement":[`...)
	for i, st := range statements {
		if i > 0 {
			doc = append(doc, ',')
		}
		doc = append(doc, st...)
	}
	return append(doc, `],"Version":"2012-10-17"}`...)
}

func poolSuffix(pool string) string {
	if pool == "" {
		return ""
	}
	return "-" + pool
}

// targetsOf resolves a statement's target to roles: a worker target without
// a pool is every pool.
func targetsOf(t construct.Target, roles []*role, pools map[string]*role) ([]*role, *diag.Diagnostic) {
	var out []*role
	switch t.Role {
	case construct.Controller, construct.Etcd:
		for _, r := range roles {
			if r.role == t.Role {
				out = append(out, r)
			}
		}
	case construct.Worker:
		if t.NodePool != "" {
			r, ok := pools[t.NodePool]
			if !ok {
				d := diag.Fatalf("IAM statement for node pool %q, which cluster.yaml does not define", t.NodePool)
				return nil, &d
			}
			return []*role{r}, nil
		}
		for _, r := range roles {
			if r.role == construct.Worker {
				out = append(out, r)
			}
		}
	default:
		d := diag.Fatalf("IAM statement for unknown role %q", t.Role).WithHint("use controller, etcd or worker")
		return nil, &d
	}
	return out, nil
}

// statement turns a construct into a policy statement, checking what IAM
// would reject and warning about a statement that allows everything.
func statement(st construct.IAMStatement) (map[string]any, diag.List) {
	var diags diag.List
	effect := st.Effect
	if effect == "" {
		effect = "Allow"
	}
	if effect != "Allow" && effect != "Deny" {
		diags = append(diags, diag.Fatalf("IAM statement %s has effect %q, want Allow or Deny", st.Sid, st.Effect))
	}
	if !sidPattern.MatchString(st.Sid) {
		diags = append(diags, diag.Fatalf("IAM statement Sid %q may hold only letters and digits", st.Sid))
	}
	if len(st.Actions) == 0 || len(st.Resources) == 0 {
		diags = append(diags, diag.Fatalf("IAM statement %s needs at least one action and one resource", st.Sid))
	}
	if effect == "Allow" && contains(st.Actions, "*") && contains(st.Resources, "*") {
		diags = append(diags, diag.Warningf("IAM statement %s for %s allows every action on every resource", st.Sid, st.Target).
			WithHint("name the actions and resources the plugin needs"))
	}
	body := map[string]any{
		"Effect":   effect,
		"Action":   strs(st.Actions),
		"Resource": strs(st.Resources),
	}
	if st.Sid != "" {
		body["Sid"] = st.Sid
	}
	if len(st.Condition) > 0 && string(st.Condition) != "null" {
		cond, err := cfn.Decode(st.Condition)
		if err != nil {
			diags = append(diags, diag.Fatalf("IAM statement %s: condition is not JSON: %v", st.Sid, err))
		} else {
			body["Condition"] = cond
		}
	}
	return body, diags
}

func strs(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
