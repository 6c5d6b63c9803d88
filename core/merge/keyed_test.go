package merge

import (
	"sort"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
)

// The load balancer as the cloudformation built-in makes it: two tags, a
// listener with two actions, one attribute.
const keyedLB = `{"Type":"AWS::ElasticLoadBalancingV2::LoadBalancer","Properties":{` +
	`"Tags":[{"Key":"Name","Value":"demo-api"},{"Key":"kubernetes.io/cluster/demo","Value":"owned"}],` +
	`"LoadBalancerAttributes":[{"Key":"load_balancing.cross_zone.enabled","Value":"true"}],` +
	`"SecurityGroupIngress":[{"IpProtocol":"tcp","FromPort":443,"ToPort":443,"CidrIp":"0.0.0.0/0"}]}}`

func keyedBase() construct.Set {
	return construct.Set{Stacks: []construct.Stack{stack("control-plane", map[string]string{"LoadBalancer": keyedLB})}}
}

func appendOps(ops ...string) construct.Set {
	return construct.Set{Patches: []construct.Patch{{Stack: "control-plane", LogicalID: "LoadBalancer",
		Operations: raw("[" + strings.Join(ops, ",") + "]")}}}
}

func addTag(key, value string) string {
	return `{"op":"add","path":"/Properties/Tags/-","value":{"Key":"` + key + `","Value":"` + value + `"}}`
}

// listOf returns the items of a list of the merged load balancer.
func listOf(t *testing.T, out *construct.Set, name string) []map[string]any {
	t.Helper()
	var items []map[string]any
	for _, it := range resourceJSON(t, out, "control-plane", "LoadBalancer")["Properties"].(map[string]any)[name].([]any) {
		items = append(items, it.(map[string]any))
	}
	return items
}

