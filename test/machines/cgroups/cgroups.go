// Package cgroups gives each local machine a cgroup subtree of its own in
// every cgroup hierarchy of the host, and removes it again. The host's PID 1
// is not systemd, so nothing else would: a machine (and the kubelet's
// kubepods tree inside it) must not share cgroups with the test process or
// with other machines, and every process in it must be killable at once.
package cgroups

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Hierarchies returns the mount points of every cgroup hierarchy (v1
// controllers, named hierarchies and the v2 unified one).
func Hierarchies() ([]string, error) {
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fl := strings.Fields(s.Text())
		if len(fl) >= 3 && (fl[2] == "cgroup" || fl[2] == "cgroup2") {
			out = append(out, fl[1])
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no cgroup hierarchy is mounted")
	}
	return out, s.Err()
}

// Group is one relative cgroup path, present in every hierarchy.
type Group struct {
	Rel   string
	roots []string
}

// Create makes the cgroup rel (e.g. "kube-aws-e2e/run/i-1") in every
// hierarchy, with cpuset.cpus and cpuset.mems copied from the parent at
// each new level (a new cpuset group is empty and takes no process).
func Create(rel string) (*Group, error) {
	roots, err := Hierarchies()
	if err != nil {
		return nil, err
	}
	g := &Group{Rel: rel, roots: roots}
	for _, r := range roots {
		dir := r
		for _, part := range strings.Split(rel, "/") {
			parent := dir
			dir = filepath.Join(dir, part)
			if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return g, fmt.Errorf("creating cgroup %s: %w", dir, err)
			}
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				if b, err := os.ReadFile(filepath.Join(parent, f)); err == nil {
					cur, _ := os.ReadFile(filepath.Join(dir, f))
					if strings.TrimSpace(string(cur)) == "" {
						if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
							return g, fmt.Errorf("copying %s to %s: %w", f, dir, err)
						}
					}
				}
			}
		}
	}
	return g, nil
}

// ProcsFiles lists the cgroup.procs file of the group in every hierarchy:
// a process that writes its PID to each is wholly in the group.
func (g *Group) ProcsFiles() []string {
	var out []string
	for _, r := range g.roots {
		out = append(out, filepath.Join(r, g.Rel, "cgroup.procs"))
	}
	return out
}

// Dir returns the group's folder in the hierarchy mounted at a path ending
// in name (e.g. "devices"), or "".
func (g *Group) Dir(name string) string {
	for _, r := range g.roots {
		if filepath.Base(r) == name {
			return filepath.Join(r, g.Rel)
		}
	}
	return ""
}

// PIDs returns every process in the group and its descendants.
func (g *Group) PIDs() []int {
	seen := map[int]bool{}
	for _, r := range g.roots {
		_ = filepath.Walk(filepath.Join(r, g.Rel), func(p string, info os.FileInfo, err error) error {
			if err != nil || !info.IsDir() {
				return nil
			}
			b, _ := os.ReadFile(filepath.Join(p, "cgroup.procs"))
			for _, l := range strings.Fields(string(b)) {
				if n, err := strconv.Atoi(l); err == nil {
					seen[n] = true
				}
			}
			return nil
		})
	}
	out := make([]int, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Ints(out)
	return out
}

// Kill sends SIGKILL to every process in the group until none is left (a
// process may fork while it is being killed), for at most timeout.
func (g *Group) Kill(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		pids := g.PIDs()
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s: processes %v still alive after %v", g.Rel, pids, timeout)
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Remove removes the group and every group below it, deepest first, in
// every hierarchy. The group must be empty (Kill first); a cgroup whose last
// process just died can refuse removal for a moment, so it retries.
func (g *Group) Remove(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var left []string
		for _, r := range g.roots {
			var dirs []string
			_ = filepath.Walk(filepath.Join(r, g.Rel), func(p string, info os.FileInfo, err error) error {
				if err == nil && info.IsDir() {
					dirs = append(dirs, p)
				}
				return nil
			})
			for i := len(dirs) - 1; i >= 0; i-- {
				if err := os.Remove(dirs[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
					left = append(left, dirs[i])
				}
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroups not removed after %v: %v", timeout, left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// RemoveEmptyParents removes rel's folders up to (not including) the
// hierarchy roots when they are empty, so a finished run leaves no
// "kube-aws-e2e" folder behind once its last group is gone.
func RemoveEmptyParents(rel string) {
	roots, err := Hierarchies()
	if err != nil {
		return
	}
	for _, r := range roots {
		for d := rel; d != "." && d != "/" && d != ""; d = filepath.Dir(d) {
			if os.Remove(filepath.Join(r, d)) != nil {
				break
			}
		}
	}
}

// Open returns the group rel in every hierarchy without creating it (to
// kill and remove what a dead run left).
func Open(rel string) (*Group, error) {
	roots, err := Hierarchies()
	if err != nil {
		return nil, err
	}
	return &Group{Rel: rel, roots: roots}, nil
}

// CPUTime is the CPU time the group's processes, and its descendants',
// have used so far: cpuacct.usage in a cgroup v1 host, cpu.stat's
// usage_usec in a v2 one. It tells how much of the host a machine took to
// boot, which its wall times alone cannot when machines share the cores.
func (g *Group) CPUTime() (time.Duration, error) {
	for _, r := range g.roots {
		dir := filepath.Join(r, g.Rel)
		if b, err := os.ReadFile(filepath.Join(dir, "cpuacct.usage")); err == nil {
			ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s/cpuacct.usage: %w", dir, err)
			}
			return time.Duration(ns), nil
		}
		if b, err := os.ReadFile(filepath.Join(dir, "cpu.stat")); err == nil {
			for _, l := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(l, "usage_usec "); ok {
					us, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
					if err != nil {
						return 0, fmt.Errorf("%s/cpu.stat: %w", dir, err)
					}
					return time.Duration(us) * time.Microsecond, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("cgroup %s: no hierarchy accounts its CPU time (cpuacct.usage or cpu.stat)", g.Rel)
}
