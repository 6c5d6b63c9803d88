package action

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/plugins/oci/helper"
	"github.com/kube-aws/kube-aws/plugins/source"
	"github.com/kube-aws/kube-aws/stages"
)

// RegistryPlugins is `kube-aws plugins install` and `kube-aws plugins
// upgrade`: the plugins cluster.yaml takes from registries, installed and
// pinned.
type RegistryPlugins struct {
	Config
	// Upgrade resolves the sources afresh and moves the pins; otherwise
	// the pins are kept and a tag that moved is refused.
	Upgrade bool
	// Names limits it to these plugins (all when empty).
	Names []string
}

// RegistryResult is what install or upgrade did.
type RegistryResult struct {
	// LockPath is plugins.lock; LockWritten says it changed.
	LockPath    string
	LockWritten bool
	Changes     []source.Change
	// Installed are the plugins in the cache, by name.
	Installed []source.Candidate
	// Diagnostics are the warnings found on the way (a plugin from a
	// registry whose signature is not checked, say).
	Diagnostics diag.List
}

// Run installs or upgrades.
func (a *RegistryPlugins) Run(ctx context.Context) (*RegistryResult, error) {
	opts := a.Options
	opts.Registry.Mode, opts.Registry.Names = source.Install, a.Names
	if a.Upgrade {
		opts.Registry.Mode = source.Upgrade
	}
	p, err := stages.NewPlanContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	res := &RegistryResult{LockPath: filepath.Join(p.ClusterDir, source.LockfileName), Diagnostics: p.Diagnostics}
	if p.Registry != nil {
		res.LockWritten = p.Registry.Lock != nil
		res.Changes = p.Registry.Changes
		res.Installed = p.Registry.Candidates
	}
	return res, nil
}

// PushPlugin is `kube-aws plugins push DIR oci://...`.
type PushPlugin struct {
	Dir    string
	Target string
	// Platforms for a folder without per-platform sub-folders.
	Platforms []string
	// Log receives progress lines.
	Log func(string)
}

// Run packages the folder and pushes it through the kube-aws-oci helper.
func (a *PushPlugin) Run(ctx context.Context) (*helper.PushResult, error) {
	if !strings.HasPrefix(a.Target, "oci://") {
		return nil, stages.ConfigError("push to an oci:// reference (oci://REGISTRY/REPOSITORY:VERSION), not %q", a.Target)
	}
	dir, err := filepath.Abs(a.Dir)
	if err != nil {
		return nil, err
	}
	res, err := helper.Run(ctx, helper.Request{Op: helper.OpPush, Push: &helper.PushRequest{Dir: dir, Target: a.Target, Platforms: a.Platforms}}, a.Log)
	if err != nil {
		if ctx.Err() != nil {
			return nil, stages.ErrInterrupted
		}
		return nil, &stages.Error{Code: stages.ExitFatal, Msg: fmt.Sprintf("pushing %s: %v", a.Dir, err)}
	}
	return res.Pushed, nil
}
