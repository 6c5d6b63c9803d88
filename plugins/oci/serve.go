package oci

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kube-aws/kube-aws/plugins/host"
	"github.com/kube-aws/kube-aws/plugins/oci/cache"
	"github.com/kube-aws/kube-aws/plugins/oci/cosign"
	"github.com/kube-aws/kube-aws/plugins/oci/helper"
	"github.com/kube-aws/kube-aws/plugins/source"
)

// Serve is the kube-aws-oci helper: it reads one helper.Request from in,
// carries it out and writes progress lines and one helper.Result (or an
// error) to out. It returns the process exit code.
func Serve(ctx context.Context, in io.Reader, out io.Writer) int {
	return helper.Serve(in, out, func(req helper.Request, progress func(string)) (*helper.Result, error) {
		h := &Helper{Remote: &Remote{}, Log: progress}
		return h.Do(ctx, req)
	})
}

// Helper carries out helper requests.
type Helper struct {
	Remote *Remote
	// Log receives progress lines (may be nil).
	Log func(string)
}

func (h *Helper) logf(format string, args ...any) {
	if h.Log != nil {
		h.Log(fmt.Sprintf(format, args...))
	}
}

// Do carries out one request.
func (h *Helper) Do(ctx context.Context, req helper.Request) (*helper.Result, error) {
	switch req.Op {
	case helper.OpInstall:
		if req.CacheDir == "" || req.Platform == "" {
			return nil, errors.New("kube-aws-oci: install needs a cache folder and a platform")
		}
		return &helper.Result{Installed: h.InstallAll(ctx, cache.Cache{Root: req.CacheDir}, req.Platform, req.ProtocolVersions, req.Install)}, nil
	case helper.OpPush:
		if req.Push == nil {
			return nil, errors.New("kube-aws-oci: push without a push request")
		}
		p, err := h.Push(ctx, *req.Push)
		if err != nil {
			return nil, err
		}
		return &helper.Result{Pushed: p}, nil
	}
	return nil, fmt.Errorf("kube-aws-oci: unknown operation %q (this helper belongs to another kube-aws version?)", req.Op)
}

// InstallAll installs every plugin, a few at a time, and reports each
// one's outcome; one plugin's failure does not stop the others, so the
// user sees every problem at once.
func (h *Helper) InstallAll(ctx context.Context, c cache.Cache, platform string, protos []int, reqs []helper.InstallRequest) []helper.Installed {
	out := make([]helper.Installed, len(reqs))
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i, r := range reqs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			res, err := h.Install(ctx, c, platform, protos, r)
			if err != nil {
				res.Error, res.ErrorField = err.Error(), "source"
				var se *signatureError
				if errors.As(err, &se) {
					res.ErrorField = "verify"
				}
			}
			out[i] = res
		}()
	}
	wg.Wait()
	return out
}

