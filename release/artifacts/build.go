package artifacts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

// Options say what to build and where.
type Options struct {
	// Source is the kube-aws checkout: its release/artifacts holds the
	// builder and the scratch modules.
	Source string
	// Dir is the artifact folder. It holds the layout and nothing else.
	Dir string
	// StateDir holds the builder's stamps, build outputs and Debian layers;
	// default Dir + ".state".
	StateDir string
	// Arch is the CPU architecture (amd64 or arm64); default amd64.
	Arch string
	// Kubernetes names the Kubernetes versions the folder holds ("v1.34.4"
	// or "1.34.4"); default every version the builder knows
	// (KubernetesVersions). What every release shares is built once.
	Kubernetes []string
	// Only names the artifacts to build (kubelet builds the kubelet of
	// every selected Kubernetes version); default all of them.
	Only []string
	// DebianSources is the apt source list (a deb822 or one-line file) or a
	// mirror URL for the Debian packages; default the machine's own.
	DebianSources string
	// Go is the go command; default "go".
	Go string
	// Log receives progress lines; default io.Discard.
	Log io.Writer
}

// Result is what a build produced.
type Result struct {
	Platform string
	// Kubernetes are the Kubernetes versions the build was for.
	Kubernetes []string
	Steps      []Step
	Artifacts  []Built
}

// Step is one build step and how long it took (a cached step reports the
// time it took when it was built).
type Step struct {
	ID      string
	Cached  bool
	Seconds float64
}

// Built is one artifact of the folder.
type Built struct {
	Name, Version, Image string
	Cached               bool
	Seconds              float64
	Files                []File
}

// File is one file of the folder.
type File struct {
	Path   string // relative to the folder
	Size   int64
	SHA256 string
}

// run is the state of one Build.
type run struct {
	opts                 Options
	arch, platform       string
	modulesDir, stateDir string
	goCmd, goVersion     string
	builderHash          string
	debianSources        string
	log                  io.Writer
	result               *Result
	binaries             map[binarySource]string // Go build outputs
	debianOut            map[string]string       // Debian set -> layer or bundle
	hashes               map[string]string       // output path -> sha256, from the stamps
}

// Build fills the artifact folder for one architecture. Every step (a Go
// build, a Debian set, an artifact) is skipped when its stamp says its
// inputs are unchanged and its outputs are in place; everything else is
// rebuilt, through the Go build cache. A failed or interrupted build leaves
// every artifact either as it was or complete.
func Build(ctx context.Context, opts Options) (*Result, error) {
	r, err := newRun(ctx, opts)
	if err != nil {
		return nil, err
	}
	unlock, err := lockState(r.stateDir, r.log)
	if err != nil {
		return nil, err
	}
	defer unlock()

	releases, err := Releases(opts.Kubernetes)
	if err != nil {
		return nil, err
	}
	for _, k := range releases {
		r.result.Kubernetes = append(r.result.Kubernetes, k.Version)
	}
	arts, err := Lookup(releases, opts.Only)
	if err != nil {
		return nil, err
	}
	builds, debs := needs(arts)
	for _, d := range debs {
		out, s, err := r.buildDebian(ctx, d)
		if err != nil {
			return nil, err
		}
		r.debianOut[d] = out
		r.record(s)
	}
	for _, b := range builds {
		paths, s, err := r.buildGo(ctx, b)
		if err != nil {
			return nil, err
		}
		for file, p := range paths {
			r.binaries[binarySource{b, file}] = p
		}
		r.record(s)
	}
	for _, a := range arts {
		built, err := r.buildArtifact(a)
		if err != nil {
			return nil, err
		}
		r.result.Artifacts = append(r.result.Artifacts, built)
	}
	return r.result, nil
}

