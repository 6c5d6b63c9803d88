// Package volumes plays EBS for local machines: each volume is a sparse
// file of the volume's size behind a loop device, kept for the whole run
// (so a volume outlives the instance it was attached to, as on EC2), and
// hot-plugged into a running machine as a block device node at the
// attachment's device name, with the machine's devices cgroup allowing it.
package volumes

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Volume is one volume's backing file and loop device.
type Volume struct {
	ID    string
	File  string
	Loop  string // /dev/loopN
	Major uint32
	Minor uint32
}

// Store holds the run's volumes.
type Store struct {
	dir  string
	mu   sync.Mutex
	vols map[string]*Volume
}

// NewStore keeps volume files in dir.
func NewStore(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return &Store{dir: dir, vols: map[string]*Volume{}}, nil
}

// Ensure returns the volume id, creating its sparse file of sizeGiB and
// its loop device on first use.
func (s *Store) Ensure(id string, sizeGiB int32) (*Volume, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.vols[id]; ok {
		return v, nil
	}
	if sizeGiB < 1 {
		sizeGiB = 1
	}
	f := filepath.Join(s.dir, id+".img")
	fh, err := os.OpenFile(f, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("volume %s: %w", id, err)
	}
	err = fh.Truncate(int64(sizeGiB) << 30)
	fh.Close()
	if err != nil {
		return nil, fmt.Errorf("volume %s: sizing %s: %w", id, f, err)
	}
	out, err := exec.Command("losetup", "--find", "--show", f).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("volume %s: losetup --find --show %s: %w: %s", id, f, err, out)
	}
	loop := strings.TrimSpace(string(out))
	var st unix.Stat_t
	if err := unix.Stat(loop, &st); err != nil {
		return nil, fmt.Errorf("volume %s: %w", id, err)
	}
	v := &Volume{ID: id, File: f, Loop: loop, Major: unix.Major(uint64(st.Rdev)), Minor: unix.Minor(uint64(st.Rdev))}
	s.vols[id] = v
	return v, nil
}

// Close detaches every loop device and removes the volume files.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for id, v := range s.vols {
		if out, err := exec.Command("losetup", "--detach", v.Loop).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("volume %s: losetup --detach %s: %w: %s", id, v.Loop, err, out))
		}
		if err := os.Remove(v.File); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		delete(s.vols, id)
	}
	return errors.Join(errs...)
}

// Plug makes v appear in the machine whose init is pid as device (e.g.
// /dev/xvdf): the devices cgroup of the machine (devicesCgroup, and every
// group below it, which systemd made from the rules it had then) allows the
// device, then the node is made in the machine's /dev.
func Plug(pid int, devicesCgroup string, v *Volume, device string) error {
	if !strings.HasPrefix(device, "/dev/") || strings.Contains(device, "..") {
		return fmt.Errorf("volume %s: device name %q is not under /dev/", v.ID, device)
	}
	if devicesCgroup != "" {
		rule := fmt.Sprintf("b %d:%d rwm", v.Major, v.Minor)
		err := filepath.Walk(devicesCgroup, func(p string, info os.FileInfo, err error) error {
			if err != nil || !info.IsDir() {
				return nil
			}
			// A group that denies everything cannot be opened up from
			// here without its parent's consent; errors on leaves are
			// not fatal, the machine's own group is what counts.
			werr := os.WriteFile(filepath.Join(p, "devices.allow"), []byte(rule), 0o644)
			if p == devicesCgroup {
				return werr
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("volume %s: allowing %s in %s: %w", v.ID, rule, devicesCgroup, err)
		}
	}
	node := fmt.Sprintf("/proc/%d/root%s", pid, device)
	os.Remove(node)
	if err := unix.Mknod(node, unix.S_IFBLK|0o660, int(unix.Mkdev(v.Major, v.Minor))); err != nil {
		return fmt.Errorf("volume %s: making %s in machine (pid %d): %w", v.ID, device, pid, err)
	}
	return nil
}

// Unplug removes device from the machine whose init is pid.
func Unplug(pid int, device string) error {
	err := os.Remove(fmt.Sprintf("/proc/%d/root%s", pid, device))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