// Install resolves one plugin's source (or its pinned digest), checks the
// artifact's info and signature, and puts the platform's files in the
// cache unless an intact copy is there.
func (h *Helper) Install(ctx context.Context, c cache.Cache, platform string, protos []int, r helper.InstallRequest) (helper.Installed, error) {
	res := helper.Installed{Name: r.Name, Source: r.Source}
	ref, err := ParseReference(r.Source)
	if err != nil {
		return res, fmt.Errorf("plugins.%s.source: %v", r.Name, err)
	}
	repo, err := h.Remote.Repository(ref)
	if err != nil {
		return res, err
	}
	art, err := Resolve(ctx, repo, ref, r.Pinned)
	if err != nil {
		if r.Pinned != "" && !isUnreachable(err) {
			return res, fmt.Errorf("%w (plugins.lock pins plugin %s to that digest: if it was deleted from the registry, run `kube-aws plugins upgrade %s` to pin what %s holds now)", err, r.Name, r.Name, r.Source)
		}
		return res, err
	}
	res.Digest, res.Version = art.Digest(), art.Info.Version
	if r.Pinned != "" {
		h.logf("%s: plugins.lock pins %s (%s %s) from %s", r.Name, art.Digest(), art.Info.Name, art.Info.Version, ref.Repo())
	} else {
		h.logf("%s: %s is %s (%s %s)", r.Name, r.Source, art.Digest(), art.Info.Name, art.Info.Version)
	}
	if r.Pinned != "" && r.CheckTag && ref.Tag() != "" {
		now, err := repo.Resolve(ctx, ref.Tag())
		if err != nil {
			return res, explain(ref, "tag "+ref.Tag(), err)
		}
		if now.Digest.String() != r.Pinned {
			moved := &helper.Moved{Digest: now.Digest.String()}
			if a2, err := readArtifact(ctx, repo, ref, now); err == nil {
				moved.Version = a2.Info.Version
			}
			res.MovedTo = moved
		}
	}
	if art.Info.Name != r.Name {
		return res, fmt.Errorf("%s (%s) holds plugin %q, not %q: point plugins.%s.source at the %s plugin, or configure this one as plugins.%s",
			r.Source, art.Digest(), art.Info.Name, r.Name, r.Name, r.Name, art.Info.Name)
	}
	if len(protos) > 0 && !art.Info.SpeaksAny(protos) {
		return res, fmt.Errorf("%s: plugin %s %s speaks plugin protocol %s, but this kube-aws speaks %s: use a version of the plugin built for protocol %s, or a kube-aws that speaks %s",
			r.Source, r.Name, art.Info.Version, joinInts(art.Info.ProtocolVersions), joinInts(protos), joinInts(protos), joinInts(art.Info.ProtocolVersions))
	}
	if r.KeyFile != "" {
		key, err := cosign.LoadKey(r.KeyFile)
		if err != nil {
			return res, &signatureError{fmt.Errorf("plugins.%s.verify.key: %v", r.Name, err)}
		}
		if err := cosign.Verify(ctx, repo, art.Descriptor, key); err != nil {
			var ue *UnreachableError
			if errors.As(err, &ue) {
				return res, err
			}
			if r.Pinned != "" {
				return res, &signatureError{pinnedRefused(r, art.Digest(), explainSigErr(ref, err))}
			}
			return res, &signatureError{fmt.Errorf("plugin %s from %s (%s) is refused: %w", r.Name, r.Source, art.Digest(), explainSigErr(ref, err))}
		}
		res.Key = key.Fingerprint
		h.logf("%s: the cosign signature of %s verifies with %s", r.Name, art.Digest(), r.KeyFile)
		// What lets kube-aws run this digest from the cache later without
		// the helper: a record that it was checked with this key.
		if err := c.RecordVerified(cache.Verified{Digest: art.Digest(), Key: key.Fingerprint, Name: art.Info.Name, Platforms: cachePlatforms(art)}); err != nil {
			return res, fmt.Errorf("recording in the plugin cache that the signature of plugin %s %s verifies: %w", r.Name, art.Digest(), err)
		}
	}
	res.Platforms = lockPlatforms(art)
	p, err := art.ForPlatform(platform)
	if err != nil {
		return res, err
	}
	dir, err := c.EntryDir(p.Manifest.Digest.String())
	if err != nil {
		return res, err
	}
	if _, err := os.Stat(dir); err == nil {
		cerr := CheckEntry(dir, p)
		if cerr == nil {
			res.Dir = dir
			return res, nil
		}
		h.logf("%s: the cached copy was changed on disk (%v): downloading it again", r.Name, cerr)
		res.Repaired = cerr.Error()
		if err := c.Remove(p.Manifest.Digest.String()); err != nil {
			return res, err
		}
	}
	h.logf("%s: downloading %s %s for %s from %s (%s)", r.Name, art.Info.Name, art.Info.Version, platform, ref.Registry, humanSize(p))
	dir, err = Download(ctx, repo, c, art, p)
	if err != nil {
		return res, err
	}
	res.Dir, res.Downloaded = dir, true
	return res, nil
}

// pinnedRefused is the error for a digest plugins.lock pins whose
// signature does not verify with the configured key: plugins.lock edited
// to name another artifact (one a cluster without a key put in the shared
// cache, say), or a key newly set for a plugin pinned before it was signed.
func pinnedRefused(r helper.InstallRequest, digest string, err error) error {
	reason := err.Error()
	var no *cosign.NoSignatureError
	if errors.As(err, &no) {
		reason = no.Reason()
	}
	return fmt.Errorf("plugin %s from %s (%s) is refused: plugins.lock pins it to that digest, and %s. plugins.%s.verify.key asks for a signature with the key %s, so only what that key signed runs, whatever the plugin cache holds: if plugins.lock was edited, restore plugins.lock from version control; to pin the signed artifact %s names now, run `kube-aws plugins upgrade %s`; if the plugin's author has not signed %s yet, they sign it with `%s`",
		r.Name, r.Source, digest, reason, r.Name, r.KeyFile, r.Source, r.Name, digest, helper.SignCommand("cosign.key", "REGISTRY/REPOSITORY@"+digest))
}

// signatureError is a failure about plugins.NAME.verify: the key or the
// signature.
type signatureError struct{ error }