// Items of a keyed list are known by their key: two plugins that append a
// tag of one Key merge into one tag when they agree, and are a conflict
// naming both (in either plugin order) when they do not, because
// CloudFormation refuses a resource with two tags of one Key. The same
// holds against the tags the resource's maker set, and within one plugin.
func TestKeyedListAppends(t *testing.T) {
	tests := []struct {
		name string
		a, b construct.Set
		// want is the Key (or key field) of each item of list, in order,
		// when the merge is clean.
		list string
		want []string
		// Otherwise the one fatal: blamed on plugin (by order: "later"
		// for the later of a and b), naming conflictsWith, at path.
		plugin, conflictsWith string
		contains              []string
	}{
		{name: "the same tag from two plugins is kept once",
			a: appendOps(addTag("audit", "on")), b: appendOps(addTag("audit", "on")),
			list: "Tags", want: []string{"Name", "kubernetes.io/cluster/demo", "audit"}},
		{name: "tags of different keys are all kept",
			a: appendOps(addTag("audit", "on")), b: appendOps(addTag("team", "a")),
			list: "Tags", want: []string{"Name", "kubernetes.io/cluster/demo", "audit", "team"}},
		{name: "two values for one tag from two plugins",
			a: appendOps(addTag("audit", "30")), b: appendOps(addTag("audit", "90")),
			plugin: "later", conflictsWith: "earlier",
			contains: []string{`both append an item with Key "audit" to /Properties/Tags`, `{"Key":"audit","Value":"30"}`, `{"Key":"audit","Value":"90"}`, "CloudFormation refuses"}},
		{name: "a tag the resource's maker set, with another value",
			a: appendOps(addTag("Name", "mine")), b: construct.Set{},
			plugin: "a", conflictsWith: "cloudformation",
			contains: []string{`plugin "a" appends an item with Key "Name" to /Properties/Tags`, `from plugin "cloudformation", which makes the resource`, `{"Key":"Name","Value":"demo-api"}`}},
		{name: "a tag the resource's maker set, with the same value",
			a: appendOps(addTag("Name", "demo-api")), b: construct.Set{},
			list: "Tags", want: []string{"Name", "kubernetes.io/cluster/demo"}},
		{name: "one plugin appending two values for one tag",
			a: appendOps(addTag("audit", "30"), addTag("audit", "90")), b: construct.Set{},
			plugin: "a", contains: []string{`plugin "a" appends two items with Key "audit"`}},
		{name: "one plugin appending one tag twice",
			a: appendOps(addTag("audit", "30"), addTag("audit", "30")), b: construct.Set{},
			list: "Tags", want: []string{"Name", "kubernetes.io/cluster/demo", "audit"}},
		{name: "load balancer attributes are keyed too",
			a:      appendOps(`{"op":"add","path":"/Properties/LoadBalancerAttributes/-","value":{"Key":"deletion_protection.enabled","Value":"true"}}`),
			b:      appendOps(`{"op":"add","path":"/Properties/LoadBalancerAttributes/-","value":{"Key":"deletion_protection.enabled","Value":"false"}}`),
			plugin: "later", conflictsWith: "earlier", contains: []string{`Key "deletion_protection.enabled"`}},
		{name: "security group rules are not keyed: the same rule twice stays twice",
			a:    appendOps(`{"op":"add","path":"/Properties/SecurityGroupIngress/-","value":{"IpProtocol":"tcp","FromPort":22,"ToPort":22,"CidrIp":"10.0.0.0/8"}}`),
			b:    appendOps(`{"op":"add","path":"/Properties/SecurityGroupIngress/-","value":{"IpProtocol":"tcp","FromPort":22,"ToPort":22,"CidrIp":"10.0.0.0/8"}}`),
			list: "SecurityGroupIngress", want: []string{"", "", ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, order := range [][2]string{{"a", "b"}, {"b", "a"}} {
				sets := map[string]construct.Set{"a": tc.a, "b": tc.b}
				base := keyedBase()
				contribs := []Contribution{{"cloudformation", &base}}
				for _, p := range order {
					s := sets[p]
					contribs = append(contribs, Contribution{p, &s})
				}
				out, diags := Merge(contribs)
				if tc.want != nil {
					if len(diags) > 0 {
						t.Fatalf("order %v: %s", order, diags.Error())
					}
					var got []string
					for _, it := range listOf(t, out, tc.list) {
						k, _ := it["Key"].(string)
						got = append(got, k)
					}
					// Plugin order decides the order of the list, nothing else.
					sort.Strings(got)
					want := append([]string(nil), tc.want...)
					sort.Strings(want)
					if strings.Join(got, " ") != strings.Join(want, " ") || len(got) != len(tc.want) {
						t.Errorf("order %v: %s keys %q, want %q", order, tc.list, got, tc.want)
					}
					continue
				}
				plugin, other := tc.plugin, tc.conflictsWith
				if plugin == "later" {
					plugin, other = order[1], order[0]
				}
				checkConflict(t, diags, plugin, "constructs.patches[0]", tc.contains...)
				if diags[0].ConflictsWith != other {
					t.Errorf("order %v: conflictsWith %q, want %q", order, diags[0].ConflictsWith, other)
				}
				if other != "" && !strings.Contains(diags[0].String(), "conflicts with "+other+"]") {
					t.Errorf("order %v: the heading does not name both plugins: %s", order, diags[0])
				}
			}
		})
	}
}

// Keyed lists nest: the tags of a launch template's tag specification are
// keyed, and so are the specifications, by resource type.
func TestKeyedListsNest(t *testing.T) {
	b := base() // a launch template with TagSpecifications [{"ResourceType":"instance"}]
	spec := construct.Set{Patches: []construct.Patch{{Stack: "nodepool-a", LogicalID: "LaunchTemplate",
		Operations: raw(`[{"op":"add","path":"/Properties/TagSpecifications/-","value":{"ResourceType":"instance","Tags":[]}}]`)}}}
	_, diags := Merge([]Contribution{{"cloudformation", &b}, {"a", &spec}})
	checkConflict(t, diags, "a", "constructs.patches[0]", `ResourceType "instance"`, "which makes the resource")

	withTags := construct.Set{Stacks: []construct.Stack{stack("nodepool-a", map[string]string{
		"LaunchTemplate": `{"Type":"AWS::EC2::LaunchTemplate","Properties":{"TagSpecifications":[{"ResourceType":"instance","Tags":[{"Key":"Name","Value":"w"}]}]}}`})}}
	tag := func(v string) construct.Set {
		return construct.Set{Patches: []construct.Patch{{Stack: "nodepool-a", LogicalID: "LaunchTemplate",
			Operations: raw(`[{"op":"add","path":"/Properties/TagSpecifications/0/Tags/-","value":{"Key":"audit","Value":"` + v + `"}}]`)}}}
	}
	x, y := tag("1"), tag("2")
	_, diags = Merge([]Contribution{{"cloudformation", &withTags}, {"x", &x}, {"y", &y}})
	checkConflict(t, diags, "y", "constructs.patches[0]", "/Properties/TagSpecifications/0/Tags", `Key "audit"`)
}

