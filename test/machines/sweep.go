package machines

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kube-aws/kube-aws/test/machines/cgroups"
)

// ownerFile holds the pid and start time of the process that runs a run;
// a run whose owner is gone was killed without a teardown (SIGKILL).
const ownerFile = "owner"

func writeOwner(dir string) error {
	pid := os.Getpid()
	return os.WriteFile(filepath.Join(dir, ownerFile), []byte(fmt.Sprintf("%d %s\n", pid, procStart(pid))), 0o644)
}

// procStart is field 22 of /proc/PID/stat ("" when gone or a zombie).
func procStart(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 20 || f[0] == "Z" {
		return ""
	}
	return f[19]
}

// adoptedFile lists processes a run does not own but must not outlive
// (moto, which the test started), one "pid start" a line.
const adoptedFile = "adopted"

// Adopt makes a sweep after this run was killed also kill process pid
// (the moto the test started for it).
func (h *Harness) Adopt(pid int) error {
	f, err := os.OpenFile(filepath.Join(h.Dir, adoptedFile), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = fmt.Fprintf(f, "%d %s\n", pid, procStart(pid))
	return err
}

// killAdopted kills the adopted processes of run folder dir that still run.
func killAdopted(dir string) {
	b, _ := os.ReadFile(filepath.Join(dir, adoptedFile))
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) != 2 {
			continue
		}
		if pid, err := strconv.Atoi(f[0]); err == nil && procStart(pid) == f[1] {
			// moto runs in its own process group.
			_ = unix.Kill(-pid, unix.SIGKILL)
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
}

// ownerAlive says whether the process that made run folder dir still runs.
func ownerAlive(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, ownerFile))
	if err != nil {
		// No owner file: a run being set up right now, or a folder
		// holding only kept logs.
		return true
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return false
	}
	pid, err := strconv.Atoi(f[0])
	return err == nil && procStart(pid) == f[1]
}

// SweepStale tears down what runs under workDir left when their process
// was killed without a chance to clean up (SIGKILL, a crash): machines,
// mounts, loop devices, cgroups, network namespaces. Their logs are kept.
// Start calls it, so the next run cleans up after a killed one; it returns
// the runs it swept.
func SweepStale(workDir string) ([]string, error) {
	runs, _ := filepath.Glob(filepath.Join(workDir, "run-*"))
	var swept []string
	var errs []error
	for _, dir := range runs {
		if ownerAlive(dir) {
			continue
		}
		id := filepath.Base(dir)
		killAdopted(dir)
		if g, err := cgroups.Open(CgroupRoot + "/" + id); err == nil {
			errs = append(errs, g.Kill(10*time.Second), g.Remove(10*time.Second))
		}
		errs = append(errs, unmountUnder(dir), detachLoopsUnder(dir))
		cgroups.RemoveEmptyParents(CgroupRoot + "/" + id)
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.Name() != "logs" {
				errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
			}
		}
		swept = append(swept, id)
	}
	return swept, errors.Join(errs...)
}

// unmountUnder unmounts every mount point under dir, deepest first.
func unmountUnder(dir string) error {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	defer f.Close()
	var points []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		fl := strings.Fields(s.Text())
		if len(fl) > 4 && strings.HasPrefix(fl[4], dir+"/") {
			points = append(points, fl[4])
		}
	}
	sort.Sort(sort.Reverse(sort.StringSlice(points)))
	var errs []error
	for _, p := range points {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("unmounting %s: %w", p, err))
		}
	}
	return errors.Join(errs...)
}

// detachLoopsUnder detaches every loop device backed by a file under dir.
func detachLoopsUnder(dir string) error {
	out, err := exec.Command("losetup", "--list", "--noheadings", "--output", "NAME,BACK-FILE").Output()
	if err != nil {
		return fmt.Errorf("losetup --list: %w", err)
	}
	var errs []error
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) >= 2 && strings.HasPrefix(f[1], dir+"/") {
			if b, err := exec.Command("losetup", "--detach", f[0]).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("losetup --detach %s: %w: %s", f[0], err, b))
			}
		}
	}
	return errors.Join(errs...)
}