func (e *signatureError) Unwrap() error { return e.error }

func isUnreachable(err error) bool {
	var ue *UnreachableError
	return errors.As(err, &ue)
}

// explainSigErr keeps registry errors met while fetching signatures
// readable.
func explainSigErr(ref Reference, err error) error {
	var no *cosign.NoSignatureError
	var bad *cosign.BadSignatureError
	if errors.As(err, &no) || errors.As(err, &bad) {
		return err
	}
	return explain(ref, "signatures", err)
}

// lockPlatforms is every platform's hashes, as plugins.lock records them.
func lockPlatforms(a *Artifact) map[string]helper.Platform {
	out := map[string]helper.Platform{}
	for name, p := range a.Platforms {
		lp := helper.Platform{Manifest: p.Manifest.Digest.String(), SHA256: p.Executable.Digest.Encoded()}
		for f, l := range p.Files {
			if lp.Files == nil {
				lp.Files = map[string]string{}
			}
			lp.Files[f] = l.Digest.Encoded()
		}
		out[name] = lp
	}
	return out
}

// cachePlatforms is lockPlatforms as the cache's verification record
// keeps them.
func cachePlatforms(a *Artifact) map[string]cache.Platform {
	out := map[string]cache.Platform{}
	for name, p := range lockPlatforms(a) {
		out[name] = cache.Platform{Manifest: p.Manifest, SHA256: p.SHA256, Files: p.Files}
	}
	return out
}

func humanSize(p *Platform) string {
	n := p.Executable.Size
	for _, l := range p.Files {
		n += l.Size
	}
	return fmt.Sprintf("%d file(s), %.1f MB", len(p.Files)+1, float64(n)/1e6)
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}

// Push packages a plugin folder and pushes it. It starts the plugin's
// build for this machine once to ask its name, version, protocol versions
// and stages, which become the artifact's annotations.
func (h *Helper) Push(ctx context.Context, req helper.PushRequest) (*helper.PushResult, error) {
	ref, err := ParseReference(req.Target)
	if err != nil {
		return nil, err
	}
	pkg, err := ReadPackage(req.Dir, req.Platforms)
	if err != nil {
		return nil, err
	}
	exe, err := pkg.Runnable()
	if err != nil {
		return nil, err
	}
	info, err := ReadInfo(ctx, exe)
	if err != nil {
		return nil, err
	}
	created, err := createdTime(req.Created)
	if err != nil {
		return nil, err
	}
	repo, err := h.Remote.Repository(ref)
	if err != nil {
		return nil, err
	}
	art, err := Push(ctx, repo, ref, PushOptions{Package: pkg, Info: info, Created: created, Log: h.Log})
	if err != nil {
		return nil, err
	}
	return &helper.PushResult{
		Name: info.Name, Version: info.Version, Target: req.Target, Digest: art.Digest(),
		Platforms: pkg.PlatformNames(), Repository: ref.Repo(),
	}, nil
}

// createdTime is the artifact's creation time: the request's, else
// SOURCE_DATE_EPOCH (reproducible builds), else now.
func createdTime(s string) (time.Time, error) {
	if s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return t, fmt.Errorf("creation time %q is not RFC 3339: %v", s, err)
		}
		return t, nil
	}
	if e := os.Getenv("SOURCE_DATE_EPOCH"); e != "" {
		n, err := strconv.ParseInt(e, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds", e)
		}
		return time.Unix(n, 0), nil
	}
	return time.Now(), nil
}

// ReadInfo starts a plugin executable as kube-aws does, asks GetInfo and
// stops it.
func ReadInfo(ctx context.Context, exe string) (Info, error) {
	ps, err := host.Launch(ctx, []source.Candidate{{
		Name: filepath.Base(exe), Path: exe, Dir: filepath.Dir(exe), Source: source.User,
	}}, host.Options{Stderr: io.Discard})
	if err != nil {
		return Info{}, fmt.Errorf("asking the plugin for its name and version: %w", err)
	}
	defer host.KillAll(ps)
	pi := ps[0].Info
	info := Info{Name: pi.Name, Version: pi.Version, Description: pi.Description, ProtocolVersions: pi.ProtocolVersions}
	for _, s := range pi.Stages {
		info.Stages = append(info.Stages, string(s))
	}
	sort.Ints(info.ProtocolVersions)
	if info.Name == "" || info.Version == "" {
		return info, fmt.Errorf("%s reports no name or version (GetInfo): a pushed plugin needs both", exe)
	}
	return info, nil
}