// The iam plugin's late stack gets the same rule: Late applies the
// carried patches with the merge's code.
func TestKeyedListsInLateStacks(t *testing.T) {
	built := stack("iam", map[string]string{"WorkerRole": `{"Type":"AWS::IAM::Role","Properties":{"Tags":[{"Key":"Name","Value":"w"}]}}`})
	tag := func(v string) construct.Set {
		return construct.Set{Patches: []construct.Patch{{Stack: "iam", LogicalID: "WorkerRole",
			Operations: raw(`[{"op":"add","path":"/Properties/Tags/-","value":{"Key":"audit","Value":"` + v + `"}}]`)}}}
	}
	same1, same2, other := tag("1"), tag("1"), tag("2")
	set, diags := MergeWith([]Contribution{{"p1", &same1}, {"p2", &same2}}, iamLate)
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	out, diags := Late(built, "iam", set)
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	if got := string(out.Resources["WorkerRole"]); strings.Count(got, `"audit"`) != 1 {
		t.Errorf("the same tag from two plugins: %s", got)
	}
	// Two values for one tag are known without the role: the merge of
	// initialise refuses the later patch already.
	_, diags = MergeWith([]Contribution{{"p1", &same1}, {"p2", &other}}, iamLate)
	if len(diags) != 1 || diags[0].Plugin != "p2" || diags[0].ConflictsWith != "p1" || diags[0].Stage != "initialise" ||
		!strings.Contains(diags[0].Message, `both append an item with Key "audit"`) {
		t.Errorf("two values for one tag in a late stack: %v", diags)
	}
	// A tag the renderer's role has already is known in render.
	name := construct.Set{Patches: []construct.Patch{{Stack: "iam", LogicalID: "WorkerRole",
		Operations: raw(`[{"op":"add","path":"/Properties/Tags/-","value":{"Key":"Name","Value":"mine"}}]`)}}}
	set, diags = MergeWith([]Contribution{{"p1", &name}}, iamLate)
	if len(diags) > 0 {
		t.Fatal(diags)
	}
	_, diags = Late(built, "iam", set)
	if len(diags) != 1 || diags[0].Plugin != "p1" || diags[0].ConflictsWith != "iam" || diags[0].Stage != "render" || diags[0].Severity != diag.Fatal ||
		!strings.Contains(diags[0].Message, `from plugin "iam", which makes the resource`) {
		t.Errorf("a tag the late stack's renderer set: %v", diags)
	}
}

// The heading of every conflict between two plugins names both.
func TestConflictHeadingNamesBothPlugins(t *testing.T) {
	unit := func(content string) construct.Set {
		return construct.Set{Units: []construct.Unit{{Target: construct.Target{Role: construct.Worker}, Name: "x.service", Content: content}}}
	}
	_, diags := Merge(two(unit("[Service]\nA=1\n"), unit("[Service]\nA=2\n")))
	if len(diags) != 1 || !strings.HasPrefix(diags[0].String(), "fatal [beta/initialise, conflicts with alpha] ") {
		t.Errorf("unit conflict: %v", diags)
	}
	b := base()
	p1 := patchSet("nodepool-a", "ASG", `{"Properties":{"MaxSize":"3"}}`)
	p2 := patchSet("nodepool-a", "ASG", `{"Properties":{"MaxSize":"5"}}`)
	_, diags = Merge([]Contribution{{"cloudformation", &b}, {"audit-trail-1", &p1}, {"audit-trail-2", &p2}})
	if len(diags) != 1 || !strings.HasPrefix(diags[0].String(), "fatal [audit-trail-2/initialise, conflicts with audit-trail-1] constructs.patches[0]: ") {
		t.Errorf("patch conflict: %v", diags)
	}
}
