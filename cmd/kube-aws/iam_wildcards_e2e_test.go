package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/test/awstest"
)

var update = flag.Bool("update", false, "add and remove the rows of docs/security.md's table of IAM wildcards as the renders call for (the reasons stay to be written)")

// securityGuide holds the table of every IAM action a rendered cluster
// allows on every resource ("*"), one row per statement with the reason no
// ARN or condition would do, between the markers below.
var (
	securityGuide   = filepath.Join("..", "..", "docs", "security.md")
	wildcardsBegin  = "<!-- the IAM wildcards: checked by `go test ./cmd/kube-aws -run TestEveryIAMWildcardHasItsReason` (-update adds and removes rows; the reasons are written by hand) -->\n"
	wildcardsEnd    = "<!-- end of the IAM wildcards -->\n"
	wildcardsHeader = "| action | statement (role) | why the resource is `*` |\n|---|---|---|\n"
)

// grant is one action a statement allows on "*", and where it is.
type grant struct {
	action, sid, holder string
}

// where is how the table's statement column names a grant's statement.
func (g grant) where() string { return "`" + g.sid + "` (" + g.holder + ")" }

// TestEveryIAMWildcardHasItsReason renders cluster.yaml.example as it is
// and with every contrib plugin enabled, and finds every IAM statement of
// every stack (the iam stack's roles and any policy another stack attaches)
// that allows an action on "*". Each action and statement must have its
// row in the table of docs/security.md with the reason no ARN or condition
// would do; a row no render needs any more fails too. Both renders must
// pass cfn-lint whole, every plugin's part together.
func TestEveryIAMWildcardHasItsReason(t *testing.T) {
	t.Parallel()
	l := newExampleLayout(t)
	example, err := os.ReadFile(filepath.Join("..", "..", "cluster.yaml.example"))
	if err != nil {
		t.Fatal(err)
	}
	l.write(string(example))
	if stdout, stderr, code := l.run("render"); code != 0 {
		t.Fatalf("render of the example: exit %d\n%s\n%s", code, stdout, stderr)
	}
	plain := filepath.Join(l.cluster, "rendered", "stacks")
	contrib := filepath.Join(filepath.Dir(l.cluster), "contrib")
	if err := os.MkdirAll(contrib, 0o755); err != nil {
		t.Fatal(err)
	}
	l.cluster = contrib
	l.write(string(example))
	enableEveryContribPlugin(l)
	if stdout, stderr, code := l.run("render"); code != 0 {
		t.Fatalf("render with every contrib plugin: exit %d\n%s\n%s", code, stdout, stderr)
	}
	withContrib := filepath.Join(contrib, "rendered", "stacks")

	exampleGrants, exampleSids := iamWildcards(t, plain)
	contribGrants, _ := iamWildcards(t, withContrib)
	if len(contribGrants) <= len(exampleGrants) {
		t.Errorf("the contrib render has %d wildcard grants, the example %d: the contrib plugins' own (cluster-autoscaler's describe calls) are missing", len(contribGrants), len(exampleGrants))
	}
	rendered := map[wildcardKey]bool{}
	for _, g := range append(exampleGrants, contribGrants...) {
		rendered[wildcardKey{g.action, g.where()}] = true
	}

	doc, err := os.ReadFile(securityGuide)
	if err != nil {
		t.Fatal(err)
	}
	i, j := bytes.Index(doc, []byte(wildcardsBegin)), bytes.Index(doc, []byte(wildcardsEnd))
	if i < 0 || j < i {
		t.Fatalf("%s has no table of IAM wildcards between the markers %q and %q", securityGuide, strings.TrimSpace(wildcardsBegin), strings.TrimSpace(wildcardsEnd))
	}
	reasons := parseWildcardRows(t, string(doc[i+len(wildcardsBegin):j]))
	if want := wildcardTable(rendered, reasons); *update && want != string(doc[i+len(wildcardsBegin):j]) {
		doc = append(append(append([]byte{}, doc[:i+len(wildcardsBegin)]...), want...), doc[j:]...)
		if err := os.WriteFile(securityGuide, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		reasons = parseWildcardRows(t, want)
	}
	for _, k := range sortedWildcards(rendered) {
		why, ok := reasons[k]
		switch {
		case !ok:
			t.Errorf("%s allows %s on every resource (\"*\"), which %s does not list: name the resources (an ARN, or a condition on their tags), or add a row with the reason no ARN or condition would do (-update writes the row; the reason is yours to write)", k.where, k.action, securityGuide)
		case why == "":
			t.Errorf("%s: %s in %s has no reason: say why no ARN or condition would do", securityGuide, k.action, k.where)
		}
	}
	for _, k := range sortedWildcards(reasons) {
		if !rendered[k] {
			t.Errorf("%s lists %s on \"*\" in %s, which neither render allows on \"*\" any more: remove the row (-update does)", securityGuide, k.action, k.where)
		}
	}

	// The guide names every statement of the example's roles, the narrow
	// ones included, so what each role may do is all there.
	for _, sid := range sortedKeys(exampleSids) {
		if !bytes.Contains(doc, []byte("`"+sid+"`")) {
			t.Errorf("%s does not name the statement %s of the rendered example: say what it allows and why", securityGuide, sid)
		}
	}

	lint, err := awstest.VenvBin("cfn-lint")
	if err != nil {
		t.Fatalf("cfn-lint: %v: run make venv", err)
	}
	for _, dir := range []string{plain, withContrib} {
		files, err := filepath.Glob(filepath.Join(dir, "*.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no stacks in %s (%v)", dir, err)
		}
		// W3010 (hardcoded availability zones) is off as in the
		// cloudformation built-in's lint test: cluster.yaml names them.
		args := append([]string{"--regions", "us-east-1", "--ignore-checks", "W3010", "--"}, files...)
		if out, err := exec.Command(lint, args...).CombinedOutput(); err != nil {
			t.Errorf("cfn-lint of %s: %v\n%s", dir, err, out)
		}
	}
}

// wildcardKey is a row of the guide's table: an action on "*" and the
// statement that allows it, each with its own reason.
type wildcardKey struct{ action, where string }

var rowPattern = regexp.MustCompile("^\\| `([^`]+)` \\| (`[^`]+` \\([^)]+\\)) \\| (.*?) \\|$")

// parseWildcardRows reads the guide's table: each row's reason by action
// and statement.
func parseWildcardRows(t *testing.T, table string) map[wildcardKey]string {
	t.Helper()
	body, ok := strings.CutPrefix(table, wildcardsHeader)
	if !ok {
		t.Fatalf("%s: the table of IAM wildcards does not start with the header %q", securityGuide, wildcardsHeader)
	}
	rows := map[wildcardKey]string{}
	for _, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		if line == "" {
			continue
		}
		m := rowPattern.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("%s: table row %q is not | `action` | `Sid` (role) | reason |", securityGuide, line)
		}
		k := wildcardKey{m[1], m[2]}
		if _, dup := rows[k]; dup {
			t.Fatalf("%s: %s in %s has two rows", securityGuide, k.action, k.where)
		}
		rows[k] = m[3]
	}
	return rows
}

