package stages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/merge"
)

// DefaultDeps binds the pipeline to core/config, core/merge and plugins/host.
func DefaultDeps() Deps {
	return Deps{
		LoadConfig: loadConfig,
		Discover: func(string, []string) ([]Candidate, error) {
			return nil, errors.New("plugins/host is not available in this build")
		},
		Launch: func(context.Context, []Candidate, LaunchOptions) ([]Plugin, error) {
			return nil, errors.New("plugins/host is not available in this build")
		},
		Merge: func(cs []Contribution) (*construct.Set, diag.List) {
			mc := make([]merge.Contribution, len(cs))
			for i, c := range cs {
				mc[i] = merge.Contribution{Plugin: c.Plugin, Set: c.Set}
			}
			return merge.Merge(mc)
		},
	}
}

func loadConfig(path string) (*Loaded, diag.List, error) {
	c, diags, err := config.Load(path)
	if err != nil {
		return nil, diags, err
	}
	config.ApplyDefaults(c)
	b, err := json.Marshal(c)
	if err != nil {
		return nil, diags, fmt.Errorf("encoding configuration: %w", err)
	}
	h, err := ConfigHash(path, c)
	if err != nil {
		return nil, diags, err
	}
	return &Loaded{Path: path, Dir: filepath.Dir(path), Cluster: c, JSON: b, Hash: h}, diags, nil
}
