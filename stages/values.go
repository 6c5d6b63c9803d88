package stages

import (
	"encoding/json"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/config/values"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
)

// validateValues checks one plugin's plain values against its schema with
// core/config/values (kept out of core/config so plugin binaries do not link
// a JSON Schema library).
func validateValues(l *Loaded, plugin string, schema json.RawMessage, plain stage.PluginValues) diag.List {
	var c *config.Cluster
	var secrets config.Secrets
	if l != nil {
		c, secrets = l.Cluster, config.Secrets(l.Secrets)
	}
	return values.Validate(c, plugin, schema, plain, secrets)
}
