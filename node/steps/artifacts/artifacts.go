// Package artifacts is the `artifacts` step: it installs the binaries of
// the artifacts plan and puts its container images into containerd, each
// from the source for this machine's architecture (kube-aws-node's own,
// runtime.GOARCH), checking every download's sha256 before it is used. A
// binary is current when the file in place is the one its source gives
// (for a member of an archive, known once the archive is in the download
// cache), an image when containerd has it from the same source.
package artifacts

import (
	"archive/tar"
	"bufio"
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/blob"
	"github.com/kube-aws/kube-aws/node/command"
	"github.com/kube-aws/kube-aws/node/images"
	"github.com/kube-aws/kube-aws/node/retry"
	"github.com/kube-aws/kube-aws/node/step"
	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

// Step is the step.
type Step struct {
	// Arch is the machine's architecture; runtime.GOARCH when empty.
	Arch nodeplan.Arch
	// Images imports images; ctr on a machine.
	Images *images.Client
	// Timeout bounds asking containerd for its images, and the downloads
	// and imports.
	Timeout time.Duration
}

// New is the step as kube-aws-node runs it.
func New() *Step { return &Step{Images: &images.Client{Run: command.Exec}} }

func (*Step) Name() string { return nodeplan.StepArtifacts }

func (s *Step) Flags(fs *flag.FlagSet) {
	fs.DurationVar(&s.Timeout, "timeout", 30*time.Minute, "how long downloads and imports may take")
	fs.StringVar(&s.Images.Address, "containerd-address", "", "containerd's socket (ctr's default when empty)")
}

// binary is a binary to install or whose mode to set.
type binary struct {
	field string
	plan  nodeplan.Binary
	src   nodeplan.Source
	mode  os.FileMode
}

// image is an image to pull or import.
type image struct {
	field string
	plan  nodeplan.Image
	src   nodeplan.ImageSource
}

// Check compares every binary with the file in place and asks containerd
// which images it has.
func (s *Step) Check(ctx context.Context, e *agent.Env) (step.Changes, error) {
	var plan nodeplan.ArtifactsPlan
	if found, err := e.OptionalPlan(nodeplan.ArtifactsPath, &plan); err != nil || !found {
		return nil, err
	}
	arch := s.arch()
	var changes step.Changes
	for i, b := range plan.Binaries {
		field := fmt.Sprintf("binaries[%d] (%s)", i, b.Name)
		src, ok := b.Sources[arch]
		if !ok {
			return nil, agent.BadInput(fmt.Errorf("%s has no source for %s, this machine's architecture", field, arch))
		}
		bin := &binary{field: field, plan: b, src: src, mode: 0o755}
		if b.Mode != "" {
			m, _ := nodeplan.ParseMode(b.Mode)
			bin.mode = os.FileMode(m)
		}
		same, err := bin.installed(e)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", field, err)
		}
		st, statErr := os.Stat(e.Path(b.Path))
		switch {
		case !same:
			changes = append(changes, step.Change{Action: "install", Target: b.Path, Detail: b.Name + " from " + bin.from(), Data: bin})
		case statErr != nil || st.Mode().Perm() != bin.mode:
			changes = append(changes, step.Change{Action: "chmod", Target: b.Path, Detail: fmt.Sprintf("%s: mode %04o", b.Name, bin.mode), Data: bin})
		default:
			e.Logf("%s: %s is current", b.Name, b.Path)
		}
	}
	if len(plan.Images) == 0 {
		return changes, nil
	}
	for i, im := range plan.Images {
		if _, ok := im.Sources[arch]; !ok {
			return nil, agent.BadInput(fmt.Errorf("images[%d] (%s) has no source for %s, this machine's architecture", i, im.Name, arch))
		}
	}
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	// containerd may still be starting (runcmd started it a moment ago).
	var have map[string]string
	err := retry.Do(ctx, retry.Boot, func(ctx context.Context) error {
		var err error
		have, err = s.Images.Digests(ctx)
		return err
	}, e.Retrying("asking containerd for its images"))
	if err != nil {
		return nil, fmt.Errorf("listing containerd's images: %w", err)
	}
	for i, im := range plan.Images {
		img := &image{field: fmt.Sprintf("images[%d] (%s)", i, im.Name), plan: im, src: im.Sources[arch]}
		switch {
		case img.present(e, have[im.Reference]):
			e.Logf("%s: %s is present", im.Name, im.Reference)
		case img.src.Digest != "":
			repo, _, _ := nodeplan.SplitReference(im.Reference)
			changes = append(changes, step.Change{Action: "pull", Target: im.Reference, Detail: im.Name + ": " + repo + "@" + img.src.Digest, Data: img})
		default:
			changes = append(changes, step.Change{Action: "import", Target: im.Reference, Detail: im.Name + " from " + img.src.AssetKey, Data: img})
		}
	}
	return changes, nil
}

