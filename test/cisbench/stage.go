package cisbench

import (
	_ "embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// paths tells kube-bench where kube-aws keeps the files its checks read,
// where they are not among the places it looks by default. It only adds
// paths: no check's test or remediation changes.
//
//go:embed paths.yaml
var paths []byte

// Stage writes into dir (a folder of a machine's filesystem, seen from the
// host) the executables kube-bench, kubectl and jq, and kube-bench's checks
// in cfg/, with paths.yaml appended to the benchmark's own config.yaml,
// which kube-bench merges over cfg/config.yaml.
func (t *Tools) Stage(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, src := range map[string]string{"kube-bench": t.KubeBench, "kubectl": t.Kubectl, "jq": t.JQ} {
		if err := copyFile(src, filepath.Join(dir, name), 0o755); err != nil {
			return err
		}
	}
	cfg := filepath.Join(dir, "cfg")
	if err := os.RemoveAll(cfg); err != nil {
		return err
	}
	if err := copyTree(t.Config, cfg); err != nil {
		return err
	}
	return appendPaths(filepath.Join(cfg, Benchmark, "config.yaml"))
}

// appendPaths adds paths.yaml to a benchmark's config.yaml (kube-bench's
// own holds only comments; a key it already had would make the YAML
// invalid, which kube-bench reports).
func appendPaths(file string) error {
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	b = append(b, "\n# kube-aws's paths (test/cisbench/paths.yaml)\n"...)
	b = append(b, paths...)
	return os.WriteFile(file, b, 0o644)
}

// copyTree copies the regular files and folders under src (the module
// cache's read-only copy) into dst, writable.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(out, 0o755)
		case d.Type().IsRegular():
			return copyFile(p, out, 0o644)
		default:
			return fmt.Errorf("%s: kube-bench's checks hold only files and folders", p)
		}
	})
}

func copyFile(src, dst string, mode os.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	return os.Chmod(dst, mode)
}
