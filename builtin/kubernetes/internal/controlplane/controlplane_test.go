package controlplane

import (
	"strings"
	"testing"
)

func TestFlagsRefuseEmptyValues(t *testing.T) {
	got, err := flags("kube-scheduler", map[string]string{"b": "2", "a": "1"})
	if err != nil || strings.Join(got, " ") != "kube-scheduler --a=1 --b=2" {
		t.Errorf("flags = %v, %v; want the binary, then sorted flags", got, err)
	}
	if _, err := flags("kube-controller-manager", map[string]string{"cluster-cidr": ""}); err == nil ||
		!strings.Contains(err.Error(), "kube-controller-manager flag --cluster-cidr has an empty value") {
		t.Errorf("empty value: %v", err)
	}
}
