// Package localport finds a free TCP port on 127.0.0.1 for the servers that
// tests start (moto, the OCI registry).
package localport

import "net"

// Free asks the kernel for a port on 127.0.0.1 that nothing listens on.
// Another process may take it before the caller binds it: callers that
// start a server on it retry or fail clearly.
func Free() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
