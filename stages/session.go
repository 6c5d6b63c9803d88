package stages

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
	"github.com/kube-aws/kube-aws/core/version"
	"github.com/kube-aws/kube-aws/plugins/host"
	"github.com/kube-aws/kube-aws/plugins/source"
)

// Session is a plan with its plugins started and registered. Close it on
// every path (defer): it kills every plugin process.
type Session struct {
	Plan *Plan
	// Plugins are the accepted plugins in run order.
	Plugins []Plugin
	// Capabilities is the provider chosen for each capability.
	Capabilities map[string]string
	// Diagnostics are the warnings of planning and registration.
	Diagnostics diag.List

	reporter Reporter
	// credentials keeps the secrets plugins generate.
	credentials *host.Credentials
	closeOnce   sync.Once
	all         []Plugin

	hashOnce sync.Once
	hashes   map[string]string
	hashErr  error
}

// Close kills every plugin process. Safe to call more than once.
func (s *Session) Close() {
	s.closeOnce.Do(func() {
		var wg sync.WaitGroup
		for _, p := range s.all {
			wg.Add(1)
			go func(p Plugin) {
				defer wg.Done()
				defer func() { _ = recover() }() // a broken plugin must not stop the others being killed
				p.Kill()
			}(p)
		}
		wg.Wait()
	})
}

// Launch starts every enabled plugin and registers it: unique names, a
// protocol version this kube-aws speaks, the user's values valid against the
// plugin's schema, one provider per capability. Each plugin is told whether
// it was accepted and why not. On error every started plugin is killed.
func (p *Plan) Launch(ctx context.Context) (s *Session, err error) {
	s = &Session{Plan: p, Diagnostics: append(diag.List(nil), p.Diagnostics...)}
	s.reporter = p.Options.Reporter
	defer func() {
		if r := recover(); r != nil {
			s.Close()
			panic(r)
		}
		if err != nil {
			s.Close()
		}
	}()
	opts, lerr := p.LaunchOptions()
	var started []Plugin
	if lerr == nil {
		opts.StoreDir = filepath.Join(p.ClusterDir, ".kube-aws", "store")
		s.credentials = host.NewCredentials("")
		if p.Config != nil {
			s.credentials = host.NewCredentials(filepath.Join(p.ClusterDir, names.CredentialsDir))
		}
		opts.Credentials = s.credentials
		started, lerr = p.Deps.Launch(ctx, p.Enabled, opts)
	}
	s.all = started
	if lerr != nil {
		if ierr := interrupted(ctx); ierr != nil {
			return s, ierr
		}
		// One diagnostic per failure (a plugin, a file that does not match
		// plugins.lock), so that every one is seen and counted.
		var diags diag.List
		for _, e := range unjoin(lerr) {
			diags = append(diags, diag.Fatalf("%v", e).WithHint("check the plugin named above: `kube-aws plugins list` shows every plugin found, `kube-aws plugins verify` checks plugins.lock"))
		}
		return s, &Error{Code: ExitFatal, Msg: fmt.Sprintf("starting plugins failed: %d error(s)", len(diags)), Diagnostics: diags}
	}
	byName := map[string]Plugin{}
	for _, pl := range started {
		byName[pl.Candidate().Name] = pl
	}
	var ordered []Plugin
	for _, c := range p.Enabled {
		if pl, ok := byName[c.Name]; ok {
			ordered = append(ordered, pl)
		}
	}

	plain, rdiags := p.resolveSecrets(ordered)
	if rdiags.HasFatal() {
		rdiags.Sort()
		// Every plugin is told why before it is killed.
		for _, pl := range ordered {
			_ = safeRegister(ctx, pl, stage.Registration{Reason: "cluster.yaml's sensitive values could not be resolved"})
		}
		return s, &Error{Code: ExitUsage, Msg: "resolving sensitive values failed", Diagnostics: append(s.Diagnostics, rdiags...)}
	}
	s.Diagnostics = append(s.Diagnostics, rdiags...)
	if p.Config != nil {
		var names []string
		for _, pl := range ordered {
			names = append(names, pl.Candidate().Name)
		}
		if err := s.credentials.Load(names); err != nil {
			return s, &Error{Code: ExitFatal, Msg: err.Error()}
		}
		s.foldGeneratedSecrets()
	}

	regs, diags, code := p.validateRegistration(ordered, plain)
	if p.Options.WarningsAsErrors {
		diags = diags.PromoteWarnings()
	}
	s.Diagnostics = append(s.Diagnostics, diags...)
	s.Capabilities = p.capabilities

	// Tell every plugin the verdict, concurrently: registration is one RPC each.
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, pl := range ordered {
		wg.Add(1)
		go func(pl Plugin, reg stage.Registration) {
			defer wg.Done()
			rerr := safeRegister(ctx, pl, reg)
			if rerr != nil && reg.Accepted {
				mu.Lock()
				s.Diagnostics = append(s.Diagnostics, diag.Fatalf("registering plugin %s failed: %v", pl.Candidate().Name, rerr).
					WithHint("kube-aws could not tell the plugin it was accepted; its stderr above says why"))
				if code == 0 {
					code = ExitFatal
				}
				mu.Unlock()
			}
		}(pl, regs[i])
	}
	wg.Wait()
	if ierr := interrupted(ctx); ierr != nil {
		return s, ierr
	}
	if s.Diagnostics.HasFatal() {
		if code == 0 {
			code = ExitFatal
		}
		s.Diagnostics.Sort()
		return s, &Error{Code: code, Msg: p.registrationFailure(code, len(s.Diagnostics.Fatals())), Diagnostics: s.Diagnostics}
	}
	s.Plugins = ordered
	return s, nil
}

