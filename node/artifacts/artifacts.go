// Package artifacts is the `artifacts` step: it installs the binaries of
// the artifacts plan and puts its container images into containerd, each
// from the source for this machine's architecture (kube-aws-node's own,
// runtime.GOARCH), checking every download's sha256 before it is used.
package artifacts

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/blob"
	"github.com/kube-aws/kube-aws/node/images"
	"github.com/kube-aws/kube-aws/node/retry"
	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

// Options tune the step.
type Options struct {
	// Arch is the machine's architecture; runtime.GOARCH when empty.
	Arch nodeplan.Arch
	// Images imports images; ctr on a machine.
	Images *images.Client
	// Timeout bounds the whole step.
	Timeout time.Duration
}

// Run is the step.
func Run(ctx context.Context, e *agent.Env, o Options) error {
	var plan nodeplan.ArtifactsPlan
	if found, err := e.OptionalPlan(nodeplan.ArtifactsPath, &plan); err != nil || !found {
		return err
	}
	if o.Arch == "" {
		o.Arch = nodeplan.Arch(runtime.GOARCH)
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	for i, b := range plan.Binaries {
		field := fmt.Sprintf("binaries[%d] (%s)", i, b.Name)
		src, ok := b.Sources[o.Arch]
		if !ok {
			return agent.BadInput(fmt.Errorf("%s has no source for %s, this machine's architecture", field, o.Arch))
		}
		if err := installBinary(ctx, e, b, src); err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
	}
	if len(plan.Images) == 0 {
		return nil
	}
	// containerd may still be starting (runcmd started it a moment ago).
	var have map[string]string
	err := retry.Do(ctx, retry.Boot, func(ctx context.Context) error {
		var err error
		have, err = o.Images.Digests(ctx)
		return err
	}, e.Retrying("asking containerd for its images"))
	if err != nil {
		return fmt.Errorf("listing containerd's images: %w", err)
	}
	for i, im := range plan.Images {
		if _, ok := im.Sources[o.Arch]; !ok {
			return agent.BadInput(fmt.Errorf("images[%d] (%s) has no source for %s, this machine's architecture", i, im.Name, o.Arch))
		}
	}
	// A few images at a time: one image's download from S3 overlaps
	// another's unpacking by containerd, which had the boot wait on each in
	// turn. The first failure (in plan order) is the one reported.
	errs := make([]error, len(plan.Images))
	sem := make(chan struct{}, imageParallelism)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, im := range plan.Images {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if err := importImage(ctx, e, o, im, im.Sources[o.Arch], have, &mu); err != nil {
				errs[i] = fmt.Errorf("images[%d] (%s): %w", i, im.Name, err)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// imageParallelism is how many images the step fetches and imports at once.
const imageParallelism = 3

// fetch downloads a source into the cache, retrying what may pass.
func fetch(ctx context.Context, e *agent.Env, src blob.Source) (string, error) {
	var p string
	err := retry.Do(ctx, retry.Boot, func(ctx context.Context) error {
		var err error
		p, err = e.Store.Fetch(ctx, src)
		return err
	}, e.Retrying("downloading "+src.String()))
	return p, err
}

func installBinary(ctx context.Context, e *agent.Env, b nodeplan.Binary, s nodeplan.Source) error {
	src := blob.Source{URL: s.URL, SHA256: s.SHA256}
	if s.AssetKey != "" {
		src.Key = e.Settings.Key(s.AssetKey)
	}
	started := time.Now()
	cached, err := fetch(ctx, e, src)
	if err != nil {
		return err
	}
	var content []byte
	if s.Member != "" {
		content, err = member(cached, s.Member)
	} else {
		content, err = os.ReadFile(cached)
	}
	if err != nil {
		return err
	}
	mode := os.FileMode(0o755)
	if b.Mode != "" {
		m, _ := nodeplan.ParseMode(b.Mode)
		mode = os.FileMode(m)
	}
	dest := e.Path(b.Path)
	if old, err := os.ReadFile(dest); err == nil && bytes.Equal(old, content) {
		if err := os.Chmod(dest, mode); err != nil {
			return err
		}
		e.Logf("%s: %s is current", b.Name, b.Path)
		return nil
	}
	// A new file renamed over the old one: a running binary is not
	// changed under its process, and no one runs half a file.
	if err := fileutil.WriteAtomic(dest, content, mode); err != nil {
		return err
	}
	from := src.URL
	if from == "" {
		from = s.AssetKey
	}
	if s.Member != "" {
		from += " (" + s.Member + ")"
	}
	e.Logf("%s: installed %s from %s, %d bytes, in %s", b.Name, b.Path, from, len(content), time.Since(started).Round(time.Millisecond))
	return nil
}

// member reads one file out of a tar archive, gzipped or not.
func member(archive, name string) ([]byte, error) {
	f, err := os.Open(archive)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, retry.Permanent(fmt.Errorf("archive: %v", err))
		}
		r = zr
	}
	want := path.Clean(strings.TrimPrefix(name, "./"))
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, agent.BadInput(fmt.Errorf("the archive has no file %s", name))
		}
		if err != nil {
			return nil, retry.Permanent(fmt.Errorf("the archive is not a tar archive: %v", err))
		}
		if path.Clean(strings.TrimPrefix(h.Name, "./")) != want {
			continue
		}
		if h.Typeflag != tar.TypeReg {
			return nil, agent.BadInput(fmt.Errorf("%s in the archive is not a regular file", name))
		}
		return io.ReadAll(tr)
	}
}

