package stages

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/config/values"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/plugins/host"
	"github.com/kube-aws/kube-aws/plugins/source"
)

// Options configure a run. The zero value of every field has a sensible
// default, filled by Plan.
type Options struct {
	// ConfigPath is cluster.yaml (default ./cluster.yaml).
	ConfigPath string
	// PluginDirs are extra user plugin folders (--plugin-dir).
	PluginDirs []string
	// OutDir is the render output folder (default rendered beside the
	// current directory, as --out).
	OutDir string
	// StateDir holds the stage state (default .kube-aws/state beside cluster.yaml).
	StateDir string
	// WarningsAsErrors makes every warning fatal (--warnings-as-errors).
	WarningsAsErrors bool
	StartTimeout     time.Duration
	StageTimeout     time.Duration
	// Reporter receives plugin events (default: discarded).
	Reporter Reporter
	// PluginStderr receives the plugins' stderr, prefixed by the host.
	PluginStderr io.Writer
	// HostVersion is kube-aws's version, told to plugins.
	HostVersion string
	// AWS are the AWS flags of the command (--profile, --region,
	// --endpoint-url, --timeout, --yes, --force-unlock), given in the stage
	// input to the plugins that declare they reach AWS and to no other.
	AWS *stage.AWSSettings
	// Deps default to DefaultDeps().
	Deps *Deps
	// ConfigOptional lets commands that only look at plugins (plugins list,
	// describe, lock, verify) run without a cluster.yaml.
	ConfigOptional bool
	// Registry says what planning does about the plugins cluster.yaml takes
	// from OCI registries (plugins.NAME.source); by default it installs the
	// missing ones and pins them in plugins.lock (registry.go).
	Registry RegistryOptions
}

// Plan is what a run will do: the configuration, every plugin found and the
// enabled ones in run order. Nothing has been started yet.
type Plan struct {
	Options Options
	Deps    Deps
	// Config is nil only when Options.ConfigOptional and there is no cluster.yaml.
	Config *Loaded
	// ClusterDir is the folder holding cluster.yaml.
	ClusterDir string
	// All is every plugin, by name, as plugins/source resolved them.
	All []source.Candidate
	// Enabled are the plugins that take part, in run order.
	Enabled []source.Candidate
	// Order is the order list in force (order.yaml or pluginOrder).
	Order []string
	// Diagnostics are the warnings found while planning.
	Diagnostics diag.List
	// Registry is what was done about plugins from registries; nil when
	// cluster.yaml names none.
	Registry *source.Outcome
	// lock is plugins.lock as read and updated for plugins from registries
	// (nil when there are none, or no lock): launching checks against it.
	lock *source.Lockfile

	capabilities map[string]string
	// loaded is Config as loaded, before Launch redacted it.
	loaded *Loaded
}

// NewPlan is NewPlanContext without a context: installing plugins from
// registries, the only part that may take long, cannot be interrupted.
func NewPlan(opts Options) (*Plan, error) { return NewPlanContext(context.Background(), opts) }

