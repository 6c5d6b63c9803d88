// Package facts finds what a machine knows about itself (nodeplan.Facts):
// the instance facts from the instance metadata service (IMDSv2, through
// the SDK's client, which honours AWS_EC2_METADATA_SERVICE_ENDPOINT), and
// keeps them, with the facts the volumes step derives, in
// nodeplan.FactsPath for later steps and nodeplan.FactsEnvPath for units.
package facts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/feature/ec2/imds"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/envfile"
	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

// metadata maps each instance fact to its IMDS path.
var metadata = map[string]string{
	nodeplan.FactInstanceID:       "instance-id",
	nodeplan.FactPrivateIPv4:      "local-ipv4",
	nodeplan.FactHostname:         "local-hostname",
	nodeplan.FactAvailabilityZone: "placement/availability-zone",
	nodeplan.FactRegion:           "placement/region",
}

// FromIMDS reads the instance facts.
func FromIMDS(ctx context.Context, c *imds.Client) (nodeplan.Facts, error) {
	f := nodeplan.Facts{}
	for _, name := range nodeplan.InstanceFacts {
		out, err := c.GetMetadata(ctx, &imds.GetMetadataInput{Path: metadata[name]})
		if err != nil {
			return nil, fmt.Errorf("reading %s from the instance metadata service: %w", metadata[name], err)
		}
		b, err := io.ReadAll(out.Content)
		out.Content.Close()
		if err != nil {
			return nil, fmt.Errorf("reading %s from the instance metadata service: %w", metadata[name], err)
		}
		v := strings.TrimSpace(string(b))
		if v == "" {
			return nil, fmt.Errorf("the instance metadata service has an empty %s", metadata[name])
		}
		f[name] = v
	}
	return f, nil
}

// Load reads the facts kept under root; found is false when there are none.
func Load(root string) (f nodeplan.Facts, found bool, err error) {
	p := filepath.Join(root, nodeplan.FactsPath)
	b, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, false, fmt.Errorf("%s: %v", p, err)
	}
	return f, true, nil
}

// Save keeps the facts under root: JSON for steps, an environment file of
// KUBE_AWS_FACT_<NAME> variables for units.
func Save(root string, f nodeplan.Facts) error {
	names := make([]string, 0, len(f))
	for n := range f {
		names = append(names, n)
	}
	sort.Strings(names)
	pairs := make([][2]string, 0, len(names))
	for _, n := range names {
		pairs = append(pairs, [2]string{nodeplan.FactEnvName(n), f[n]})
	}
	b, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := fileutil.WriteAtomic(filepath.Join(root, nodeplan.FactsPath), append(b, '\n'), 0o644); err != nil {
		return err
	}
	return fileutil.WriteAtomic(filepath.Join(root, nodeplan.FactsEnvPath), envfile.Encode(pairs), 0o644)
}
