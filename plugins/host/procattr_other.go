//go:build !linux

package host

import "syscall"

// sysProcAttr: only Linux has Pdeathsig; elsewhere the SDK's parent polling
// ends orphaned plugins.
func sysProcAttr() *syscall.SysProcAttr { return nil }
