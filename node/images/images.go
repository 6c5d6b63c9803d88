// Package images puts container images into containerd's k8s.io namespace,
// where the kubelet (CRI) finds them, with ctr, the client that ships with
// containerd. ctr rather than containerd's Go client: it is always the
// daemon's own version (the image contract has containerd >= 1.6, whose
// API the 2.x Go client only partly speaks), and it keeps containerd's
// client libraries out of kube-aws-node, whose start-up time every step
// pays.
package images

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/kube-aws/kube-aws/node/command"
)

// Namespace is the containerd namespace of the kubelet's images.
const Namespace = "k8s.io"

// Client runs ctr.
type Client struct {
	// Run runs ctr (command.Exec on a machine).
	Run command.Runner
	// RunInput runs ctr with its stdin read from a reader;
	// command.ExecInput when nil.
	RunInput command.InputRunner
	// Address is containerd's socket; ctr's default
	// (/run/containerd/containerd.sock) when empty.
	Address string
}

func (c *Client) ctr(ctx context.Context, args ...string) (string, error) {
	return c.Run(ctx, "ctr", c.args(args...)...)
}

// args are ctr's arguments: the namespace and socket, then args.
func (c *Client) args(args ...string) []string {
	global := []string{"--namespace", Namespace}
	if c.Address != "" {
		global = append(global, "--address", c.Address)
	}
	return append(global, args...)
}

// Digests lists the images containerd has, each name with its target
// digest (an index or manifest digest).
func (c *Client) Digests(ctx context.Context) (map[string]string, error) {
	out, err := c.ctr(ctx, "images", "list")
	if err != nil {
		return nil, err
	}
	// REF TYPE DIGEST SIZE PLATFORMS LABELS, one image per line after the
	// header; SIZE has a space in it ("3.2 MiB"), but REF and DIGEST come
	// first.
	m := map[string]string{}
	for i, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if i == 0 || len(f) < 3 {
			continue
		}
		m[f[0]] = f[2]
	}
	return m, nil
}

// Import imports an image archive (docker-archive or OCI) read from r for
// platform ("linux/amd64") and unpacks it, under the names the archive
// gives it. It returns the names ctr reported unpacking, also with an
// error. ctr creates the images only once it has read the archive's end,
// so a reader that fails before then leaves none.
func (c *Client) Import(ctx context.Context, r io.Reader, platform string) ([]string, error) {
	run := c.RunInput
	if run == nil {
		run = command.ExecInput
	}
	out, err := run(ctx, r, "ctr", c.args("images", "import", "--platform", platform, "-")...)
	// Names even on a failure: a reader that failed after ctr named the
	// images leaves them named.
	return unpacked(out), err
}

// unpacked reads the names off ctr import's "unpacking <name> (<digest>)...done"
// lines.
func unpacked(out string) []string {
	var names []string
	for _, line := range strings.Split(out, "\n") {
		rest, ok := strings.CutPrefix(line, "unpacking ")
		if !ok {
			continue
		}
		if name, _, ok := strings.Cut(rest, " (sha256:"); ok {
			names = append(names, name)
		}
	}
	return names
}

// Remove removes images by name (not their content, which containerd's
// garbage collector takes once nothing refers to it).
func (c *Client) Remove(ctx context.Context, names ...string) error {
	_, err := c.ctr(ctx, append([]string{"images", "rm"}, names...)...)
	return err
}

// Pull pulls repo@digest for platform and names it ref too.
func (c *Client) Pull(ctx context.Context, repo, digest, ref, platform string) error {
	pinned := repo + "@" + digest
	if _, err := c.ctr(ctx, "images", "pull", "--platform", platform, pinned); err != nil {
		return err
	}
	if _, err := c.ctr(ctx, "images", "tag", "--force", pinned, ref); err != nil {
		return fmt.Errorf("naming %s %s: %w", pinned, ref, err)
	}
	return nil
}
