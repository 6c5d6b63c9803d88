package action

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/source"
	"github.com/kube-aws/kube-aws/stages"
)

// PluginSummary describes one plugin for `kube-aws plugins list|describe`.
type PluginSummary struct {
	Name            string       `json:"name"`
	Version         string       `json:"version,omitempty"`
	Description     string       `json:"description,omitempty"`
	Source          source.Kind  `json:"source"`
	Path            string       `json:"path"`
	Enabled         bool         `json:"enabled"`
	Stages          []stage.Name `json:"stages"`
	ProtocolVersion int          `json:"protocolVersion,omitempty"`
	Capabilities    []string     `json:"capabilities,omitempty"`
	// ValuesSchema is filled by DescribePlugin.
	ValuesSchema json.RawMessage `json:"valuesSchema,omitempty"`
	// Error says why the plugin could not be started and asked.
	Error string `json:"error,omitempty"`
	// Warning says why a plugin that is not enabled could not be started
	// (a plugin folder without its executable): no failure, since only
	// enabled plugins need to start.
	Warning string `json:"warning,omitempty"`
}

// ListPlugins starts every plugin found (enabled or not) just long enough to
// ask what it is, and returns them in run order, then the disabled ones by
// name. A plugin that fails to start is listed with its error. cluster.yaml
// is optional: without it the built-in defaults decide what is enabled.
func ListPlugins(ctx context.Context, opts stages.Options) ([]PluginSummary, error) {
	opts.ConfigOptional = true
	p, err := stages.NewPlanContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	enabled := map[string]int{}
	for i, c := range p.Enabled {
		enabled[c.Name] = i
	}
	out := make([]PluginSummary, len(p.All))
	asked := summariseTogether(ctx, p, enabled, out)
	var wg sync.WaitGroup
	for i, c := range p.All {
		if asked[i] {
			continue
		}
		wg.Add(1)
		go func(i int, c source.Candidate) {
			defer wg.Done()
			_, on := enabled[c.Name]
			out[i] = summarise(ctx, p, c, on)
		}(i, c)
	}
	wg.Wait()
	for i := range out {
		out[i].ValuesSchema = nil // describe shows it; a listing stays short
	}
	if ctx.Err() != nil {
		return nil, stages.ErrInterrupted
	}
	sort.SliceStable(out, func(i, j int) bool {
		ei, iok := enabled[out[i].Name]
		ej, jok := enabled[out[j].Name]
		if iok != jok {
			return iok
		}
		if iok {
			return ei < ej
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// StartFailures is the error for a listing in which some plugins could not
// be started (exit 1: the listing is printed, but a plugin is broken), or nil.
func StartFailures(ps []PluginSummary) error {
	var names []string
	for _, p := range ps {
		if p.Error != "" {
			names = append(names, p.Name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	return &stages.Error{Code: stages.ExitFatal, Msg: fmt.Sprintf("%d plugin(s) could not be started: %s", len(names), strings.Join(names, ", "))}
}

// DescribePlugin is ListPlugins for one plugin, with its values schema.
func DescribePlugin(ctx context.Context, opts stages.Options, name string) (*PluginSummary, error) {
	opts.ConfigOptional = true
	p, err := stages.NewPlanContext(ctx, opts)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, c := range p.All {
		if c.Name == name {
			on := false
			for _, e := range p.Enabled {
				on = on || e.Name == name
			}
			s := summarise(ctx, p, c, on)
			if s.Error != "" {
				return &s, &stages.Error{Code: stages.ExitFatal, Msg: s.Error}
			}
			return &s, nil
		}
		names = append(names, c.Name)
	}
	return nil, stages.ConfigError("no plugin named %q; available: %s", name, strings.Join(names, ", "))
}

// summariseTogether asks every startable plugin in one launch, so that the
// host starts each process once (the built-ins share one) rather than once
// per plugin; it fills their entries of out and reports which it filled.
// When the launch fails it fills none, and each is then started alone, so
// that the listing says which one is broken and why.
func summariseTogether(ctx context.Context, p *stages.Plan, enabled map[string]int, out []PluginSummary) []bool {
	asked := make([]bool, len(p.All))
	var at []int
	var cands []source.Candidate
	for i, c := range p.All {
		if c.Problem == "" {
			at, cands = append(at, i), append(cands, c)
		}
	}
	opts, err := p.LaunchOptions()
	if len(cands) == 0 || err != nil {
		return asked
	}
	started, err := p.Deps.Launch(ctx, cands, opts)
	defer func() {
		for _, pl := range started {
			pl.Kill()
		}
	}()
	if err != nil || len(started) != len(cands) {
		return asked
	}
	for k, i := range at {
		_, on := enabled[cands[k].Name]
		out[i] = summaryOf(cands[k], on, started[k])
		asked[i] = true
	}
	return asked
}

// summarise starts one plugin, reads its info and kills it.
func summarise(ctx context.Context, p *stages.Plan, c source.Candidate, enabled bool) PluginSummary {
	s := PluginSummary{Name: c.Name, Source: c.Source, Path: c.Path, Enabled: enabled, Stages: []stage.Name{}}
	if c.Problem != "" {
		if enabled {
			s.Error = c.Problem
		} else {
			s.Warning = c.Problem
		}
		return s
	}
	opts, err := p.LaunchOptions()
	var started []stages.Plugin
	if err == nil {
		started, err = p.Deps.Launch(ctx, []source.Candidate{c}, opts)
	}
	defer func() {
		for _, pl := range started {
			pl.Kill()
		}
	}()
	if err != nil {
		s.Error = err.Error()
		return s
	}
	if len(started) != 1 {
		s.Error = fmt.Sprintf("plugin host started %d plugins for %s", len(started), c.Name)
		return s
	}
	return summaryOf(c, enabled, started[0])
}

// summaryOf describes a started plugin.
func summaryOf(c source.Candidate, enabled bool, pl stages.Plugin) PluginSummary {
	s := PluginSummary{Name: c.Name, Source: c.Source, Path: c.Path, Enabled: enabled, Stages: []stage.Name{}}
	info := pl.Info()
	s.Version, s.Description, s.Capabilities = info.Version, info.Description, info.Capabilities
	s.ProtocolVersion = pl.ProtocolVersion()
	s.ValuesSchema = info.ValuesSchema
	if info.Stages != nil {
		s.Stages = info.Stages
	}
	return s
}

// LockPlugins writes plugins.lock beside cluster.yaml with the sha256 of
// every plugin that is not built in, and returns its path and the plugins
// it locked. Plugins from registries keep the pins installing them made
// (and are installed first if they were not).
func LockPlugins(ctx context.Context, opts stages.Options) (string, []source.Candidate, error) {
	opts.ConfigOptional = true
	p, err := stages.NewPlanContext(ctx, opts)
	if err != nil {
		return "", nil, err
	}
	path := filepath.Join(p.ClusterDir, source.LockfileName)
	locked, err := p.Deps.Lock(p.All, path)
	if err != nil {
		return path, nil, &stages.Error{Code: stages.ExitFatal, Msg: fmt.Sprintf("writing %s: %v", path, err)}
	}
	return path, locked, nil
}

// VerifyPlugins checks every plugin that is not built in against
// plugins.lock and reports every difference as a fatal diagnostic, after
// the warnings planning found. It installs nothing and contacts no
// registry: a plugin from a registry that is not in the cache, or whose
// pinned digest the cache does not record as checked with its verify.key,
// is a fatal diagnostic at its setting, saying what to run.
func VerifyPlugins(opts stages.Options) (string, diag.List, error) {
	opts.ConfigOptional = true
	opts.Registry.Mode = source.Offline
	p, err := stages.NewPlan(opts)
	if err != nil {
		// The plugins from registries that cannot be checked (not in the
		// cache, no record of their signature's check) are diagnostics
		// that say why and what to run: hand them on.
		var se *stages.Error
		if errors.As(err, &se) {
			return lockPathOf(opts), se.Diagnostics, err
		}
		return lockPathOf(opts), nil, err
	}
	path := filepath.Join(p.ClusterDir, source.LockfileName)
	// The plan's warnings first (a plugin from a registry whose signature
	// is not checked, say): verify is where CI looks.
	diags := append(diag.List(nil), p.Diagnostics...)
	fatal := false
	for _, e := range p.Deps.Verify(p.All, path) {
		fatal = true
		diags = append(diags, diag.Diagnostic{Severity: diag.Fatal, File: path, Message: e.Error(),
			Hint: "if the change is intended, run `kube-aws plugins lock` and commit plugins.lock"})
	}
	if fatal {
		return path, diags, &stages.Error{Code: stages.ExitFatal, Msg: fmt.Sprintf("plugins do not match %s", path), Diagnostics: diags}
	}
	return path, diags, nil
}

// lockPathOf is plugins.lock beside the cluster.yaml opts names, for a
// report when planning failed.
func lockPathOf(opts stages.Options) string {
	cfg := opts.ConfigPath
	if cfg == "" {
		cfg = "cluster.yaml"
	}
	abs, err := filepath.Abs(cfg)
	if err != nil {
		return source.LockfileName
	}
	return filepath.Join(filepath.Dir(abs), source.LockfileName)
}
