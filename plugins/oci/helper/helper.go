// Package helper is how kube-aws asks its kube-aws-oci helper to install or
// push plugins: the request and result types, and Run, which starts the
// helper and exchanges them (internal/helperproc).
//
// The registry client (oras-go) and the signature checks (sigstore) cost
// every process that links them several milliseconds of package init
// (docs/design.md), so they live in the helper (package plugins/oci) and
// kube-aws itself links only this package, which uses the standard library.
// A render whose plugins are all in the cache never starts the helper.
package helper

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kube-aws/kube-aws/internal/helperproc"
)

// Operations.
const (
	OpInstall = "install"
	OpPush    = "push"
)

// Request is what kube-aws sends the helper on its stdin.
type Request struct {
	Op string `json:"op"`
	// CacheDir is the plugin cache's root (plugins/oci/cache).
	CacheDir string `json:"cacheDir"`
	// Platform is the os/arch to install for (the host's).
	Platform string `json:"platform"`
	// ProtocolVersions are the plugin protocol versions kube-aws speaks:
	// an artifact that speaks none of them is refused before download.
	ProtocolVersions []int            `json:"protocolVersions"`
	Install          []InstallRequest `json:"install,omitempty"`
	Push             *PushRequest     `json:"push,omitempty"`
}

// InstallRequest is one plugin to make available in the cache.
type InstallRequest struct {
	// Name is the plugin's name in cluster.yaml; the artifact's info must
	// carry the same name.
	Name string `json:"name"`
	// Source is plugins.NAME.source, oci://....
	Source string `json:"source"`
	// Pinned is the digest plugins.lock pins: that digest is fetched,
	// whatever the tag says now. Empty resolves Source.
	Pinned string `json:"pinned,omitempty"`
	// CheckTag, with Pinned, also resolves the tag and reports in
	// Installed.MovedTo when it points elsewhere now.
	CheckTag bool `json:"checkTag,omitempty"`
	// KeyFile is plugins.NAME.verify.key, absolute: the artifact must
	// carry a cosign signature that verifies with it.
	KeyFile string `json:"keyFile,omitempty"`
	// Recheck hashes an existing cache entry and downloads it again when
	// a file differs (kube-aws saw it changed on disk).
	Recheck bool `json:"recheck,omitempty"`
}

// Installed is the outcome for one plugin.
type Installed struct {
	Name   string `json:"name"`
	Source string `json:"source"`
	// Digest is what the source resolved to (the image index).
	Digest  string `json:"digest,omitempty"`
	Version string `json:"version,omitempty"`
	// Key is the fingerprint of the key that verified the signature.
	Key string `json:"key,omitempty"`
	// Platforms are the hashes of every platform's files.
	Platforms map[string]Platform `json:"platforms,omitempty"`
	// Dir is the cache entry for the requested platform.
	Dir string `json:"dir,omitempty"`
	// Downloaded says whether the entry was (re)downloaded, or was in
	// the cache already.
	Downloaded bool `json:"downloaded,omitempty"`
	// Repaired says the cache entry had been changed on disk and was
	// downloaded again.
	Repaired string `json:"repaired,omitempty"`
	// MovedTo is where the tag points now, when CheckTag found it moved.
	MovedTo *Moved `json:"movedTo,omitempty"`
	// Error says why this plugin could not be installed.
	Error string `json:"error,omitempty"`
}

// Moved is a tag's new target.
type Moved struct {
	Digest  string `json:"digest"`
	Version string `json:"version"`
}

// Platform is one platform's manifest and file hashes, as plugins.lock
// records them.
type Platform struct {
	Manifest string `json:"manifest"`
	// SHA256 is the executable's (hex).
	SHA256 string `json:"sha256"`
	// Files are the other files' sha256 (hex), by slash path.
	Files map[string]string `json:"files,omitempty"`
}

// PushRequest packages a plugin folder and pushes it.
type PushRequest struct {
	Dir    string `json:"dir"`
	Target string `json:"target"`
	// Platforms, for a folder without per-platform subfolders (default:
	// the host's).
	Platforms []string `json:"platforms,omitempty"`
	// Created is the creation time written into the artifact (RFC 3339);
	// empty means now, or SOURCE_DATE_EPOCH when set.
	Created string `json:"created,omitempty"`
}

// PushResult says what was pushed.
type PushResult struct {
	Name      string   `json:"name"`
	Version   string   `json:"version"`
	Target    string   `json:"target"`
	Digest    string   `json:"digest"`
	Platforms []string `json:"platforms"`
	// Repository is REGISTRY/REPOSITORY, for `cosign sign`.
	Repository string `json:"repository"`
}

// Result is the helper's answer.
type Result struct {
	Installed []Installed `json:"installed,omitempty"`
	Pushed    *PushResult `json:"pushed,omitempty"`
}

// EnvPath overrides where the helper is.
const EnvPath = "KUBE_AWS_OCI"

// Path finds the helper: $KUBE_AWS_OCI, else
// kube-aws-plugins/libexec/kube-aws-oci beside the kube-aws executable,
// where `make build` puts it.
func Path() (string, error) {
	if p := os.Getenv(EnvPath); p != "" {
		return p, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the kube-aws-oci helper: %w; set %s to its path", err, EnvPath)
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	p := filepath.Join(filepath.Dir(exe), "kube-aws-plugins", "libexec", "kube-aws-oci")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("the kube-aws-oci helper, which installs plugins from registries, is not at %s: run `make build`, or set %s to its path", p, EnvPath)
	}
	return p, nil
}

// Run sends req to the helper and returns its result. progress receives
// the helper's log lines (may be nil).
func Run(ctx context.Context, req Request, progress func(string)) (*Result, error) {
	path, err := Path()
	if err != nil {
		return nil, err
	}
	var res Result
	if err := helperproc.Run(ctx, path, req, &res, progress, helperproc.Options{}); err != nil {
		return nil, err
	}
	return &res, nil
}
