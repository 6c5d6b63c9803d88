// Package version holds the kube-aws version, set at link time by the Makefile.
package version

// Version is overwritten with -ldflags "-X .../core/version.Version=...".
var Version = "dev"

// ProtocolVersion is the newest plugin protocol version this build speaks.
const ProtocolVersion = 1
