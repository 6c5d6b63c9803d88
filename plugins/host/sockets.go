package host

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	plugin "github.com/hashicorp/go-plugin"
)

// Each plugin creates its go-plugin socket in a folder of its own that kube-aws
// removes when the plugin ends. A plugin killed by a signal (a stage timeout,
// a crash) cannot remove its socket itself, and a shared /tmp would collect
// them; a small private folder is also quicker to create files in than a busy
// /tmp. The folders live under one base folder per kube-aws process, removed
// when its last plugin ends.
var sockets struct {
	sync.Mutex
	base  string
	users int
	seq   int
}

// socketDir returns a new socket folder for one plugin; release removes it.
func socketDir(name string) (dir string, release func(), err error) {
	sockets.Lock()
	defer sockets.Unlock()
	if sockets.base == "" {
		base, err := os.MkdirTemp("", "kube-aws-plugins-")
		if err != nil {
			return "", nil, fmt.Errorf("creating a folder for plugin sockets: %w", err)
		}
		sockets.base = base
	}
	sockets.seq++
	dir = filepath.Join(sockets.base, fmt.Sprintf("%s-%d", name, sockets.seq))
	if err := os.Mkdir(dir, 0o700); err != nil {
		return "", nil, fmt.Errorf("creating a folder for plugin sockets: %w", err)
	}
	sockets.users++
	var once sync.Once
	release = func() {
		once.Do(func() {
			_ = os.RemoveAll(dir)
			sockets.Lock()
			defer sockets.Unlock()
			sockets.users--
			if sockets.users == 0 && sockets.base != "" {
				_ = os.Remove(sockets.base)
				sockets.base = ""
			}
		})
	}
	return dir, release, nil
}

// socketEnv points go-plugin inside the plugin at its socket folder.
func socketEnv(dir string) string { return plugin.EnvUnixSocketDir + "=" + dir }