// unjoin flattens errors.Join's tree into its leaves.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, unjoin(e)...)
		}
		return out
	}
	return []error{err}
}

// registrationFailure ends a failed registration with what the user counts:
// the errors to fix, and where. Values against a plugin's schema and the
// choice of capability providers are cluster.yaml's (exit code 2).
func (p *Plan) registrationFailure(code, errors int) string {
	if code == ExitUsage && p.Config != nil {
		return fmt.Sprintf("%s is not valid: %d error(s) in plugin settings", filepath.Base(p.Config.Path), errors)
	}
	return fmt.Sprintf("%d error(s) while registering plugins; no stage was run", errors)
}

// resolveSecrets resolves the configuration's secrets now that the plugins'
// schemas are known, and from then on the plan holds only redacted values.
// It returns the plain values, for schema validation only.
func (p *Plan) resolveSecrets(plugins []Plugin) (map[string]stage.PluginValues, diag.List) {
	if p.Config == nil {
		return nil, nil
	}
	if p.Deps.ResolveSecrets == nil {
		return p.Config.Values, nil
	}
	schemas := map[string]json.RawMessage{}
	for _, pl := range plugins {
		if s := pl.Info().ValuesSchema; len(s) > 0 {
			schemas[pl.Candidate().Name] = s
		}
	}
	// Resolve from the configuration as loaded, even when the plan is
	// launched again: its redacted form has lost the secret sources.
	if p.loaded == nil {
		p.loaded = p.Config
	}
	r, diags := p.Deps.ResolveSecrets(p.loaded, schemas)
	if r == nil || diags.HasFatal() {
		return nil, diags
	}
	cfg := *p.loaded
	cfg.JSON, cfg.Values, cfg.Secrets = r.JSON, r.Values, r.Secrets
	p.Config = &cfg
	return r.Plain, diags
}

func safeRegister(ctx context.Context, pl Plugin, reg stage.Registration) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return pl.Register(ctx, reg)
}

