// Package netns makes the network namespace a test run's machines live in,
// and lets the test process serve and dial inside it.
//
// A namespace is kept alive by a bind mount of its nsfs file on a plain file
// (what `unshare --net=FILE` and `ip netns add` do), so it needs no process
// of its own. Go code enters it on a locked OS thread: a socket belongs to
// the namespace it was created in, so a listener made there keeps serving
// from any goroutine after the thread goes back. Programs run in it through
// nsenter.
package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// NS is a network namespace pinned on a file.
type NS struct {
	Path string
}

// New makes a new, empty network namespace pinned on path (a file it
// creates). Its loopback is brought up.
func New(path string) (*NS, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return nil, fmt.Errorf("creating the namespace file %s: %w", path, err)
	}
	f.Close()
	err = onNewThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("unshare(CLONE_NEWNET): %w", err)
		}
		self := fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid())
		if err := unix.Mount(self, path, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind-mounting %s on %s: %w", self, path, err)
		}
		return nil
	})
	if err != nil {
		os.Remove(path)
		return nil, err
	}
	ns := &NS{Path: path}
	if out, err := ns.Command("ip", "link", "set", "lo", "up").CombinedOutput(); err != nil {
		ns.Close()
		return nil, fmt.Errorf("bringing up lo in %s: %w: %s", path, err, out)
	}
	return ns, nil
}

// onNewThread runs f on a fresh locked OS thread and restores the thread's
// network namespace afterwards. If it cannot be restored, the thread stays
// locked and Go ends it with the goroutine, so no other goroutine ever runs
// in the wrong namespace.
func onNewThread(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open(fmt.Sprintf("/proc/%d/task/%d/ns/net", os.Getpid(), unix.Gettid()))
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		ferr := f()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("returning to the host namespace: %w", err))
			return // the thread stays locked and dies with this goroutine
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// Do runs f inside the namespace on a locked OS thread. Sockets f creates
// belong to the namespace.
func (n *NS) Do(f func() error) error {
	nsf, err := os.Open(n.Path)
	if err != nil {
		return fmt.Errorf("opening namespace %s: %w", n.Path, err)
	}
	defer nsf.Close()
	return onNewThread(func() error {
		if err := unix.Setns(int(nsf.Fd()), unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("entering namespace %s: %w", n.Path, err)
		}
		return f()
	})
}

// Listen listens on addr inside the namespace.
func (n *NS) Listen(network, addr string) (l net.Listener, err error) {
	err = n.Do(func() error {
		l, err = net.Listen(network, addr)
		return err
	})
	return l, err
}

// ListenPacket listens for packets on addr inside the namespace.
func (n *NS) ListenPacket(network, addr string) (c net.PacketConn, err error) {
	err = n.Do(func() error {
		c, err = net.ListenPacket(network, addr)
		return err
	})
	return c, err
}

// DialContext connects to addr from inside the namespace: how the test
// process reaches machines, load balancers and DNS on the run's network.
func (n *NS) DialContext(ctx context.Context, network, addr string) (c net.Conn, err error) {
	err = n.Do(func() error {
		var d net.Dialer
		c, err = d.DialContext(ctx, network, addr)
		return err
	})
	return c, err
}

// Command returns a command that runs name inside the namespace.
func (n *NS) Command(name string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=" + n.Path, "--", name}, args...)...)
}

// Run runs a command inside the namespace and returns its error with its
// output.
func (n *NS) Run(name string, args ...string) error {
	out, err := n.Command(name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s in %s: %w: %s", name, strings.Join(args, " "), n.Path, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Close unpins the namespace and removes its file. The namespace itself
// goes away when nothing else holds it (sockets, processes in it).
func (n *NS) Close() error {
	var errs []error
	if err := unix.Unmount(n.Path, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		errs = append(errs, fmt.Errorf("unmounting %s: %w", n.Path, err))
	}
	if err := os.Remove(n.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}