func newRun(ctx context.Context, opts Options) (*run, error) {
	if opts.Arch == "" {
		opts.Arch = "amd64"
	}
	if !slices.Contains(Architectures, opts.Arch) {
		return nil, fmt.Errorf("architecture %q: the builder makes %s", opts.Arch, strings.Join(Architectures, ", "))
	}
	if opts.Dir == "" {
		return nil, errors.New("no artifact folder given")
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return nil, err
	}
	opts.Dir = dir
	if opts.StateDir == "" {
		opts.StateDir = dir + ".state"
	}
	if opts.StateDir, err = filepath.Abs(opts.StateDir); err != nil {
		return nil, err
	}
	if opts.Go == "" {
		opts.Go = "go"
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.DebianSources == "" {
		opts.DebianSources = defaultDebianSources
	}
	builderDir := filepath.Join(opts.Source, "release", "artifacts")
	modulesDir := filepath.Join(builderDir, "modules")
	if _, err := os.Stat(filepath.Join(modulesDir, "pause", "go.mod")); err != nil {
		return nil, fmt.Errorf("source %q is not a kube-aws checkout (no %s): give the repository root", opts.Source, filepath.Join(modulesDir, "pause", "go.mod"))
	}
	builderHash, err := treeHash(builderDir, builderSource)
	if err != nil {
		return nil, err
	}
	goVersion, err := exec.CommandContext(ctx, opts.Go, "env", "GOVERSION").Output()
	if err != nil {
		return nil, fmt.Errorf("run %s env GOVERSION: %w (is Go installed and on PATH?)", opts.Go, err)
	}
	platform := OS + "-" + opts.Arch
	return &run{
		opts: opts, arch: opts.Arch, platform: platform,
		modulesDir: modulesDir, stateDir: opts.StateDir,
		goCmd: opts.Go, goVersion: strings.TrimSpace(string(goVersion)),
		builderHash: builderHash, debianSources: opts.DebianSources, log: opts.Log,
		result:    &Result{Platform: platform},
		binaries:  map[binarySource]string{},
		debianOut: map[string]string{},
		hashes:    map[string]string{},
	}, nil
}

// record keeps a step's output hashes for the steps that use them.
func (r *run) record(s *stamp) {
	for _, o := range s.Outputs {
		r.hashes[o.Path] = o.SHA256
	}
}

func (r *run) hashOf(p string) (string, error) {
	if sum, ok := r.hashes[p]; ok {
		return sum, nil
	}
	return "", fmt.Errorf("internal error: no hash recorded for %s", p)
}

func (r *run) step(id string, cached bool, took time.Duration) {
	r.result.Steps = append(r.result.Steps, Step{ID: id, Cached: cached, Seconds: took.Seconds()})
	state := "built"
	if cached {
		state = "up to date"
	}
	fmt.Fprintf(r.log, "%s: %s (%.1fs)\n", id, state, took.Seconds())
}

// buildArtifact places one artifact in the folder: binaries linked (or
// copied) from their build, or an image assembled.
func (r *run) buildArtifact(a Artifact) (Built, error) {
	id := "artifact-" + a.Name + "-" + a.Version + "-" + r.platform
	leaf := a.Dir(r.opts.Dir, r.arch)
	var outs []string
	for _, f := range a.Files {
		outs = append(outs, filepath.Join(leaf, f))
	}
	var desc map[string]any
	if a.image != nil {
		var err error
		if desc, err = r.imageInputs(a); err != nil {
			return Built{}, err
		}
	} else {
		var files []string
		for i, b := range a.binaries {
			sum, err := r.hashOf(r.binaries[b])
			if err != nil {
				return Built{}, err
			}
			files = append(files, a.Files[i]+" "+sum)
		}
		desc = map[string]any{"builder": r.builderHash, "files": files}
	}
	inputs := inputHash(desc)
	s, cached := readStamp(r.stateDir, id, inputs)
	start := time.Now()
	if !cached {
		if err := r.place(a, leaf); err != nil {
			return Built{}, err
		}
		var err error
		if s, err = writeStamp(r.stateDir, id, inputs, outs, nil, time.Since(start)); err != nil {
			return Built{}, err
		}
	}
	r.step(id, cached, time.Duration(s.Seconds*float64(time.Second)))
	b := Built{Name: a.Name, Version: a.Version, Image: a.Image, Cached: cached, Seconds: s.Seconds}
	for _, o := range s.Outputs {
		rel, _ := filepath.Rel(r.opts.Dir, o.Path)
		b.Files = append(b.Files, File{Path: filepath.ToSlash(rel), Size: o.Size, SHA256: o.SHA256})
	}
	return b, nil
}

// place fills a temporary folder beside the artifact's leaf folder and swaps
// it in, so the folder never holds half an artifact.
func (r *run) place(a Artifact, leaf string) error {
	parent := filepath.Dir(leaf)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(leaf)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if a.image != nil {
		work, err := os.MkdirTemp(r.stateDir, "work-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(work)
		if err := r.writeImage(a, work, filepath.Join(tmp, imageTar)); err != nil {
			return err
		}
	} else {
		for i, b := range a.binaries {
			if err := fileutil.LinkOrCopy(r.binaries[b], filepath.Join(tmp, a.Files[i])); err != nil {
				return fmt.Errorf("artifact %s: %w", a.Name, err)
			}
		}
	}
	if err := os.RemoveAll(leaf); err != nil {
		return err
	}
	return os.Rename(tmp, leaf)
}

// DirEnv names the environment variable that overrides DefaultDir.
const DirEnv = "KUBE_AWS_ARTIFACTS"

// KubernetesEnv names the environment variable that picks the Kubernetes
// versions `make artifacts` builds (comma-separated, e.g. v1.34.4); empty
// means every version the builder knows.
const KubernetesEnv = "KUBE_AWS_ARTIFACTS_KUBERNETES"

// DefaultDir is the artifact folder `make artifacts` fills and the
// end-to-end harness reads: $KUBE_AWS_ARTIFACTS, else kube-aws/artifacts in
// the user's cache folder (shared by every checkout on the machine; the
// state folder's lock keeps concurrent builds apart).
func DefaultDir() (string, error) {
	if d := os.Getenv(DirEnv); d != "" {
		return d, nil
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no artifact folder: set %s (%w)", DirEnv, err)
	}
	return filepath.Join(cache, "kube-aws", "artifacts"), nil
}

// SourceRoot returns the root of the Go module holding dir (`go env GOMOD`
// run there): the kube-aws checkout when dir is inside it. Build checks
// that it holds the builder.
func SourceRoot(ctx context.Context, goCmd, dir string) (string, error) {
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.CommandContext(ctx, goCmd, "env", "GOMOD")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("find the kube-aws checkout from %s: %s env GOMOD: %w", dir, goCmd, err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("%s is not inside a Go module: run from the kube-aws checkout or give its root", dir)
	}
	return filepath.Dir(gomod), nil
}
