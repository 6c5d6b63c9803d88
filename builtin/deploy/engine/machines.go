package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

// userDataRole is the role whose userdata a rendered file is:
// userdata/<role>.yaml (controller, etcd, nodepool-<name>).
func userDataRole(renderedPath string) (string, bool) {
	dir, file := path.Split(renderedPath)
	role, ok := strings.CutSuffix(file, ".yaml")
	if dir != "userdata/" || !ok || role == "" {
		return "", false
	}
	return role, true
}

// NodeAgentFile is kube-aws-node's file name for an architecture in
// Target.NodeAgentDir, as make build lays it out.
func NodeAgentFile(arch nodeplan.Arch) string { return "kube-aws-node-linux-" + string(arch) }

// needsNodeAgent reports whether a template takes kube-aws-node's key:
// the render has machine stacks.
func (p *prepared) needsNodeAgent() bool {
	for _, t := range p.tmpl {
		for _, n := range []string{names.ParamNodeAgentKeyAMD64, names.ParamNodeAgentKeyARM64} {
			if _, ok := t.Parameters[n]; ok {
				return true
			}
		}
	}
	return false
}

// resolveNodeAgent finds kube-aws-node for every architecture the
// cluster's instance types run, and its key, <prefix>/assets/<sha256>, when
// a template needs it (Deploy uploads it there, Diff only names it). The
// parameter of an architecture no machine runs is left empty.
func (p *prepared) resolveNodeAgent() error {
	p.nodeAgent = map[string]nodeAgentFile{}
	if !p.needsNodeAgent() {
		return nil
	}
	c := p.t.Cluster
	used := map[string]bool{}
	for _, it := range []string{c.Controller.InstanceType, c.Etcd.InstanceType} {
		used[config.Architecture(it)] = true
	}
	for _, np := range c.NodePools {
		used[config.Architecture(np.InstanceType)] = true
	}
	for _, arch := range nodeplan.Archs {
		if !used[string(arch)] {
			p.nodeAgent[string(arch)] = nodeAgentFile{}
			continue
		}
		file := filepath.Join(p.t.NodeAgentDir, NodeAgentFile(arch))
		sum, err := fileutil.SHA256(file)
		if err != nil {
			return fmt.Errorf("kube-aws-node for linux/%s, which every machine's bootstrap runs: %w; build it (make build writes bin/kube-aws-plugins/libexec/%s)", arch, err, NodeAgentFile(arch))
		}
		p.nodeAgent[string(arch)] = nodeAgentFile{path: file, sum: sum, key: p.loc.key(nodeplan.AssetKey(sum))}
	}
	return nil
}

type nodeAgentFile struct{ path, sum, key string }

// uploadNodeAgent puts kube-aws-node for every architecture at
// <prefix>/assets/<sha256>, where the machines' bootstrap fetches it.
func (e *Engine) uploadNodeAgent(ctx context.Context, p *prepared, a *assets) error {
	for _, arch := range nodeplan.Archs {
		f, ok := p.nodeAgent[string(arch)]
		if !ok || f.path == "" {
			continue
		}
		if _, err := e.uploadFile(ctx, p, a, f.path, f.sum); err != nil {
			return fmt.Errorf("kube-aws-node for linux/%s: %w", arch, err)
		}
	}
	return nil
}

// uploadMirror puts every file air-gapped mode took from the mirror folder
// at <prefix>/assets/<sha256>, where the machines' artifacts step fetches it.
func (e *Engine) uploadMirror(ctx context.Context, p *prepared, a *assets) error {
	type file struct{ path, sum string }
	var files []file
	seen := map[string]bool{}
	for _, art := range p.t.Artifacts {
		archs := make([]string, 0, len(art.Sources))
		for arch := range art.Sources {
			archs = append(archs, arch)
		}
		sort.Strings(archs)
		for _, arch := range archs {
			for _, name := range art.MirrorFiles() {
				sum, ok := art.Sources[arch].Mirrored[name]
				if !ok || seen[sum] {
					continue
				}
				seen[sum] = true
				files = append(files, file{filepath.Join(p.t.MirrorDir, filepath.FromSlash(art.MirrorPath(arch, name))), sum})
			}
		}
	}
	if len(files) > 0 && p.t.MirrorDir == "" {
		return fmt.Errorf("artifacts were resolved to a mirror folder but deploy was not told where it is: run `kube-aws render` again")
	}
	return forEach(ctx, uploadParallelism, files, func(ctx context.Context, f file) error {
		_, err := e.uploadFile(ctx, p, a, f.path, f.sum)
		return err
	})
}

// uploadFile puts a local file at <prefix>/assets/<sha256> unless an object
// is there already, and returns the key. want, when set, is the sha256 the
// file must have (what initialise found): a file changed since is refused,
// for the plans name the old content.
func (e *Engine) uploadFile(ctx context.Context, p *prepared, a *assets, name, want string) (string, error) {
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	size, err := io.Copy(h, f)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", name, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if want != "" && sum != want {
		return "", fmt.Errorf("%s changed since kube-aws read it (sha256 %s, was %s): run `kube-aws render` again", name, sum, want)
	}
	key := p.loc.key(nodeplan.AssetKey(sum))
	exists, err := e.objectExists(ctx, p.loc.Bucket, key)
	if err != nil {
		return "", fmt.Errorf("checking s3://%s/%s (%s): %w", p.loc.Bucket, key, name, err)
	}
	if exists {
		a.present.Add(1)
		return key, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return "", err
	}
	_, err = e.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(p.loc.Bucket), Key: aws.String(key), Body: f, ContentLength: aws.Int64(size)})
	if err != nil {
		return "", fmt.Errorf("uploading %s to s3://%s/%s: %w", name, p.loc.Bucket, key, err)
	}
	a.uploaded.Add(1)
	e.report(Event{Kind: EventUpload, Message: fmt.Sprintf("uploaded %s to s3://%s/%s", name, p.loc.Bucket, key)})
	return key, nil
}
