//go:build linux

package host

import "syscall"

// sysProcAttr makes Linux SIGKILL a plugin the moment kube-aws dies, however
// it dies (a SIGKILL of kube-aws included), so no plugin outlives it. The SDK
// also polls its parent, for other systems and for the rare case where the
// forking OS thread exits before kube-aws does (Pdeathsig follows the thread,
// and the Go runtime only ends threads that a goroutine left locked).
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