// importImage puts one image in containerd; mu guards have, which every
// image's import reads and updates.
func importImage(ctx context.Context, e *agent.Env, o Options, im nodeplan.Image, s nodeplan.ImageSource, have map[string]string, mu *sync.Mutex) error {
	platform := "linux/" + string(o.Arch)
	started := time.Now()
	mu.Lock()
	current := have[im.Reference]
	mu.Unlock()
	if s.Digest != "" {
		if current == s.Digest {
			e.Logf("%s: %s is present", im.Name, im.Reference)
			return nil
		}
		repo, _, _ := nodeplan.SplitReference(im.Reference)
		err := retry.Do(ctx, retry.Boot, func(ctx context.Context) error {
			return o.Images.Pull(ctx, repo, s.Digest, im.Reference, platform)
		}, e.Retrying("pulling "+repo+"@"+s.Digest))
		if err != nil {
			return err
		}
		e.Logf("%s: pulled %s@%s as %s in %s", im.Name, repo, s.Digest, im.Reference, time.Since(started).Round(time.Millisecond))
		return nil
	}
	// An archive imported before: the stamp records which archive the
	// name came from.
	stamp := e.Path(filepath.Join(nodeplan.StateDir, "images", s.SHA256))
	if b, err := os.ReadFile(stamp); err == nil && string(b) == im.Reference && current != "" {
		e.Logf("%s: %s is present", im.Name, im.Reference)
		return nil
	}
	archive, err := fetch(ctx, e, blob.Source{Key: e.Settings.Key(s.AssetKey), SHA256: s.SHA256})
	if err != nil {
		return err
	}
	if err := o.Images.Import(ctx, archive, platform); err != nil {
		return err
	}
	after, err := o.Images.Digests(ctx)
	if err != nil {
		return err
	}
	if after[im.Reference] == "" {
		return agent.BadInput(fmt.Errorf("the archive %s does not hold %s: tag the image with the reference the plan names", s.AssetKey, im.Reference))
	}
	mu.Lock()
	have[im.Reference] = after[im.Reference]
	mu.Unlock()
	if err := fileutil.WriteAtomic(stamp, []byte(im.Reference), 0o644); err != nil {
		return err
	}
	e.Logf("%s: imported %s from %s in %s", im.Name, im.Reference, s.AssetKey, time.Since(started).Round(time.Millisecond))
	return nil
}
