//go:build linux

package host

import "syscall"

// sysProcAttr makes Linux SIGKILL a plugin the moment kube-aws dies, however
// it dies (a SIGKILL of kube-aws included), so no plugin outlives it. The SDK
// also polls its parent, for the rare case where the forking thread exits
// first and for other systems.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