// wildcardTable is the table the renders call for, with the reasons the
// guide gives.
func wildcardTable(rendered map[wildcardKey]bool, reasons map[wildcardKey]string) string {
	var b strings.Builder
	b.WriteString(wildcardsHeader)
	for _, k := range sortedWildcards(rendered) {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", k.action, k.where, reasons[k])
	}
	return b.String()
}

// sortedWildcards orders rows by action, then statement.
func sortedWildcards[V any](m map[wildcardKey]V) []wildcardKey {
	out := make([]wildcardKey, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].action != out[j].action {
			return out[i].action < out[j].action
		}
		return out[i].where < out[j].where
	})
	return out
}

// iamWildcards reads every stack template in dir and returns each action an
// Allow statement grants on "*", and the Sid of every statement. A
// statement the check cannot read as action-on-resource (NotAction,
// NotResource) or without a Sid to name it by fails the test.
func iamWildcards(t *testing.T, dir string) ([]grant, map[string]bool) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no stacks in %s (%v)", dir, err)
	}
	var out []grant
	sids := map[string]bool{}
	for _, f := range files {
		stack := strings.TrimSuffix(filepath.Base(f), ".json")
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var tmpl struct {
			Resources map[string]struct {
				Type       string
				Properties json.RawMessage
			}
		}
		if err := json.Unmarshal(b, &tmpl); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for id, r := range tmpl.Resources {
			var docs []json.RawMessage
			var props struct {
				Policies       []struct{ PolicyDocument json.RawMessage }
				PolicyDocument json.RawMessage
				Roles          []map[string]string
			}
			switch r.Type {
			case "AWS::IAM::Role":
				if err := json.Unmarshal(r.Properties, &props); err != nil {
					t.Fatalf("%s %s: %v", stack, id, err)
				}
				for _, p := range props.Policies {
					docs = append(docs, p.PolicyDocument)
				}
			case "AWS::IAM::Policy", "AWS::IAM::ManagedPolicy", "AWS::IAM::RolePolicy":
				if err := json.Unmarshal(r.Properties, &props); err != nil {
					t.Fatalf("%s %s: %v", stack, id, err)
				}
				docs = append(docs, props.PolicyDocument)
			default:
				continue
			}
			holder := policyHolder(stack, id, props.Roles)
			for _, d := range docs {
				var doc struct{ Statement []map[string]json.RawMessage }
				if err := json.Unmarshal(d, &doc); err != nil {
					t.Fatalf("%s %s: a policy document whose statements are not a list: %v", stack, id, err)
				}
				for _, st := range doc.Statement {
					var sid, effect string
					_ = json.Unmarshal(st["Sid"], &sid)
					_ = json.Unmarshal(st["Effect"], &effect)
					if sid == "" {
						t.Errorf("%s %s: a statement without a Sid: the guide names statements by Sid", stack, id)
						continue
					}
					sids[sid] = true
					if st["NotAction"] != nil || st["NotResource"] != nil {
						t.Errorf("%s %s: statement %s uses NotAction or NotResource: name the actions and resources", stack, id, sid)
						continue
					}
					if effect != "Allow" || !containsString(stringOrList(st["Resource"]), "*") {
						continue
					}
					for _, a := range stringOrList(st["Action"]) {
						out = append(out, grant{action: a, sid: sid, holder: holder})
					}
				}
			}
		}
	}
	return out, sids
}

