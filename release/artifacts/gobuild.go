package artifacts

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// buildEnv is the environment of every `go build`: the caller's, with the
// settings that decide what is built pinned.
//   - GOFLAGS=-mod=readonly: the committed go.mod and go.sum are the truth; a
//     build never edits them or resolves anything afresh.
//   - GOWORK=off: a go.work around the checkout must not change the build.
//   - GOTOOLCHAIN=local: build with the Go that runs the builder, never one
//     downloaded because a module asks for a newer go line.
func buildEnv(arch string, cgo bool) []string {
	env := os.Environ()
	set := func(k, v string) {
		for i, kv := range env {
			if strings.HasPrefix(kv, k+"=") {
				env[i] = k + "=" + v
				return
			}
		}
		env = append(env, k+"="+v)
	}
	set("GOOS", OS)
	set("GOARCH", arch)
	set("CGO_ENABLED", map[bool]string{false: "0", true: "1"}[cgo])
	set("GOFLAGS", "-mod=readonly")
	set("GOWORK", "off")
	set("GOTOOLCHAIN", "local")
	return env
}

// buildArgs are the arguments of `go build` for b on arch, writing into out.
func buildArgs(b goBuild, arch, out string) []string {
	ld := append([]string{"-s", "-w"}, b.ldflags...)
	if b.cgo(arch) {
		ld = append(ld, `-extldflags "-static"`)
	}
	args := []string{"build", "-trimpath", "-buildvcs=false", "-ldflags", strings.Join(ld, " ")}
	if len(b.tags) > 0 {
		args = append(args, "-tags", strings.Join(b.tags, ","))
	}
	args = append(args, "-o", out+string(filepath.Separator))
	for _, bin := range b.bins {
		args = append(args, bin.pkg)
	}
	return args
}

// defaultExecName is the file name `go build -o DIR/` gives a main package
// (cmd/go's DefaultExecName): the last path element, or the one before a
// major version suffix (go.etcd.io/etcd/server/v3 -> server).
func defaultExecName(importPath string) string {
	dir, elem := path.Split(importPath)
	if dir != "" && isVersionElement(elem) {
		elem = path.Base(path.Dir(importPath))
	}
	return elem
}

func isVersionElement(s string) bool {
	if len(s) < 2 || s[0] != 'v' || s[1] == '0' || (s[1] == '1' && len(s) == 2) {
		return false
	}
	_, err := strconv.Atoi(s[1:])
	return err == nil
}

// buildGo runs one Go build into its output folder under the state folder
// and returns the paths of the binaries. The build goes to a temporary
// folder that replaces the old one only when every binary is there.
func (r *run) buildGo(ctx context.Context, name string) (map[string]string, *stamp, error) {
	b := goBuilds[name]
	moduleDir := filepath.Join(r.modulesDir, b.module)
	srcHash, err := treeHash(moduleDir, func(string) bool { return true })
	if err != nil {
		return nil, nil, fmt.Errorf("go build %s: read its module %s: %w", name, moduleDir, err)
	}
	cgo := b.cgo(r.arch)
	outDir := filepath.Join(r.stateDir, "build", name, r.platform)
	id := "gobuild-" + name + "-" + r.platform
	inputs := inputHash(map[string]any{
		"builder": r.builderHash, "module": srcHash, "go": r.goVersion,
		"args": buildArgs(b, r.arch, "OUT"), "arch": r.arch, "cgo": cgo,
	})
	paths := map[string]string{}
	var list []string
	for _, bin := range b.bins {
		paths[bin.file] = filepath.Join(outDir, bin.file)
		list = append(list, paths[bin.file])
	}
	if s, ok := readStamp(r.stateDir, id, inputs); ok {
		r.step(id, true, time.Duration(s.Seconds*float64(time.Second)))
		return paths, s, nil
	}

	start := time.Now()
	tmp := outDir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(tmp)
	fmt.Fprintf(r.log, "%s: go build in %s (%d binaries, cgo %v)\n", id, moduleDir, len(b.bins), cgo)
	cmd := exec.CommandContext(ctx, r.goCmd, buildArgs(b, r.arch, tmp)...)
	cmd.Dir = moduleDir
	cmd.Env = buildEnv(r.arch, cgo)
	var stderr bytes.Buffer
	cmd.Stdout = r.log
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return nil, nil, fmt.Errorf("go build %s for %s failed in %s: %w\n%s\nThe module's go.mod and go.sum are committed: if a module is missing, run `go mod tidy` in that folder (see docs/artifacts.md)",
			name, r.platform, moduleDir, err, tail(stderr.String(), 40))
	}
	for _, bin := range b.bins {
		built := filepath.Join(tmp, defaultExecName(bin.pkg))
		if built == filepath.Join(tmp, bin.file) {
			continue
		}
		if err := os.Rename(built, filepath.Join(tmp, bin.file)); err != nil {
			return nil, nil, fmt.Errorf("go build %s: %w", name, err)
		}
	}
	if err := os.RemoveAll(outDir); err != nil {
		return nil, nil, err
	}
	if err := os.Rename(tmp, outDir); err != nil {
		return nil, nil, err
	}
	took := time.Since(start)
	s, err := writeStamp(r.stateDir, id, inputs, list, nil, took)
	if err != nil {
		return nil, nil, err
	}
	r.step(id, false, took)
	return paths, s, nil
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"..."}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
