package nodeplan

import (
	"testing"

	"github.com/kube-aws/kube-aws/core/config"
)

// The machine must find exactly the markers kube-aws writes.
func TestMarkerPatternIsConfigs(t *testing.T) {
	if MarkerPattern.String() != config.MarkerPattern.String() {
		t.Fatalf("nodeplan.MarkerPattern %s differs from config.MarkerPattern %s", MarkerPattern, config.MarkerPattern)
	}
	m := config.Marker("dex", "/values/client secret")
	if MarkerPattern.FindString("x"+m+"y") != m {
		t.Errorf("%s not found", m)
	}
}
