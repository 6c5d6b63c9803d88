//go:build !(linux || darwin || freebsd || openbsd || netbsd || dragonfly)

package host

// UseRunDir does nothing here: go-plugin speaks TCP, not Unix sockets, on
// Windows, and the systems without flock keep the default temp folder.
func UseRunDir() (release func()) { return func() {} }
