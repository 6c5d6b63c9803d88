package source_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/plugins/source"
)

// The precedence rules between the plugin folders and cluster.yaml's
// registry sources, decided in Resolve alone.
func TestResolvePrecedence(t *testing.T) {
	t.Setenv("KUBE_AWS_CACHE_DIR", t.TempDir())
	off := false
	shipped := []source.Candidate{
		{Name: "iam", Path: "/b/iam", Dir: "/b", Source: source.Builtin},
		{Name: "dex", Path: "/c/dex", Dir: "/c", Source: source.Contrib},
		{Name: "helm", Path: "/b/helm", Dir: "/b", Source: source.Builtin},
	}
	user := source.Candidate{Name: "dex", Path: "/u/dex/dex", Dir: "/u/dex", Source: source.User}
	fromRegistry := map[string]config.PluginConfig{"dex": {Source: "oci://r.example/acme/dex:2.0.0"}}
	// pin is an Ensure that installs every plugin it is given from the
	// registry, as the kube-aws-oci helper would.
	pin := func(_ context.Context, ps []source.RegistryPlugin, o source.EnsureOptions) (*source.Outcome, error) {
		out := &source.Outcome{}
		for _, p := range ps {
			out.Candidates = append(out.Candidates, source.Candidate{Name: p.Name, Path: "/cache/e/" + p.Name, Dir: "/cache/e", Source: source.OCI})
		}
		return out, nil
	}
	for _, tc := range []struct {
		name    string
		found   []source.Candidate
		plugins map[string]config.PluginConfig
		mode    source.Mode
		ensure  func(context.Context, []source.RegistryPlugin, source.EnsureOptions) (*source.Outcome, error)
		// want is the names and kinds of All, or the error's text.
		want    string
		wantErr string
		config  bool // the error is a *ConfigError
	}{
		{name: "folders only, sorted by name", found: shipped, ensure: pin,
			want: "dex:contrib helm:builtin iam:builtin"},
		{name: "a registry source replaces the shipped plugin of its name", found: shipped, plugins: fromRegistry, ensure: pin,
			want: "dex:oci helm:builtin iam:builtin"},
		{name: "a disabled registry plugin is not installed", found: shipped, ensure: pin,
			plugins: map[string]config.PluginConfig{"dex": {Source: "oci://r.example/acme/dex:2.0.0", Enabled: &off}},
			want:    "dex:contrib helm:builtin iam:builtin"},
		{name: "a user folder of a name with a registry source", found: append(shipped[:2:2], user), plugins: fromRegistry, ensure: pin,
			wantErr: "plugin dex is found twice: plugins.dex.source (oci://r.example/acme/dex:2.0.0) and the user plugin /u/dex; remove the folder or the source", config: true},
		{name: "install without a registry plugin", found: shipped, mode: source.Install, ensure: pin,
			wantErr: "cluster.yaml takes no plugin from a registry", config: true},
		{name: "no way to install", found: shipped, plugins: fromRegistry,
			wantErr: "this kube-aws cannot install plugins from registries", config: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			called := false
			var ensure func(context.Context, []source.RegistryPlugin, source.EnsureOptions) (*source.Outcome, error)
			if tc.ensure != nil {
				ensure = func(ctx context.Context, ps []source.RegistryPlugin, o source.EnsureOptions) (*source.Outcome, error) {
					called = true
					return tc.ensure(ctx, ps, o)
				}
			}
			res, err := source.Resolve(context.Background(), source.ResolveOptions{
				ClusterDir: dir, Found: tc.found, Plugins: tc.plugins, Mode: tc.mode, Ensure: ensure,
			})
			if tc.wantErr != "" {
				var ce *source.ConfigError
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || errors.As(err, &ce) != tc.config {
					t.Fatalf("err = %v (%T), want %q", err, err, tc.wantErr)
				}
				if tc.config && called {
					t.Error("Ensure ran although the configuration is wrong")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range res.All {
				got = append(got, c.Name+":"+string(c.Source))
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("All = %v, want %s", got, tc.want)
			}
			if (res.Registry != nil) != called {
				t.Errorf("Registry %+v, but Ensure called: %v", res.Registry, called)
			}
		})
	}
}

// A problem with one registry plugin names its setting, so that stages can
// point at its line in cluster.yaml.
func TestResolveProblemsNameTheirSetting(t *testing.T) {
	t.Setenv("KUBE_AWS_CACHE_DIR", t.TempDir())
	_, err := source.Resolve(context.Background(), source.ResolveOptions{
		ClusterDir: t.TempDir(),
		Plugins:    map[string]config.PluginConfig{"dex": {Source: "oci://r.example/acme/dex:2.0.0"}},
		Ensure: func(context.Context, []source.RegistryPlugin, source.EnsureOptions) (*source.Outcome, error) {
			return &source.Outcome{Problems: []source.Problem{{Name: "dex", Field: "verify", Err: errors.New("no signature")}}}, nil
		},
	})
	var pe *source.ProblemsError
	if !errors.As(err, &pe) || len(pe.Problems) != 1 || pe.Problems[0].Path() != "plugins.dex.verify" {
		t.Fatalf("err = %v", err)
	}
}

// An interrupted install is reported as the context's error, not as a
// failure of the registry.
func TestResolveInterrupted(t *testing.T) {
	t.Setenv("KUBE_AWS_CACHE_DIR", t.TempDir())
	ctx, cancel := context.WithCancel(context.Background())
	_, err := source.Resolve(ctx, source.ResolveOptions{
		ClusterDir: t.TempDir(),
		Plugins:    map[string]config.PluginConfig{"dex": {Source: "oci://r.example/acme/dex:2.0.0"}},
		Ensure: func(context.Context, []source.RegistryPlugin, source.EnsureOptions) (*source.Outcome, error) {
			cancel()
			return nil, errors.New("the helper was killed")
		},
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

// plugins lock and plugins verify: WriteLock locks what is not built in
// and can start; VerifyLock says when there is no lock.
func TestWriteAndVerifyLock(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "plugins", "mine", "mine")
	writeExe(t, exe, 0o755)
	cands := []source.Candidate{
		{Name: "iam", Path: exe, Source: source.Builtin},
		{Name: "mine", Path: exe, Dir: filepath.Dir(exe), Source: source.User},
		{Name: "broken", Dir: filepath.Join(dir, "plugins", "broken"), Source: source.User, Problem: "no executable"},
	}
	path := filepath.Join(dir, source.LockfileName)
	if errs := source.VerifyLock(cands, path); len(errs) != 1 || !strings.Contains(errs[0].Error(), "does not exist: run `kube-aws plugins lock` to write it") {
		t.Errorf("verify without a lock: %v", errs)
	}
	locked, err := source.WriteLock(cands, path)
	if err != nil || len(locked) != 1 || locked[0].Name != "mine" {
		t.Fatalf("locked %+v, %v", locked, err)
	}
	if errs := source.VerifyLock(cands, path); len(errs) != 0 {
		t.Errorf("verify after lock: %v", errs)
	}
	if l, err := source.ReadLockfileIfAny(filepath.Join(dir, "none")); l != nil || err != nil {
		t.Errorf("no lock: %v %v", l, err)
	}
	if err := os.WriteFile(path, []byte("version: 7\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := source.ReadLockfileIfAny(path); err == nil {
		t.Error("a lock of another version is an error, not no lock")
	}
}
