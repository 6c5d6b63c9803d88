package stages

import (
	"context"
	"errors"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/plugins/source"
)

// RegistryOptions say what planning does about plugins from registries.
type RegistryOptions struct {
	// Mode is source.Auto for every command that runs plugins, Install,
	// Upgrade or Offline for `plugins install`, `upgrade` and `verify`.
	Mode source.Mode
	// Names limits Install and Upgrade to these plugins.
	Names []string
	// Log receives a line per download, verification and pin (may be nil).
	Log func(string)
}

// resolvePlugins decides, through plugins/source, which plugins the run
// has: the ones found on disk and the ones cluster.yaml takes from
// registries (installed and pinned in plugins.lock when they are not yet).
// It turns what source decided into the exit codes and diagnostics of a
// run: a configuration error exits 2; registry plugins that cannot be used
// are fatal diagnostics at their settings in cluster.yaml.
func (p *Plan) resolvePlugins(ctx context.Context, found []source.Candidate) error {
	c := p.Cluster()
	ro := p.Options.Registry
	res, err := source.Resolve(ctx, source.ResolveOptions{
		ClusterDir: p.ClusterDir, Found: found, Plugins: c.Plugins,
		Mode: ro.Mode, Names: ro.Names, Log: ro.Log, Ensure: p.Deps.Ensure,
	})
	var (
		cfgErr   *source.ConfigError
		problems *source.ProblemsError
	)
	switch {
	case err == nil:
	case errors.As(err, &cfgErr):
		return ConfigError("%s", cfgErr.Msg)
	case errors.As(err, &problems):
		// The warnings found so far (a plugin from a registry whose
		// signature is not checked, say) belong beside the problems.
		diags := append(diag.List(nil), p.Diagnostics...)
		for _, pr := range problems.Problems {
			diags = append(diags, diag.Fatalf("%s", pr.Err).At(pr.Path()))
		}
		diags = c.Locate(diags)
		diags.Sort()
		return &Error{Code: ExitFatal, Msg: problems.Error(), Diagnostics: diags}
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return ErrInterrupted
	default:
		return &Error{Code: ExitFatal, Msg: err.Error()}
	}
	p.All, p.Registry, p.lock = res.All, res.Registry, res.Lock
	return nil
}