// NewPlanContext loads cluster.yaml, discovers plugins, installs the ones it
// takes from registries if they are not in the cache, decides which are
// enabled and orders them. Configuration problems are returned as an *Error
// with exit code 2 carrying every diagnostic.
func NewPlanContext(ctx context.Context, opts Options) (*Plan, error) {
	if opts.ConfigPath == "" {
		opts.ConfigPath = "cluster.yaml"
	}
	if opts.OutDir == "" {
		opts.OutDir = "rendered"
	}
	if opts.Reporter == nil {
		opts.Reporter = Discard{}
	}
	if opts.PluginStderr == nil {
		opts.PluginStderr = io.Discard
	}
	deps := DefaultDeps()
	if opts.Deps != nil {
		deps = *opts.Deps
	}
	abs, err := filepath.Abs(opts.ConfigPath)
	if err != nil {
		return nil, ConfigError("resolving %s: %v", opts.ConfigPath, err)
	}
	p := &Plan{Options: opts, Deps: deps, ClusterDir: filepath.Dir(abs)}

	// User plugins beside cluster.yaml: without a cluster.yaml there is no
	// cluster folder, and ./plugins is just a folder of that name.
	userDir := p.ClusterDir
	if _, statErr := os.Stat(abs); statErr != nil && opts.ConfigOptional && os.IsNotExist(statErr) {
		// No cluster.yaml: plugin commands still work with built-in defaults.
		userDir = ""
	} else {
		cfg, diags, err := deps.LoadConfig(abs)
		if err != nil {
			e := ConfigError("%s: %v", opts.ConfigPath, err)
			if errors.Is(err, fs.ErrNotExist) {
				e.Msg = fmt.Sprintf("%s not found: run `kube-aws init` to write one, or pass --config", opts.ConfigPath)
			}
			e.Diagnostics = diags
			return nil, e
		}
		if opts.WarningsAsErrors {
			diags = diags.PromoteWarnings()
		}
		if diags.HasFatal() {
			diags.Sort()
			return nil, &Error{Code: ExitUsage, Msg: fmt.Sprintf("%s is not valid", opts.ConfigPath), Diagnostics: diags}
		}
		p.Config = cfg
		p.Diagnostics = append(p.Diagnostics, diags...)
	}
	if p.Options.StateDir == "" {
		p.Options.StateDir = filepath.Join(p.ClusterDir, ".kube-aws", "state")
	}

	found, err := deps.Discover(userDir, opts.PluginDirs)
	if err != nil {
		// Two plugins with one name, an unreadable plugin folder: the user
		// fixes the layout, so this is a configuration error.
		return nil, ConfigError("discovering plugins: %v", err)
	}
	if err := p.resolvePlugins(ctx, found); err != nil {
		return nil, err
	}

	enabled, diags := p.enabled()
	if opts.WarningsAsErrors {
		diags = diags.PromoteWarnings()
	}
	p.Diagnostics = append(p.Diagnostics, diags...)
	if diags.HasFatal() {
		all := append(diag.List(nil), p.Diagnostics...)
		all.Sort()
		return nil, &Error{Code: ExitUsage, Msg: "plugin configuration is not valid", Diagnostics: all}
	}

	p.Order = DefaultOrder()
	if p.Config != nil && len(p.Config.Cluster.PluginOrder) > 0 {
		p.Order = p.Config.Cluster.PluginOrder
	}
	byName := map[string]source.Candidate{}
	var names []string
	for _, c := range enabled {
		byName[c.Name] = c
		names = append(names, c.Name)
	}
	for _, n := range Order(names, p.Order) {
		p.Enabled = append(p.Enabled, byName[n])
	}
	return p, nil
}

// Cluster returns the loaded cluster or an empty one.
func (p *Plan) Cluster() *config.Cluster {
	if p.Config == nil || p.Config.Cluster == nil {
		return &config.Cluster{}
	}
	return p.Config.Cluster
}

// enabled applies the rule of docs/design.md: built-ins are on unless
// disabled; contrib and user plugins are off until enabled; a plugin from a
// registry is on unless disabled.
func (p *Plan) enabled() ([]source.Candidate, diag.List) {
	c := p.Cluster()
	var diags diag.List
	found := map[string]source.Candidate{}
	for _, cand := range p.All {
		found[cand.Name] = cand
	}
	var out []source.Candidate
	for _, cand := range p.All {
		on := c.PluginEnabled(cand.Name, cand.Source == source.Builtin)
		if cand.Problem != "" {
			// Only an enabled plugin needs its executable: a plugin's source
			// before its first build holds nothing else up.
			diags = append(diags, p.problemDiag(cand, on))
			continue
		}
		if on {
			out = append(out, cand)
		}
	}
	configured := make(map[string]*bool, len(c.Plugins))
	for n, pc := range c.Plugins {
		configured[n] = pc.Enabled
	}
	var names []string
	for _, cand := range p.All {
		names = append(names, cand.Name)
	}
	for _, d := range values.UnknownPluginsDiag(configured, names) {
		if p.Config != nil {
			if file, line, col, ok := c.Position(d.Path + ".enabled"); ok {
				d = d.InFile(file, line, col)
			} else if file, line, col, ok := c.Position(d.Path); ok {
				d = d.InFile(file, line, col)
			} else {
				d.File = p.Config.Path
			}
		}
		diags = append(diags, d)
	}
	for i, n := range c.PluginOrder {
		if _, ok := found[n]; !ok {
			diags = append(diags, diag.Warningf("pluginOrder names %q, which no plugin source provides", n).
				At(fmt.Sprintf("pluginOrder[%d]", i)).WithHint("remove it or install the plugin"))
		}
	}
	return out, diags
}

