// Package helper is how kube-aws asks its kube-aws-oci helper to install or
// push plugins: the request and result types, Run, which starts the helper,
// sends one request on its stdin and reads JSON lines back (progress lines,
// then one result or one error), and Serve, the helper's side of that.
//
// The registry client (oras-go) and the signature checks (sigstore) cost
// every process that links them several milliseconds of package init
// (docs/design.md), so they live in the helper (package plugins/oci) and
// kube-aws itself links only this package, which uses the standard library.
// A render whose plugins are all in the cache never starts the helper.
package helper

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
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
	// Error says why this plugin could not be installed; ErrorField is
	// the setting of plugins.NAME it is about: "source", or "verify" for
	// the key and the signature.
	Error      string `json:"error,omitempty"`
	ErrorField string `json:"errorField,omitempty"`
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
	if err := runHelper(ctx, path, req, &res, progress, runOptions{}); err != nil {
		return nil, err
	}
	return &res, nil
}

// KeyFingerprint identifies a PEM public key by the sha256 of its DER
// bytes, so that re-wrapping the PEM text does not change it. plugins.lock
// records the fingerprint of the key that verified a plugin's signature.
func KeyFingerprint(pemBytes []byte) (string, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return "", errors.New("no PEM block")
	}
	sum := sha256.Sum256(block.Bytes)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// SignFlags are the flags of `cosign sign --key` that keep a signature
// private: without --tlog-upload=false cosign records the signature, and
// with it the artifact's repository and digest, in Sigstore's public
// transparency log, which kube-aws does not consult (it checks the
// signature with the public key alone); cosign 3 also fetches its signing
// configuration from Sigstore unless --use-signing-config=false, and
// refuses --tlog-upload=false with it. cosign 2.6 knows both flags
// (cosign 2.5 and older know only the first).
const SignFlags = "--tlog-upload=false --use-signing-config=false"

// SignCommand is the cosign command that signs image
// (REGISTRY/REPOSITORY@sha256:...) with the private key at key, privately.
func SignCommand(key, image string) string {
	return "cosign sign --key " + key + " " + SignFlags + " " + image
}

// message is one line the helper writes on stdout.
type message struct {
	Log    string          `json:"log,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// runOptions tune runHelper.
type runOptions struct {
	// WaitDelay is how long an interrupted helper may take to stop after
	// SIGINT before it is killed (default 5s).
	WaitDelay time.Duration
}

// runHelper starts the helper at path, sends req and decodes its result into
// result. progress receives its log lines (may be nil). An error line from
// the helper is returned as an error with its text.
func runHelper(ctx context.Context, path string, req, result any, progress func(string), opts runOptions) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if opts.WaitDelay <= 0 {
		opts.WaitDelay = 5 * time.Second
	}
	cmd := exec.CommandContext(ctx, path)
	// Interrupted: ask the helper to stop (and clean up) before it is killed.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = opts.WaitDelay
	cmd.Stdin = bytes.NewReader(body)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", path, err)
	}
	var got *message
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64*1024), 64*1024*1024)
	for sc.Scan() {
		var m message
		if json.Unmarshal(sc.Bytes(), &m) != nil {
			continue // not ours (a stray print); the result line decides
		}
		if m.Log != "" {
			if progress != nil {
				progress(m.Log)
			}
			continue
		}
		mm := m
		got = &mm
	}
	werr := cmd.Wait()
	switch {
	case got != nil && got.Error != "":
		return errors.New(got.Error)
	case got != nil && got.Result != nil:
		return json.Unmarshal(got.Result, result)
	case ctx.Err() != nil:
		return ctx.Err()
	case werr != nil:
		return fmt.Errorf("%s: %v: %s", path, werr, strings.TrimSpace(stderr.String()))
	default:
		return fmt.Errorf("%s returned no result: %s", path, strings.TrimSpace(stderr.String()))
	}
}

// Serve is the helper's side: it reads one request from in, calls handle
// with it and a function that sends a progress line, and writes the result
// or the error to out. It returns the process's exit code: 0 when a result
// was written, 1 when an error was.
func Serve(in io.Reader, out io.Writer, handle func(req Request, progress func(string)) (*Result, error)) int {
	var mu sync.Mutex
	enc := json.NewEncoder(out)
	send := func(m message) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(m)
	}
	var req Request
	if err := json.NewDecoder(in).Decode(&req); err != nil {
		send(message{Error: fmt.Sprintf("kube-aws-oci: reading the request on stdin: %v (this helper is started by kube-aws, not by hand)", err)})
		return 1
	}
	res, err := handle(req, func(line string) { send(message{Log: line}) })
	if err != nil {
		send(message{Error: err.Error()})
		return 1
	}
	b, err := json.Marshal(res)
	if err != nil {
		send(message{Error: err.Error()})
		return 1
	}
	send(message{Result: b})
	return 0
}
