package stages

import (
	"encoding/json"
	"fmt"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/internal/fileutil"
)

// WriteDeployResult writes the deploy result as JSON for CI (`kube-aws up
// --outputs-file`): every stack with its status, outputs and whether it
// changed, and the cluster outputs such as the API endpoint. The file is
// replaced atomically.
func WriteDeployResult(path string, d *stage.DeployResult) error {
	if d == nil {
		d = &stage.DeployResult{}
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	if err := fileutil.WriteAtomic(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the deploy result to %s: %w", path, err)
	}
	return nil
}

// NeedsYes reports whether a run stopped for want of --yes: a plugin (the
// deploy plugin meeting a stack in ROLLBACK_COMPLETE, which it deletes and
// creates again only when confirmed) returned a fatal with
// diag.CodeNeedsConfirmation. `kube-aws up` asks on a terminal and runs
// again with --yes.
func NeedsYes(out *Outcome) bool {
	if out == nil {
		return false
	}
	for _, d := range out.Diagnostics.Fatals() {
		if d.Code == diag.CodeNeedsConfirmation {
			return true
		}
	}
	return false
}
