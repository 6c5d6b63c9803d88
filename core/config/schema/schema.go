// Package schema generates the JSON Schema of cluster.yaml from the Go types
// in core/config, for `kube-aws schema` and editors (yaml-language-server:
// `# yaml-language-server: $schema=cluster.schema.json`). Generating it by
// reflection means a new field cannot be forgotten; descriptions come from
// config.FieldDoc. It is a subpackage so that plugin binaries, which import
// core/config, do not carry it.
package schema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/kube-aws/kube-aws/core/config"
)

// ID is the schema's $id.
const ID = "https://kube-aws.github.io/schemas/cluster.schema.json"

// constraints add what the types cannot say: patterns, enums, minimums and
// required keys. They mirror config.Validate, which stays the authority (it
// also checks what a schema cannot: CIDR overlap, subnet references...).
var constraints = map[string]map[string]any{
	"":                            {"required": []string{"clusterName", "region", "availabilityZones", "s3URI", "nodePools"}},
	"clusterName":                 {"pattern": `^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$`},
	"region":                      {"pattern": `^[a-z]{2}(-gov|-iso[a-z]*)?-[a-z]+-[0-9]+$`},
	"availabilityZones":           {"minItems": 1, "uniqueItems": true},
	"kubernetesVersion":           {"pattern": `^[0-9]+\.[0-9]+\.[0-9]+$`},
	"amiId":                       {"pattern": `^ami-([0-9a-f]{8}|[0-9a-f]{17})$`},
	"s3URI":                       {"pattern": `^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$`},
	"kmsKeyArn":                   {"pattern": `^arn:aws[a-z-]*:kms:[a-z0-9-]+:[0-9]{12}:(key|alias)/.+$`},
	"network.vpcId":               {"pattern": `^vpc-([0-9a-f]{8}|[0-9a-f]{17})$`},
	"network.subnets[].id":        {"pattern": `^subnet-([0-9a-f]{8}|[0-9a-f]{17})$`},
	"network.subnets[]":           {"required": []string{"availabilityZone"}},
	"controller.count":            {"minimum": 1},
	"etcd.count":                  {"minimum": 1},
	"controller.rootVolumeSize":   {"minimum": 8, "maximum": 16384},
	"etcd.rootVolumeSize":         {"minimum": 8, "maximum": 16384},
	"nodePools":                   {"minItems": 1},
	"nodePools[]":                 {"required": []string{"name"}},
	"nodePools[].name":            {"pattern": `^[a-z]([a-z0-9-]{0,61}[a-z0-9])?$`},
	"nodePools[].minSize":         {"minimum": 0},
	"nodePools[].maxSize":         {"minimum": 1},
	"nodePools[].desiredCapacity": {"minimum": 0},
	"nodePools[].spot.maxPrice":   {"pattern": `^[0-9]+(\.[0-9]+)?$`},
	"nodePools[].taints[]":        {"required": []string{"key"}},
	"nodePools[].taints[].effect": {"enum": []string{"NoSchedule", "PreferNoSchedule", "NoExecute"}},
	"apiEndpoint.hostedZoneId":    {"pattern": `^Z[A-Z0-9]{1,31}$`},
}

// Generate returns the JSON Schema of cluster.yaml.
func Generate() map[string]any {
	s := typeSchema(reflect.TypeOf(config.Cluster{}), "")
	s["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	s["$id"] = ID
	s["title"] = "kube-aws cluster.yaml"
	s["description"] = "Configuration of one kube-aws cluster. Reference: docs/configuration.md."
	return s
}

// JSON returns the schema, indented and with a trailing newline. The output
// is byte-for-byte stable (encoding/json sorts map keys).
func JSON() ([]byte, error) {
	b, err := json.MarshalIndent(Generate(), "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding the cluster.yaml schema: %w", err)
	}
	return append(b, '\n'), nil
}

var rawMessage = reflect.TypeOf(json.RawMessage{})

func typeSchema(t reflect.Type, path string) map[string]any {
	var s map[string]any
	switch {
	case t == rawMessage:
		s = map[string]any{}
	case t.Kind() == reflect.Pointer:
		return typeSchema(t.Elem(), path)
	case t.Kind() == reflect.Struct:
		props := map[string]any{}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name := strings.Split(f.Tag.Get("json"), ",")[0]
			if name == "" || name == "-" {
				continue
			}
			props[name] = typeSchema(f.Type, join(path, name))
		}
		s = map[string]any{"type": "object", "additionalProperties": false, "properties": props}
	case t.Kind() == reflect.Map:
		s = map[string]any{"type": "object", "additionalProperties": typeSchema(t.Elem(), join(path, "*"))}
	case t.Kind() == reflect.Slice:
		s = map[string]any{"type": "array", "items": typeSchema(t.Elem(), path+"[]")}
	case t.Kind() == reflect.String:
		s = map[string]any{"type": "string"}
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
		s = map[string]any{"type": "integer"}
	case t.Kind() == reflect.Bool:
		s = map[string]any{"type": "boolean"}
	default:
		s = map[string]any{}
	}
	if d := config.FieldDoc(path); d != "" {
		s["description"] = d
	}
	for k, v := range constraints[path] {
		s[k] = v
	}
	return s
}

func join(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}
