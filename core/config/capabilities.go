package config

import (
	"fmt"
	"strings"

	"github.com/kube-aws/kube-aws/core/diag"
)

// ChooseProviders picks the plugin that provides each capability.
// pref is cluster.yaml's capabilities (capability -> preferred plugin);
// providers maps each capability to the enabled plugins that declare it, in
// plugin order. The rules (seed 003, "preferredImplementation"):
//   - one provider: it is chosen;
//   - several and a preference among them: the preferred one;
//   - several and no preference: fatal, listing them all, because plugin
//     order must never silently decide;
//   - a preference that no enabled plugin provides: fall back to the only
//     available provider with a warning, or fatal when there are several
//     (or none) to fall back to.
//
// The caller records the result in the stage input/result
// (stage.Input.Capabilities) so every plugin sees the same choice.
func ChooseProviders(pref map[string]string, providers map[string][]string) (map[string]string, diag.List) {
	chosen := map[string]string{}
	var diags diag.List
	caps := map[string]bool{}
	for k := range pref {
		caps[k] = true
	}
	for k := range providers {
		caps[k] = true
	}
	for _, capability := range sortedKeys(caps) {
		list := providers[capability]
		want, hasPref := pref[capability]
		path := JoinPath("capabilities", capability)
		setHint := fmt.Sprintf("choose one in cluster.yaml: capabilities: {%s: <plugin>}", capability)
		switch {
		case hasPref && contains(list, want):
			chosen[capability] = want
		case hasPref && len(list) == 1:
			chosen[capability] = list[0]
			diags = append(diags, diag.Warningf("capability %s: preferred plugin %s is not enabled or does not provide it; using %s, the only enabled provider", capability, want, list[0]).
				At(path).WithHint(fmt.Sprintf("enable plugin %s (plugins.%s.enabled: true), or set capabilities.%s: %s to silence this warning", want, want, capability, list[0])))
		case hasPref && len(list) == 0:
			diags = append(diags, diag.Fatalf("capability %s: preferred plugin %s is not enabled or does not provide it, and no enabled plugin provides %s", capability, want, capability).
				At(path).WithHint(fmt.Sprintf("enable plugin %s (plugins.%s.enabled: true), or remove capabilities.%s", want, want, capability)))
		case hasPref:
			diags = append(diags, diag.Fatalf("capability %s: preferred plugin %s is not enabled or does not provide it, and several enabled plugins do: %s", capability, want, strings.Join(list, ", ")).
				At(path).WithHint(setHint+" naming one of "+strings.Join(list, ", ")))
		case len(list) == 1:
			chosen[capability] = list[0]
		case len(list) > 1:
			diags = append(diags, diag.Fatalf("capability %s is provided by %d enabled plugins: %s", capability, len(list), strings.Join(list, ", ")).
				At(path).WithHint(setHint+", or disable all but one of "+strings.Join(list, ", ")))
		}
	}
	return chosen, diags
}