// Apply installs the binaries and pulls and imports the images, all at
// once, a few of each kind at a time. The images take longest (containerd
// unpacks them) and start first thing rather than after the binaries; one
// download overlaps another's unpacking or writing, where the boot used to
// wait on each in turn. The first failure (in plan order) is the one
// reported.
func (s *Step) Apply(ctx context.Context, e *agent.Env, changes step.Changes) error {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	errs := make([]error, len(changes))
	var bins, imgs []int
	archives := &archiveImports{m: map[string]*archiveImport{}}
	for i, c := range changes {
		switch c.Data.(type) {
		case *binary:
			bins = append(bins, i)
		case *image:
			imgs = append(imgs, i)
		}
	}
	do := func(i int) {
		switch d := changes[i].Data.(type) {
		case *binary:
			if err := d.apply(ctx, e, changes[i].Action == "install"); err != nil {
				errs[i] = fmt.Errorf("%s: %w", d.field, err)
			}
		case *image:
			if err := s.importImage(ctx, e, d, archives); err != nil {
				errs[i] = fmt.Errorf("%s: %w", d.field, err)
			}
		}
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); inTurn(imgs, imageParallelism, do) }()
	go func() { defer wg.Done(); inTurn(bins, binaryParallelism, do) }()
	wg.Wait()
	return cmp.Or(errs...)
}

// inTurn calls do for every item, at most parallel at a time, starting
// them in order.
func inTurn(items []int, parallel int, do func(int)) {
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for _, i := range items {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			do(i)
		}()
	}
	wg.Wait()
}

func (s *Step) arch() nodeplan.Arch {
	if s.Arch == "" {
		return nodeplan.Arch(runtime.GOARCH)
	}
	return s.Arch
}

// imageParallelism is how many images the step fetches and imports at
// once, binaryParallelism how many binaries it downloads and writes (an
// etcd member's three at once).
const (
	imageParallelism  = 3
	binaryParallelism = 3
)

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

func (b *binary) source(e *agent.Env) blob.Source {
	src := blob.Source{URL: b.src.URL, SHA256: b.src.SHA256}
	if b.src.AssetKey != "" {
		src.Key = e.Settings.Key(b.src.AssetKey)
	}
	return src
}

// from says where the binary comes from.
func (b *binary) from() string {
	from := b.src.URL
	if from == "" {
		from = b.src.AssetKey
	}
	if b.src.Member != "" {
		from += " (" + b.src.Member + ")"
	}
	return from
}

// installed reports whether the file in place is the binary. A member of
// an archive is compared only when the archive is in the cache already:
// Check downloads nothing.
func (b *binary) installed(e *agent.Env) (bool, error) {
	dest := e.Path(b.plan.Path)
	if b.src.Member == "" {
		sum, err := fileutil.SHA256(dest)
		return err == nil && sum == b.src.SHA256, nil
	}
	archive, ok := e.Store.Cached(b.src.SHA256)
	if !ok {
		return false, nil
	}
	want, err := member(archive, b.src.Member)
	if err != nil {
		return false, err
	}
	old, err := os.ReadFile(dest)
	return err == nil && bytes.Equal(old, want), nil
}