// validateRegistration decides, for each plugin in order, whether it is
// accepted. code is the exit code its rejections call for: 2 when the user
// fixes cluster.yaml (values, capabilities), 1 otherwise.
func (p *Plan) validateRegistration(plugins []Plugin, plain map[string]stage.PluginValues) ([]stage.Registration, diag.List, int) {
	regs := make([]stage.Registration, len(plugins))
	var diags diag.List
	code := 0
	reject := func(i int, c int, d diag.Diagnostic, reason string) {
		if regs[i].Accepted {
			regs[i] = stage.Registration{Accepted: false, Reason: reason}
		} else {
			regs[i].Reason += "; " + reason
		}
		d.Plugin = plugins[i].Candidate().Name
		diags = append(diags, d)
		if c > code {
			code = c
		}
	}
	seen := map[string]int{}
	for i, pl := range plugins {
		regs[i] = stage.Registration{Accepted: true}
		cand, info := pl.Candidate(), pl.Info()
		if info.Name != cand.Name {
			reject(i, ExitFatal, diag.Fatalf("plugin found as %q (%s) says its name is %q", cand.Name, cand.Path, info.Name).
				WithHint("a plugin's folder and executable must carry the name the plugin reports"),
				fmt.Sprintf("name %q does not match its folder %q", info.Name, cand.Name))
		}
		if j, dup := seen[info.Name]; dup {
			reason := fmt.Sprintf("name %q is also used by %s", info.Name, plugins[j].Candidate().Path)
			reject(i, ExitFatal, diag.Fatalf("two plugins are named %q: %s and %s", info.Name, plugins[j].Candidate().Path, cand.Path).
				WithHint("remove or rename one of them"), reason)
		} else {
			seen[info.Name] = i
		}
		pv := pl.ProtocolVersion()
		if pv < 1 || pv > version.ProtocolVersion || !containsInt(info.ProtocolVersions, pv) {
			reject(i, ExitFatal, diag.Fatalf("plugin %s speaks protocol versions %v; this kube-aws speaks 1..%d", cand.Name, info.ProtocolVersions, version.ProtocolVersion).
				WithHint("upgrade the plugin or kube-aws so they share a protocol version"),
				fmt.Sprintf("protocol version %d is not supported", pv))
		}
		if p.Config != nil && p.Deps.ValidateValues != nil && len(info.ValuesSchema) > 0 {
			vd := p.Deps.ValidateValues(p.Config, cand.Name, info.ValuesSchema, plain[cand.Name])
			vd = vd.WithDefaults(cand.Name, "")
			for k := range vd {
				if vd[k].File == "" {
					vd[k].File = p.Config.Path
				}
			}
			if vd.HasFatal() {
				var msgs []string
				for _, d := range vd.Fatals() {
					msgs = append(msgs, d.Message)
				}
				reason := "values do not match the plugin's schema: " + strings.Join(msgs, "; ")
				for _, d := range vd {
					if d.Severity == diag.Fatal {
						reject(i, ExitUsage, d, reason)
						reason = "" // the reason is given once per plugin
					} else {
						diags = append(diags, d)
					}
				}
			} else {
				diags = append(diags, vd...)
			}
		}
	}

	// Capabilities: one provider each, among the plugins still accepted.
	providers := map[string][]string{}
	index := map[string]int{}
	for i, pl := range plugins {
		if !regs[i].Accepted {
			continue
		}
		index[pl.Candidate().Name] = i
		for _, c := range pl.Info().Capabilities {
			providers[c] = append(providers[c], pl.Candidate().Name)
		}
	}
	if len(providers) > 0 && p.Deps.ChooseProviders != nil {
		var pref map[string]string
		if p.Config != nil {
			pref = p.Config.Cluster.Capabilities
		}
		chosen, cd := p.Deps.ChooseProviders(pref, providers)
		p.capabilities = chosen
		fatal := cd.HasFatal()
		for _, d := range cd {
			if d.Severity != diag.Fatal {
				diags = append(diags, d)
			}
		}
		if fatal {
			caps := make([]string, 0, len(providers))
			for c := range providers {
				caps = append(caps, c)
			}
			sort.Strings(caps)
			for _, d := range cd.Fatals() {
				diags = append(diags, d)
			}
			if code < ExitUsage {
				code = ExitUsage
			}
			for _, c := range caps {
				if _, ok := chosen[c]; ok {
					continue
				}
				for _, n := range providers[c] {
					i := index[n]
					if regs[i].Accepted {
						regs[i] = stage.Registration{Reason: fmt.Sprintf("capability %q has several providers (%s) and cluster.yaml prefers none", c, strings.Join(providers[c], ", "))}
					}
				}
			}
		}
	}
	return regs, diags, code
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// pluginHashes returns the sha256 of every enabled plugin's executable,
// computed once per session.
func (s *Session) pluginHashes() (map[string]string, error) {
	s.hashOnce.Do(func() {
		cache := loadHashCache(hashCachePath(s.Plan.ClusterDir))
		defer cache.save()
		hs := make(map[string]string, len(s.Plan.Enabled))
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, c := range s.Plan.Enabled {
			wg.Add(1)
			go func(c source.Candidate) {
				defer wg.Done()
				h, err := cache.hash(c.Path)
				mu.Lock()
				defer mu.Unlock()
				if err != nil && s.hashErr == nil {
					s.hashErr = fmt.Errorf("hashing plugin %s (%s): %w", c.Name, c.Path, err)
				}
				hs[c.Name] = h
			}(c)
		}
		wg.Wait()
		s.hashes = hs
	})
	return s.hashes, s.hashErr
}

// foldGeneratedSecrets adds the secrets plugins generated to the
// configuration's secrets, so that they are scrubbed from every output like
// a sensitive value of cluster.yaml and deploy receives their plain text.
// It runs between stages (no plugin call in flight) and replaces the map
// rather than changing the one a reporter may hold.
func (s *Session) foldGeneratedSecrets() {
	cfg := s.Plan.Config
	if cfg == nil || s.credentials == nil {
		return
	}
	gen := s.credentials.Secrets()
	merged := make(map[string]string, len(cfg.Secrets)+len(gen))
	for k, v := range cfg.Secrets {
		merged[k] = v
	}
	for k, v := range gen {
		merged[k] = v
	}
	cfg.Secrets = merged
	s.reporter = redactingReporter{next: s.Plan.Options.Reporter, redact: s.Plan.Deps.Redact, secrets: merged}
}