// problemDiag reports a plugin that cannot be started: fatal when it is
// enabled, a warning when it is not (disabled, or unknown to cluster.yaml).
// It points at the plugin's entry in cluster.yaml when there is one.
func (p *Plan) problemDiag(cand source.Candidate, enabled bool) diag.Diagnostic {
	var d diag.Diagnostic
	switch {
	case !enabled:
		d = diag.Warningf("%s; plugin %s is not enabled, so it is skipped", cand.Problem, cand.Name).
			WithHint(fmt.Sprintf("build it before enabling it, or remove %s if it is not a plugin", cand.Dir))
	case cand.Source == source.Builtin:
		d = diag.Fatalf("plugin %s is enabled but cannot be started: %s", cand.Name, cand.Problem).
			WithHint(fmt.Sprintf("reinstall kube-aws (make build writes its built-in plugins), or set plugins.%s.enabled: false", cand.Name))
	default:
		d = diag.Fatalf("plugin %s is enabled but cannot be started: %s", cand.Name, cand.Problem).
			WithHint(fmt.Sprintf("build it, or set plugins.%s.enabled: false to run without it", cand.Name))
	}
	if _, mentioned := p.Cluster().Plugins[cand.Name]; !mentioned || p.Config == nil {
		return d
	}
	d = d.At("plugins." + cand.Name + ".enabled")
	if file, line, col, ok := p.Config.Cluster.Position(d.Path); ok && line > 0 {
		return d.InFile(file, line, col)
	}
	d.File = p.Config.Path
	return d
}

// ConfigHash is the sha256 over cluster.yaml and every plugin config file it
// names (cluster-wide and per node pool), in a fixed order: the "config"
// input of every state file.
func ConfigHash(path string, c *config.Cluster) (string, error) {
	h := sha256.New()
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "cluster.yaml %d\n", len(b))
	h.Write(b)
	var files []string
	add := func(m map[string]config.PluginConfig) {
		for _, pc := range m {
			files = append(files, pc.ConfigFiles...)
		}
	}
	if c != nil {
		add(c.Plugins)
		for _, np := range c.NodePools {
			add(np.Plugins)
		}
	}
	sort.Strings(files)
	dir := filepath.Dir(path)
	prev := ""
	for _, f := range files {
		if f == prev {
			continue
		}
		prev = f
		full := f
		if !filepath.IsAbs(full) {
			full = filepath.Join(dir, f)
		}
		b, err := os.ReadFile(full)
		if err != nil {
			return "", fmt.Errorf("plugin config file %s: %w", f, err)
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// LaunchOptions are the plugin host's options for the plan: its timeouts,
// kube-aws's version and, when plugins.lock exists beside cluster.yaml, the
// lock every plugin that is not built in must match.
func (p *Plan) LaunchOptions() (host.Options, error) {
	opts := host.Options{
		StartTimeout: p.Options.StartTimeout,
		StageTimeout: p.Options.StageTimeout,
		Stderr:       p.Options.PluginStderr,
		HostVersion:  p.Options.HostVersion,
	}
	if p.lock != nil {
		// Read (and perhaps updated) already for plugins from registries.
		opts.Lock = p.lock
		return opts, nil
	}
	l, err := source.ReadLockfileIfAny(filepath.Join(p.ClusterDir, source.LockfileName))
	opts.Lock = l
	return opts, err
}
