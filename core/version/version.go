// Package version says which kube-aws this is: the semantic version its
// module is tagged with (which is also the version of the plugin SDK,
// plugins/sdk, that plugin authors require), the git commit it was built
// from, and the plugin protocol version it speaks. docs/design.md says how
// the version is set and why.
package version

// Module is the Go module of kube-aws, the one a plugin's go.mod requires to
// use the SDK (github.com/kube-aws/kube-aws/plugins/sdk).
const Module = "github.com/kube-aws/kube-aws"

// Release is the semantic version of this source tree, without the v: the
// module is tagged v<Release> at the commit that sets it, so a plugin built
// for this kube-aws requires Module at SDKVersion. The release commit bumps
// it; TestReleaseIsTheDocumentedSDKVersion keeps docs/plugins.md in step.
const Release = "0.1.0"

// SDKVersion is the module version a plugin's go.mod requires: "v" + Release.
const SDKVersion = "v" + Release

// Commit is the git commit kube-aws was built from, with ".dirty" when the
// work tree had changes: `make build` sets it with
// -ldflags "-X github.com/kube-aws/kube-aws/core/version.Commit=<sha>".
// It is empty for a plain `go build`.
var Commit = ""

// Version is Release with Commit as semantic-version build metadata
// (0.1.0+cfc6527), or Release alone when the commit is not known. Built-in
// plugins report it as their version, and kube-aws tells it to plugins.
var Version = withCommit(Release, Commit)

// ProtocolVersion is the newest plugin protocol version this build speaks.
const ProtocolVersion = 1

// withCommit appends the commit as build metadata (semver.org, item 10).
func withCommit(release, commit string) string {
	if commit == "" {
		return release
	}
	return release + "+" + commit
}
