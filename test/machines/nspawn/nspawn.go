// Package nspawn boots one local machine: an overlay on the shared root
// filesystem, files written into it (the cloud-init seed, machine-id,
// resolver), and systemd-nspawn started inside the run's network namespace
// in a cgroup subtree of its own. Kill ends it at once (SIGKILL to every
// process, as a terminated instance ends) and removes what it mounted.
package nspawn

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kube-aws/kube-aws/test/machines/cgroups"
)

// Config describes one machine.
type Config struct {
	Name   string // machine name (the instance id)
	Lower  string // the shared root filesystem, read-only
	Dir    string // this machine's folder: overlay upper, work and root
	NetNS  string // the network namespace file nspawn runs in
	Bridge string // the bridge (in NetNS) its interface joins
	// Files are written into the machine's root before it boots (relative
	// paths to content).
	Files map[string][]byte
	// Cgroup is the machine's cgroup, relative to each hierarchy's root.
	Cgroup string
	// Console receives the machine's console output.
	Console io.Writer
	// DiskGiB, when set, gives the machine a disk of its own, as an EC2
	// instance has its root volume: a sparse file of that size with an ext4
	// filesystem, holding the overlay's writes and containerd's state. The
	// kubelet judges disk pressure by the free space of the filesystems
	// of its root and of containerd; without a disk those are the host's,
	// shared by every machine of the run.
	DiskGiB int
}

// Machine is a running machine.
type Machine struct {
	cfg     Config
	cmd     *exec.Cmd
	cg      *cgroups.Group
	Started time.Time
	exited  chan struct{}
	once    sync.Once
	killErr error
}

// Root is the machine's root folder as the host sees it.
func (m *Machine) Root() string { return filepath.Join(m.base(), "root") }

// Upper is the overlay's upper folder: what the machine wrote, readable
// after the machine is killed, until Remove (its journal is there).
func (m *Machine) Upper() string { return filepath.Join(m.base(), "upper") }

// base is the folder of the machine's writable state: its disk's mount
// point, or its folder.
func (m *Machine) base() string {
	if m.cfg.DiskGiB > 0 {
		return filepath.Join(m.cfg.Dir, "disk")
	}
	return m.cfg.Dir
}

// DiskImage is the sparse file behind the machine's disk, or "" when it
// has none.
func (m *Machine) DiskImage() string {
	if m.cfg.DiskGiB <= 0 {
		return ""
	}
	return filepath.Join(m.cfg.Dir, "disk.img")
}

// Remove unmounts the machine's disk and removes its folder, as a
// terminated instance's root volume goes with it. Call after Kill.
func (m *Machine) Remove() error {
	var err error
	if m.cfg.DiskGiB > 0 {
		err = unmount(m.base())
	}
	return errors.Join(err, os.RemoveAll(m.cfg.Dir))
}

// Cgroup returns the machine's cgroup.
func (m *Machine) Cgroup() *cgroups.Group { return m.cg }

// Exited is closed when systemd-nspawn has exited.
func (m *Machine) Exited() <-chan struct{} { return m.exited }

// Start mounts the machine's root and boots it.
func Start(cfg Config) (m *Machine, err error) {
	if _, err := exec.LookPath("systemd-nspawn"); err != nil {
		return nil, errors.New("systemd-nspawn is not installed: run `apt-get install systemd-container` (make e2e-cluster does)")
	}
	m = &Machine{cfg: cfg, exited: make(chan struct{})}
	if cfg.DiskGiB > 0 {
		if err := makeDisk(cfg.Dir, m.base(), cfg.DiskGiB); err != nil {
			return nil, fmt.Errorf("the disk of %s: %w", cfg.Name, err)
		}
	}
	upper, work, root := m.Upper(), filepath.Join(m.base(), "work"), m.Root()
	// An EC2 instance's root is a block device with a real filesystem, and
	// containerd's overlayfs snapshotter needs one: an overlay's upper layer
	// cannot be on an overlay (the machine's root here). So containerd's
	// state lives in a folder of the machine's disk (or of the host's
	// filesystem), bound in.
	runtime := filepath.Join(m.base(), "containerd")
	for _, d := range []string{upper, work, root, runtime} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			close(m.exited)
			m.cleanup()
			m.Remove()
		}
	}()
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", cfg.Lower, upper, work)
	if err := unix.Mount("overlay", root, "overlay", 0, opts); err != nil {
		return m, fmt.Errorf("mounting the overlay of %s on %s: %w", cfg.Name, root, err)
	}
	for p, b := range cfg.Files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return m, err
		}
		os.Remove(full) // a symlink in the image (resolv.conf) is replaced, not followed
		if err := os.WriteFile(full, b, 0o644); err != nil {
			return m, fmt.Errorf("writing %s into %s: %w", p, cfg.Name, err)
		}
	}
	m.cg, err = cgroups.Create(cfg.Cgroup)
	if err != nil {
		return m, err
	}
	// The shell moves itself into the machine's cgroup in every hierarchy
	// before it becomes nsenter and then systemd-nspawn, so that nspawn
	// and everything the machine starts are in it from the first
	// instruction.
	script := `for f in ` + strings.Join(m.cg.ProcsFiles(), " ") + `; do echo $$ > "$f" || exit 1; done; exec "$@"`
	args := []string{"-c", script, "sh", "nsenter", "--net=" + cfg.NetNS, "--",
		"systemd-nspawn", "--boot", "--register=no", "--keep-unit", "--quiet",
		"-M", cfg.Name, "-D", root,
		"--capability=all", "--system-call-filter=@keyring bpf",
		"--bind=/dev/kmsg", "--bind=" + runtime + ":/var/lib/containerd", "--console=read-only", "--resolv-conf=off", "--timezone=off",
		"--network-bridge=" + cfg.Bridge}
	m.cmd = exec.Command("/bin/sh", args...)
	m.cmd.Stdout, m.cmd.Stderr = cfg.Console, cfg.Console
	// Its own process group: a Ctrl-C at the terminal reaches the test,
	// which kills machines in order, not nspawn directly.
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	m.Started = time.Now()
	if err := m.cmd.Start(); err != nil {
		return m, fmt.Errorf("starting systemd-nspawn for %s: %w", cfg.Name, err)
	}
	go func() { _ = m.cmd.Wait(); close(m.exited) }()
	return m, nil
}

