package schema

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"

	"github.com/kube-aws/kube-aws/core/config"
)

func compile(t *testing.T) *jsonschema.Schema {
	t.Helper()
	b, err := JSON()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(ID, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(ID)
	if err != nil {
		t.Fatalf("the generated schema does not compile: %v", err)
	}
	return s
}

func validateYAML(t *testing.T, s *jsonschema.Schema, y []byte) error {
	t.Helper()
	js, err := yaml.YAMLToJSON(y)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(inst)
}

// The example, the loader's own fixture and `kube-aws init` output all
// validate against the schema, and against config.Validate.
func TestExamplesValidate(t *testing.T) {
	s := compile(t)
	example, err := os.ReadFile("../../../cluster.yaml.example")
	if err != nil {
		t.Fatal(err)
	}
	fixture, err := os.ReadFile("../testdata/valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	initOut, err := config.InitTemplate(config.InitOptions{ClusterName: "x", Region: "us-east-1", AvailabilityZones: []string{"us-east-1a"}, S3URI: "s3://bucket"})
	if err != nil {
		t.Fatal(err)
	}
	for name, y := range map[string][]byte{"cluster.yaml.example": example, "testdata/valid.yaml": fixture, "init": initOut} {
		if err := validateYAML(t, s, y); err != nil {
			t.Errorf("%s does not validate against the schema: %v", name, err)
		}
		c, diags := config.Parse(name, y)
		config.ApplyDefaults(c)
		diags = append(diags, config.Validate(c, name)...)
		if len(diags) != 0 {
			t.Errorf("%s: config.Validate:\n%s", name, diags.Error())
		}
	}
	// The example's explicit subnets are exactly the computed layout, as its
	// comment says.
	c, _ := config.Parse("example", example)
	listed := c.Network.Subnets
	c.Network.Subnets = nil
	computed, err := config.ComputeSubnets(c)
	if err != nil || !reflect.DeepEqual(listed, computed) {
		t.Errorf("example subnets %v differ from the computed layout %v (%v)", listed, computed, err)
	}
}

func TestSchemaRejectsMistakes(t *testing.T) {
	s := compile(t)
	for name, y := range map[string]string{
		"unknown key":   "clusterName: a\nregion: us-east-1\navailabilityZones: [us-east-1a]\ns3URI: s3://bkt\nnodePools: [{name: a}]\nclustrName: b\n",
		"bad effect":    "clusterName: a\nregion: us-east-1\navailabilityZones: [us-east-1a]\ns3URI: s3://bkt\nnodePools: [{name: a, taints: [{key: k, effect: Nope}]}]\n",
		"missing name":  "region: us-east-1\navailabilityZones: [us-east-1a]\ns3URI: s3://bkt\nnodePools: [{name: a}]\n",
		"wrong type":    "clusterName: a\nregion: us-east-1\navailabilityZones: [us-east-1a]\ns3URI: s3://bkt\nnodePools: [{name: a, minSize: '1'}]\n",
		"bad pool name": "clusterName: a\nregion: us-east-1\navailabilityZones: [us-east-1a]\ns3URI: s3://bkt\nnodePools: [{name: A_b}]\n",
	} {
		if err := validateYAML(t, s, []byte(y)); err == nil {
			t.Errorf("%s: the schema accepts it", name)
		}
	}
}

// Every key has a description, and the output is stable.
func TestEveryKeyDescribed(t *testing.T) {
	var missing []string
	var walk func(path string, s map[string]any)
	walk = func(path string, s map[string]any) {
		if path != "" {
			if d, _ := s["description"].(string); d == "" {
				missing = append(missing, path)
			}
		}
		if props, ok := s["properties"].(map[string]any); ok {
			for k, v := range props {
				walk(join(path, k), v.(map[string]any))
			}
		}
		if ap, ok := s["additionalProperties"].(map[string]any); ok {
			walk(join(path, "*"), ap)
		}
		if it, ok := s["items"].(map[string]any); ok {
			walk(path+"[]", it)
		}
	}
	walk("", Generate())
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Fatalf("no description (add it to core/config/docs.go): %s", strings.Join(missing, ", "))
	}
	a, _ := JSON()
	b, _ := JSON()
	if !bytes.Equal(a, b) || !json.Valid(a) {
		t.Fatal("schema output is not stable JSON")
	}
}
