package action

import (
	"testing"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/stages"
)

func TestNeedsYes(t *testing.T) {
	msg := "deploying cluster demo: stack nodepool-spot (demo-nodepool-spot) is in ROLLBACK_COMPLETE after a failed create; it holds no usable resources and must be deleted and created again: rerun with --yes to allow that"
	if !NeedsYes(&stages.Outcome{Diagnostics: diag.List{{Severity: diag.Fatal, Plugin: "deploy", Message: msg, Code: diag.CodeNeedsConfirmation}}}) {
		t.Fatal("the deploy plugin's ROLLBACK_COMPLETE fatal is not recognised")
	}
	// The signal is the code, not the wording: the same text without it,
	// from any plugin, or only a warning, asks nothing.
	for _, o := range []*stages.Outcome{nil, {}, {Diagnostics: diag.List{{Severity: diag.Warning, Plugin: "deploy", Message: msg, Code: diag.CodeNeedsConfirmation}}},
		{Diagnostics: diag.List{{Severity: diag.Fatal, Plugin: "deploy", Message: msg}}},
		{Diagnostics: diag.List{{Severity: diag.Fatal, Plugin: "dex", Message: msg}}}} {
		if NeedsYes(o) {
			t.Fatalf("NeedsYes(%+v) = true", o)
		}
	}
}