// makeDisk makes a sparse file of size GiB under dir with an ext4
// filesystem (no reserved blocks, tables initialised lazily: a second's
// work) and mounts it on mnt through a loop device that goes with the
// unmount.
func makeDisk(dir, mnt string, gib int) error {
	if err := os.MkdirAll(mnt, 0o755); err != nil {
		return err
	}
	img := filepath.Join(dir, "disk.img")
	f, err := os.Create(img)
	if err != nil {
		return err
	}
	err = f.Truncate(int64(gib) << 30)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=1,lazy_journal_init=1", img).CombinedOutput(); err != nil {
		return fmt.Errorf("mkfs.ext4: %v: %s", err, strings.TrimSpace(string(out)))
	}
	// discard: what the machine deletes (an image archive once imported,
	// containerd's ingest files) is punched out of the sparse file at once,
	// so the host's disk holds what the machine holds now, not the most it
	// ever wrote.
	if out, err := exec.Command("mount", "-o", "loop,discard", img, mnt).CombinedOutput(); err != nil {
		return fmt.Errorf("mounting %s: %v: %s", img, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Leader returns the PID of the machine's init (nspawn's child), waiting up
// to timeout for it to exist.
func (m *Machine) Leader(timeout time.Duration) (int, error) {
	deadline := time.Now().Add(timeout)
	for {
		if m.cmd != nil && m.cmd.Process != nil {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%d/children", m.cmd.Process.Pid, m.cmd.Process.Pid))
			if err == nil {
				for _, f := range strings.Fields(string(b)) {
					if pid, err := strconv.Atoi(f); err == nil && comm(pid) == "systemd" {
						return pid, nil
					}
				}
			}
		}
		select {
		case <-m.exited:
			return 0, fmt.Errorf("machine %s has exited", m.cfg.Name)
		default:
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("machine %s: no init process after %v", m.cfg.Name, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

// ShellCommand is the command that gives a developer a shell in a
// running machine.
func (m *Machine) ShellCommand() (string, error) {
	pid, err := m.Leader(time.Second)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("nsenter --target %d --all -- /bin/bash -l", pid), nil
}

// Exec returns a command that runs inside the running machine (all its
// namespaces), as root.
func (m *Machine) Exec(name string, args ...string) (*exec.Cmd, error) {
	pid, err := m.Leader(5 * time.Second)
	if err != nil {
		return nil, err
	}
	return exec.Command("nsenter", append([]string{"--target", strconv.Itoa(pid), "--all", "--", name}, args...)...), nil
}

// Kill ends the machine at once: SIGKILL to every process in its cgroup
// (a graceful stop can hang for minutes on a unit), then unmounts its root
// and removes its cgroup. Safe to call more than once.
func (m *Machine) Kill() error {
	m.once.Do(func() {
		var errs []error
		if m.cg != nil {
			errs = append(errs, m.cg.Kill(10*time.Second))
		}
		if m.cmd != nil && m.cmd.Process != nil {
			_ = m.cmd.Process.Kill()
		}
		select {
		case <-m.exited:
		case <-time.After(10 * time.Second):
			errs = append(errs, fmt.Errorf("systemd-nspawn of %s did not exit 10s after SIGKILL", m.cfg.Name))
		}
		errs = append(errs, m.cleanup())
		m.killErr = errors.Join(errs...)
	})
	return m.killErr
}

func (m *Machine) cleanup() error {
	var errs []error
	if err := unmount(m.Root()); err != nil {
		errs = append(errs, err)
	}
	if m.cg != nil {
		errs = append(errs, m.cg.Remove(10*time.Second))
	}
	return errors.Join(errs...)
}

// unmount unmounts root and anything still mounted below it (nspawn's own
// mounts live in the machine's mount namespace, gone with it; this is for
// a machine that never got that far).
func unmount(root string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := unix.Unmount(root, 0)
		if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
			return nil
		}
		if time.Now().After(deadline) {
			// Last resort: detach, so the run can go on; the mount goes
			// when its last user does.
			if err2 := unix.Unmount(root, unix.MNT_DETACH); err2 == nil {
				return nil
			}
			return fmt.Errorf("unmounting %s: %w", root, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