// apply installs the binary (download) or only sets its mode.
func (b *binary) apply(ctx context.Context, e *agent.Env, download bool) error {
	dest := e.Path(b.plan.Path)
	if !download {
		if err := os.Chmod(dest, b.mode); err != nil {
			return err
		}
		e.Logf("%s: %s is current, mode set to %04o", b.plan.Name, b.plan.Path, b.mode)
		return nil
	}
	started := time.Now()
	if b.src.Member == "" {
		// Streamed to its place, checked as it arrives: the file is
		// written once rather than to the cache and then again.
		src := b.source(e)
		err := retry.Do(ctx, retry.Boot, func(ctx context.Context) error {
			return e.Store.Install(ctx, src, dest, b.mode)
		}, e.Retrying("downloading "+src.String()))
		if err != nil {
			return err
		}
		st, err := os.Stat(dest)
		if err != nil {
			return err
		}
		e.Logf("%s: installed %s from %s, %d bytes, in %s", b.plan.Name, b.plan.Path, b.from(), st.Size(), time.Since(started).Round(time.Millisecond))
		return nil
	}
	// A member of an archive: the archive is kept in the cache, where the
	// other binaries it holds and the next run's check find it.
	cached, err := fetch(ctx, e, b.source(e))
	if err != nil {
		return err
	}
	content, err := member(cached, b.src.Member)
	if err != nil {
		return err
	}
	// A new file renamed over the old one: a running binary is not
	// changed under its process, and no one runs half a file.
	if err := fileutil.WriteAtomic(dest, content, b.mode); err != nil {
		return err
	}
	e.Logf("%s: installed %s from %s, %d bytes, in %s", b.plan.Name, b.plan.Path, b.from(), len(content), time.Since(started).Round(time.Millisecond))
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

// stamp records which archive an image's name came from.
func (im *image) stamp(e *agent.Env) string {
	return e.Path(filepath.Join(nodeplan.StateDir, "images", im.src.SHA256))
}

// present reports whether containerd has the image from its source:
// current is the digest containerd has for its name.
func (im *image) present(e *agent.Env, current string) bool {
	if im.src.Digest != "" {
		return current == im.src.Digest
	}
	b, err := os.ReadFile(im.stamp(e))
	return err == nil && string(b) == im.plan.Reference && current != ""
}

// holdBack is how much of an image archive's download the step keeps
// from ctr until the archive's sha256 is verified. ctr names the images
// only once it has read the archive's end (two 512-byte blocks of zeros,
// then at most a record's padding: 10 KiB for GNU tar, none for Go's), so
// containerd never gives a wrong archive's images a name the kubelet could
// run.
const holdBack = 64 << 10

// archiveImport is the import of one archive, shared by the images of the
// plan it holds.
type archiveImport struct {
	once  sync.Once
	names []string // the images ctr unpacked
	size  int64
	err   error
}

// archiveImports is this run's imports, by the archive's sha256.
type archiveImports struct {
	mu sync.Mutex
	m  map[string]*archiveImport
}

func (a *archiveImports) get(sum string) *archiveImport {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m[sum] == nil {
		a.m[sum] = &archiveImport{}
	}
	return a.m[sum]
}

// importImage puts one image in containerd. An archive is streamed from
// the bucket into ctr as it arrives, checked on the way (see holdBack):
// not written to disk and read back, where a controller's 160 MB of
// archives used to be written beside containerd's own copy. The images of
// one archive share its one import.
func (s *Step) importImage(ctx context.Context, e *agent.Env, im *image, archives *archiveImports) error {
	platform := "linux/" + string(s.arch())
	started := time.Now()
	if im.src.Digest != "" {
		repo, _, _ := nodeplan.SplitReference(im.plan.Reference)
		err := retry.Do(ctx, retry.Boot, func(ctx context.Context) error {
			return s.Images.Pull(ctx, repo, im.src.Digest, im.plan.Reference, platform)
		}, e.Retrying("pulling "+repo+"@"+im.src.Digest))
		if err != nil {
			return err
		}
		e.Logf("%s: pulled %s@%s as %s in %s", im.plan.Name, repo, im.src.Digest, im.plan.Reference, time.Since(started).Round(time.Millisecond))
		return nil
	}
	ai := archives.get(im.src.SHA256)
	ai.once.Do(func() { ai.names, ai.size, ai.err = s.importArchive(ctx, e, im, platform) })
	if ai.err != nil {
		return ai.err
	}
	if !slices.Contains(ai.names, im.plan.Reference) {
		// ctr's output is for people; containerd has the last word.
		have, err := s.Images.Digests(ctx)
		if err != nil {
			return err
		}
		if have[im.plan.Reference] == "" {
			return agent.BadInput(fmt.Errorf("the archive %s does not hold %s: tag the image with the reference the plan names", im.src.AssetKey, im.plan.Reference))
		}
	}
	if err := fileutil.WriteAtomic(im.stamp(e), []byte(im.plan.Reference), 0o644); err != nil {
		return err
	}
	e.Logf("%s: imported %s from %s, %d bytes, in %s", im.plan.Name, im.plan.Reference, im.src.AssetKey, ai.size, time.Since(started).Round(time.Millisecond))
	return nil
}

// importArchive streams an image archive into ctr and returns the names
// of the images ctr unpacked and the archive's size. A download that fails
// is tried again; a wrong archive or a failure of ctr's is not.
func (s *Step) importArchive(ctx context.Context, e *agent.Env, im *image, platform string) (names []string, size int64, err error) {
	src := blob.Source{Key: e.Settings.Key(im.src.AssetKey), SHA256: im.src.SHA256}
	err = retry.Do(ctx, retry.Boot, func(ctx context.Context) error {
		stream, err := e.Store.Stream(ctx, src, holdBack)
		if err != nil {
			return err
		}
		defer stream.Close()
		names, err = s.Images.Import(ctx, stream, platform)
		switch {
		case stream.Err() != nil:
			// The download's failure explains ctr's.
			err = stream.Err()
		case err != nil:
			err = retry.Permanent(err)
		default:
			// ctr may be done at the archive's end marker, before its
			// padding and the held bytes: the check must still pass.
			err = stream.Finish()
		}
		if err != nil {
			// ctr names the images at the archive's end: any it named
			// came from an archive that failed its check.
			if len(names) > 0 {
				if rmErr := s.Images.Remove(ctx, names...); rmErr != nil {
					e.Logf("%s: could not remove the images of %s, which failed: %v", im.plan.Name, src, rmErr)
				}
			}
			return err
		}
		size = stream.Size()
		return nil
	}, e.Retrying("downloading "+src.String()+" into containerd"))
	return names, size, err
}