// policyHolder names the role a policy is on: the iam stack's roles by
// their machine role or as a pod role, a policy of another stack by the role whose name it
// takes as a parameter (the iam stack's <Role>RoleName output), else by
// where it is.
func policyHolder(stack, id string, roles []map[string]string) string {
	for _, role := range []string{names.RoleController, names.RoleEtcd} {
		if stack == names.StackIAM && id == names.RoleResource(role, "") {
			return role
		}
		if len(roles) == 1 && roles[0]["Ref"] == names.RoleNameOutput(role, "") {
			return role
		}
	}
	if stack == names.StackIAM && strings.HasPrefix(id, "NodePool") && strings.HasSuffix(id, "Role") {
		return names.RoleWorker
	}
	if stack == names.StackIAM && strings.HasPrefix(id, names.PodRoleResource("")) {
		return "pod role " + strings.TrimPrefix(id, names.PodRoleResource(""))
	}
	return stack + " " + id
}

// stringOrList reads an IAM element that is a string or a list of strings;
// an intrinsic function (an ARN made with Fn::Sub) is not "*".
func stringOrList(raw json.RawMessage) []string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	var many []json.RawMessage
	if json.Unmarshal(raw, &many) != nil {
		return nil
	}
	var out []string
	for _, m := range many {
		if json.Unmarshal(m, &one) == nil {
			out = append(out, one)
		}
	}
	return out
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestIAMWildcardsReadsEveryPolicy: the audit finds an action on "*" in a
// role's inline policy and in a policy another stack attaches, as a string
// or in a list, and nothing in a statement on an ARN, made with Fn::Sub or
// not, or in a Deny.
func TestIAMWildcardsReadsEveryPolicy(t *testing.T) {
	t.Parallel()
	stacks := map[string]string{
		"iam": `{"Resources": {
			"EtcdRole": {"Type": "AWS::IAM::Role", "Properties": {"Policies": [{"PolicyDocument": {"Statement": [
				{"Sid": "Find", "Effect": "Allow", "Action": "ec2:DescribeVolumes", "Resource": "*"},
				{"Sid": "Attach", "Effect": "Allow", "Action": ["ec2:AttachVolume"], "Resource": ["arn:aws:ec2:us-east-1:*:volume/*"]},
				{"Sid": "Never", "Effect": "Deny", "Action": ["s3:*"], "Resource": ["*"]}]}}]}},
			"NodePoolGeneralRole": {"Type": "AWS::IAM::Role", "Properties": {"Policies": [{"PolicyDocument": {"Statement": [
				{"Sid": "Pull", "Effect": "Allow", "Action": ["ecr:GetAuthorizationToken", "ecr:BatchGetImage"], "Resource": ["arn:aws:ecr:*:*:repository/x", "*"]}]}}]}},
			"EtcdInstanceProfile": {"Type": "AWS::IAM::InstanceProfile", "Properties": {"Roles": [{"Ref": "EtcdRole"}]}}}}`,
		"etcd": `{"Resources": {
			"Zone": {"Type": "AWS::IAM::Policy", "Properties": {"Roles": [{"Ref": "EtcdRoleName"}], "PolicyDocument": {"Statement": [
				{"Sid": "Record", "Effect": "Allow", "Action": ["route53:ChangeResourceRecordSets"], "Resource": [{"Fn::Sub": "arn:${AWS::Partition}:route53:::hostedzone/${Zone}"}]},
				{"Sid": "Sync", "Effect": "Allow", "Action": ["route53:GetChange"], "Resource": "*"}]}}},
			"Other": {"Type": "AWS::IAM::ManagedPolicy", "Properties": {"PolicyDocument": {"Statement": [
				{"Sid": "Logs", "Effect": "Allow", "Action": ["logs:PutLogEvents"], "Resource": ["*"]}]}}}}}`,
	}
	dir := t.TempDir()
	for name, body := range stacks {
		if err := os.WriteFile(filepath.Join(dir, name+".json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	grants, sids := iamWildcards(t, dir)
	var got []string
	for _, g := range grants {
		got = append(got, g.action+" "+g.where())
	}
	sort.Strings(got)
	want := []string{
		"ec2:DescribeVolumes `Find` (etcd)",
		"ecr:BatchGetImage `Pull` (worker)",
		"ecr:GetAuthorizationToken `Pull` (worker)",
		"logs:PutLogEvents `Logs` (etcd Other)",
		"route53:GetChange `Sync` (etcd)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("wildcards:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Join(sortedKeys(sids), " ") != "Attach Find Logs Never Pull Record Sync" {
		t.Errorf("Sids %v", sortedKeys(sids))
	}
}
