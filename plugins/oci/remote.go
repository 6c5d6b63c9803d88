package oci

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"oras.land/oras-go/v2/errdef"
	"oras.land/oras-go/v2/registry"
	"oras.land/oras-go/v2/registry/remote"
	"oras.land/oras-go/v2/registry/remote/auth"
	"oras.land/oras-go/v2/registry/remote/credentials"
	"oras.land/oras-go/v2/registry/remote/errcode"
	"oras.land/oras-go/v2/registry/remote/retry"
)

// Scheme prefixes a plugin's source in cluster.yaml.
const Scheme = "oci://"

// Reference is a parsed plugins.NAME.source.
type Reference struct {
	// Source is the text as written, oci:// included.
	Source string
	registry.Reference
}

// ParseReference reads oci://REGISTRY/REPOSITORY:TAG or
// oci://REGISTRY/REPOSITORY@sha256:DIGEST (or :TAG@sha256:..., which
// pins the digest and keeps the tag for the reader).
func ParseReference(source string) (Reference, error) {
	rest, ok := strings.CutPrefix(source, Scheme)
	if !ok {
		return Reference{}, fmt.Errorf("%q does not start with %s: write oci://REGISTRY/REPOSITORY:TAG", source, Scheme)
	}
	r, err := registry.ParseReference(rest)
	if err != nil {
		return Reference{}, fmt.Errorf("%q is not a valid OCI reference (oci://REGISTRY/REPOSITORY:TAG or @sha256:DIGEST): %v", source, err)
	}
	if r.Reference == "" {
		return Reference{}, fmt.Errorf("%q names no tag or digest: add :TAG (the version to install) or @sha256:DIGEST", source)
	}
	return Reference{Source: source, Reference: r}, nil
}

// Tag is the tag of the reference, "" when it names a digest only.
func (r Reference) Tag() string {
	if _, err := r.Digest(); err == nil {
		// registry.ParseReference keeps only the digest of REPO:TAG@DIGEST.
		if i := strings.LastIndex(r.Source, "@"); i > 0 {
			head := r.Source[:i]
			if j := strings.LastIndex(head, ":"); j > strings.LastIndex(head, "/") {
				return head[j+1:]
			}
		}
		return ""
	}
	return r.Reference.Reference
}

// Repo is the registry and repository, without tag or digest.
func (r Reference) Repo() string { return r.Registry + "/" + r.Repository }

// Remote opens repositories with credentials from the Docker and Helm
// configuration and the right scheme for each registry.
type Remote struct {
	// Credentials default to DefaultCredentials().
	Credentials credentials.Store
	// UserAgent is sent with every request.
	UserAgent string

	once    sync.Once
	credErr error
}

// DefaultCredentials reads what `docker login` and `helm registry login`
// write: Docker's config.json ($DOCKER_CONFIG, else ~/.docker), with its
// credential helpers and credsStore, then Helm's registry config
// ($HELM_REGISTRY_CONFIG, else the helm folder under the user's config
// folder). Missing files mean anonymous access.
func DefaultCredentials() (credentials.Store, error) {
	docker, err := credentials.NewStoreFromDocker(credentials.StoreOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading the Docker credentials configuration: %w", err)
	}
	helmPath := os.Getenv("HELM_REGISTRY_CONFIG")
	if helmPath == "" {
		if d, err := os.UserConfigDir(); err == nil {
			helmPath = filepath.Join(d, "helm", "registry", "config.json")
		}
	}
	if helmPath == "" {
		return docker, nil
	}
	if _, err := os.Stat(helmPath); err != nil {
		return docker, nil
	}
	helm, err := credentials.NewStore(helmPath, credentials.StoreOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading Helm's registry configuration %s: %w", helmPath, err)
	}
	return credentials.NewStoreWithFallbacks(docker, helm), nil
}

// plainHTTP decides the scheme: a registry on the loopback address
// (localhost, 127.0.0.0/8, ::1) is spoken to over plain HTTP, as Docker
// does by default; every other registry over HTTPS.
func plainHTTP(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	if h == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(strings.Trim(h, "[]"))
	return err == nil && a.IsLoopback()
}

// Repository opens the repository a reference names.
func (rm *Remote) Repository(ref Reference) (*remote.Repository, error) {
	// Installs run concurrently: read the configuration once.
	rm.once.Do(func() {
		if rm.Credentials == nil {
			rm.Credentials, rm.credErr = DefaultCredentials()
		}
	})
	if rm.credErr != nil {
		return nil, rm.credErr
	}
	store := rm.Credentials
	repo, err := remote.NewRepository(ref.Repo())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ref.Source, err)
	}
	repo.PlainHTTP = plainHTTP(ref.Registry)
	hc := &http.Client{
		Transport: retry.NewTransport(http.DefaultTransport),
		// A registry that accepts the connection and never answers must
		// not hang a CI job: no single request of ours is long except a
		// blob, and that one streams.
		Timeout: 10 * time.Minute,
	}
	ua := rm.UserAgent
	if ua == "" {
		ua = "kube-aws (" + runtime.GOOS + "/" + runtime.GOARCH + ")"
	}
	repo.Client = &auth.Client{
		Client:     hc,
		Header:     http.Header{"User-Agent": {ua}},
		Credential: credentials.Credential(store),
		Cache:      auth.NewCache(),
	}
	return repo, nil
}

// explain turns a registry error into one that names the registry and
// says what to do. what is the thing being fetched ("tag 0.1.0").
func explain(ref Reference, what string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	var resp *errcode.ErrorResponse
	var netErr net.Error
	var opErr *net.OpError
	switch {
	// Nothing answered: refused, no route, no such host, or a timeout. A
	// registry that answers wrongly (TLS, HTTP) is not "unreachable".
	case errors.As(err, &opErr), errors.As(err, &netErr) && netErr.Timeout():
		return &UnreachableError{Registry: ref.Registry, Err: err}
	case errors.As(err, &resp) && (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden):
		return fmt.Errorf("registry %s refused access to %s (HTTP %d): log in with `docker login %s` (or `helm registry login %s`), or check the credential helper that ~/.docker/config.json names",
			ref.Registry, ref.Repository, resp.StatusCode, ref.Registry, ref.Registry)
	case errors.Is(err, auth.ErrBasicCredentialNotFound):
		return fmt.Errorf("registry %s refused access to %s (HTTP 401, and no login for it was found): log in with `docker login %s` (or `helm registry login %s`)",
			ref.Registry, ref.Repository, ref.Registry, ref.Registry)
	case errors.Is(err, errdef.ErrNotFound):
		return &notFoundError{fmt.Sprintf("%s: %s not found in %s", ref.Source, what, ref.Repo())}
	}
	return fmt.Errorf("%s: %s: %w", ref.Source, what, err)
}

// UnreachableError is a registry that could not be reached at all.
type UnreachableError struct {
	Registry string
	Err      error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("registry %s is unreachable: %v; check that it is up and that the address in the source is right", e.Registry, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// notFoundError is a tag, digest or blob the registry does not have.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }

func (e *notFoundError) Unwrap() error { return errdef.ErrNotFound }
