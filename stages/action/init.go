package action

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/stages"
)

// Init writes a commented cluster.yaml from the `kube-aws init` flags to
// path. It refuses to overwrite an existing file (a configuration error, 2)
// and writes the file whole or not at all.
func Init(path string, opts config.InitOptions) error {
	if path == "" {
		path = "cluster.yaml"
	}
	if _, err := os.Lstat(path); err == nil {
		return stages.ConfigError("%s already exists; kube-aws init never overwrites it: edit it, remove it, or pass --config NEW.yaml", path)
	}
	b, err := config.InitTemplate(opts)
	if err != nil {
		e := stages.ConfigError("%v", err)
		var d interface{ Diagnostics() diag.List }
		if errors.As(err, &d) {
			// The diagnostics say what is wrong; the message need not repeat them.
			e.Diagnostics = d.Diagnostics()
			e.Msg = "the flags give an invalid cluster.yaml: fix the flags named above"
		}
		return e
	}
	// Link instead of rename: it fails when the file appeared meanwhile,
	// so a concurrent writer's file is never replaced.
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return &stages.Error{Code: stages.ExitFatal, Msg: fmt.Sprintf("creating %s: %v", dir, err)}
	}
	tmp, err := os.CreateTemp(dir, ".cluster.yaml.tmp-*")
	if err != nil {
		return &stages.Error{Code: stages.ExitFatal, Msg: fmt.Sprintf("writing %s: %v", path, err)}
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return &stages.Error{Code: stages.ExitFatal, Msg: fmt.Sprintf("writing %s: %v", path, err)}
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return &stages.Error{Code: stages.ExitFatal, Msg: fmt.Sprintf("writing %s: %v", path, err)}
	}
	if err := tmp.Close(); err != nil {
		return &stages.Error{Code: stages.ExitFatal, Msg: fmt.Sprintf("writing %s: %v", path, err)}
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return stages.ConfigError("%s already exists; kube-aws init never overwrites it", path)
		}
		return &stages.Error{Code: stages.ExitFatal, Msg: fmt.Sprintf("writing %s: %v", path, err)}
	}
	return nil
}
