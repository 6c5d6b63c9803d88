package source

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Folders are the folders Discover looks in. Built-in and contrib folders
// hold executables named after their plugin directly (builtin/<name>); user
// folders hold one folder per plugin with an executable of the same name
// (plugins/<name>/<name>), so a user plugin can ship files beside it.
type Folders struct {
	BuiltinDir string
	ContribDir string
	UserDirs   []string
}

// DefaultFolders returns where kube-aws looks for plugins:
// $KUBE_AWS_BUILTIN_DIR and $KUBE_AWS_CONTRIB_DIR, else
// <dir of the kube-aws executable>/kube-aws-plugins/{builtin,contrib} (where
// `make build` puts them); and <clusterDir>/plugins plus every plugin dir.
func DefaultFolders(clusterDir string, pluginDirs []string) Folders {
	var exeDir string
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		exeDir = filepath.Dir(exe)
	}
	dir := func(env, sub string) string {
		if v := os.Getenv(env); v != "" {
			return v
		}
		if exeDir == "" {
			return ""
		}
		return filepath.Join(exeDir, "kube-aws-plugins", sub)
	}
	src := Folders{
		BuiltinDir: dir("KUBE_AWS_BUILTIN_DIR", "builtin"),
		ContribDir: dir("KUBE_AWS_CONTRIB_DIR", "contrib"),
	}
	if clusterDir != "" {
		src.UserDirs = append(src.UserDirs, filepath.Join(clusterDir, "plugins"))
	}
	src.UserDirs = append(src.UserDirs, pluginDirs...)
	return src
}

// Discover lists the plugins in the folders, built-ins first, then contrib, then user
// plugins, each group sorted by name. Missing folders are fine. A plugin that
// cannot be started (a user plugin folder without its executable, as before
// its first build; a file that is not executable; a file where a user plugin
// folder belongs) is returned with its Problem set, since only an enabled
// plugin needs to start; such a candidate is dropped when another source has
// a startable plugin of its name. The error reports, all at once, a name
// found twice (naming both paths, because picking one silently would run the
// wrong code) and folders that cannot be read. On error the candidates that
// were found are returned too, so a listing can still show them.
func Discover(src Folders) ([]Candidate, error) {
	var (
		cands []Candidate
		errs  []error
	)
	flat := func(dir string, source Kind) {
		if dir == "" {
			return
		}
		dir = absClean(dir)
		entries, err := os.ReadDir(dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("reading %s plugin folder %s: %w", source, dir, err))
			}
			return
		}
		for _, e := range entries {
			if ignored(e.Name()) {
				continue
			}
			path := filepath.Join(dir, e.Name())
			c := Candidate{Name: e.Name(), Path: path, Dir: dir, Source: source}
			fi, err := os.Stat(path)
			if err != nil {
				c.Problem = fmt.Sprintf("%s plugin %s: %v", source, path, err)
			} else if fi.IsDir() {
				continue
			} else {
				c.Problem = notExecutable(path, fi)
			}
			cands = append(cands, c)
		}
	}
	flat(src.BuiltinDir, Builtin)
	flat(src.ContribDir, Contrib)

	seenDirs := map[string]bool{}
	for _, dir := range src.UserDirs {
		if dir == "" {
			continue
		}
		dir = absClean(dir)
		if seenDirs[dir] {
			continue // the same folder given twice is not a duplicate plugin
		}
		seenDirs[dir] = true
		entries, err := os.ReadDir(dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("reading plugin folder %s: %w", dir, err))
			}
			continue
		}
		for _, e := range entries {
			if ignored(e.Name()) {
				continue
			}
			pdir := filepath.Join(dir, e.Name())
			path := filepath.Join(pdir, e.Name())
			cands = append(cands, Candidate{Name: e.Name(), Path: path, Dir: pdir, Source: User, Problem: userProblem(pdir, path)})
		}
	}

	// Sort within each source; sources keep their order.
	rank := map[Kind]int{Builtin: 0, Contrib: 1, User: 2}
	sort.SliceStable(cands, func(i, j int) bool {
		if rank[cands[i].Source] != rank[cands[j].Source] {
			return rank[cands[i].Source] < rank[cands[j].Source]
		}
		return cands[i].Name < cands[j].Name
	})
	startable := map[string]Candidate{}
	for _, c := range cands {
		if c.Problem != "" {
			continue
		}
		if prev, ok := startable[c.Name]; ok {
			errs = append(errs, fmt.Errorf("plugin %s is found twice: %s (%s) and %s (%s); remove or rename one of them",
				c.Name, prev.Path, prev.Source, c.Path, c.Source))
			continue
		}
		startable[c.Name] = c
	}
	out := cands[:0]
	broken := map[string]bool{}
	for _, c := range cands {
		if c.Problem != "" {
			if _, ok := startable[c.Name]; ok || broken[c.Name] {
				continue
			}
			broken[c.Name] = true
		}
		out = append(out, c)
	}
	return out, errors.Join(errs...)
}

// userProblem says why a user plugin folder's executable cannot be
// started, or "".
func userProblem(pdir, path string) string {
	fi, err := os.Stat(pdir)
	if err != nil {
		return fmt.Sprintf("plugin %s: %v", pdir, err)
	}
	if !fi.IsDir() {
		return fmt.Sprintf("%s is a file, but a user plugin is a folder holding an executable of the same name: move it to %s", pdir, path)
	}
	fi, err = os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("plugin folder %s has no executable named %s: build the plugin to %s", pdir, filepath.Base(path), path)
	case err != nil:
		return fmt.Sprintf("plugin %s: %v", path, err)
	case fi.IsDir():
		return fmt.Sprintf("plugin %s is a folder, not an executable", path)
	}
	return notExecutable(path, fi)
}

// ignored skips dot files (.gitkeep, .DS_Store) and the lock file.
func ignored(name string) bool {
	return strings.HasPrefix(name, ".")
}

// notExecutable says why a plugin file cannot be run, or "".
func notExecutable(path string, fi fs.FileInfo) string {
	if fi.Mode()&0o111 == 0 {
		return fmt.Sprintf("plugin %s is not executable: run `chmod +x %s`, or remove it if it is not a plugin", path, path)
	}
	return ""
}

func absClean(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return filepath.Clean(p)
}
