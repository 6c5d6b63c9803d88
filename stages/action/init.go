package action

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/names"
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
	if err := gitIgnoreCredentials(dir); err != nil {
		return &stages.Error{Code: stages.ExitFatal, Msg: fmt.Sprintf("wrote %s, but %v; add %s/ to it yourself: it holds the secrets plugins generate", path, err, names.CredentialsDir)}
	}
	return nil
}

// gitIgnoreCredentials makes the cluster folder's .gitignore name the
// folder of generated secrets (appending to one that does not yet), so a
// cluster folder committed to git never holds a CA key.
func gitIgnoreCredentials(dir string) error {
	p := filepath.Join(dir, ".gitignore")
	line := "/" + names.CredentialsDir + "/"
	b, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("reading %s: %w", p, err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l == line || l == names.CredentialsDir+"/" || l == names.CredentialsDir || l == "/"+names.CredentialsDir {
			return nil
		}
	}
	add := "# secrets kube-aws keeps for plugins (CA keys, tokens): never commit them\n" + line + "\n"
	if len(b) > 0 && b[len(b)-1] != '\n' {
		add = "\n" + add
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	if _, err := f.WriteString(add); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", p, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", p, err)
	}
	return nil
}
