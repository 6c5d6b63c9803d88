// Package awsops is the AWS side of the kube-aws commands that the plugin
// protocol cannot carry (diff and destroy): it reads an OpRequest, runs the
// deploy engine and writes progress lines and one result as OpMessages.
//
// It links the AWS SDK, which costs every process that links it several
// milliseconds of package init and a few MB of RSS (docs/design.md), so it
// runs in its own small executable, kube-aws-ops, and kube-aws itself stays
// free of it. Only stages.runOp starts that executable.
package awsops

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/kube-aws/kube-aws/builtin/deploy/engine"
	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/stages"
)

// Main serves one request from in, writing messages to out. It returns the
// process exit code: 0 when a result was written, 1 when an error was.
func Main(ctx context.Context, in io.Reader, out io.Writer) int {
	var mu sync.Mutex
	enc := json.NewEncoder(out)
	send := func(m stages.OpMessage) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(m)
	}
	res, err := serve(ctx, in, func(line string) { send(stages.OpMessage{Log: line}) })
	if err != nil {
		send(stages.OpMessage{Error: err.Error()})
		return 1
	}
	b, err := json.Marshal(res)
	if err != nil {
		send(stages.OpMessage{Error: err.Error()})
		return 1
	}
	send(stages.OpMessage{Result: b})
	return 0
}

func serve(ctx context.Context, in io.Reader, progress func(string)) (any, error) {
	var req stages.OpRequest
	if err := json.NewDecoder(in).Decode(&req); err != nil {
		return nil, fmt.Errorf("kube-aws-ops: reading the request on stdin: %w (this helper is started by kube-aws, not by hand)", err)
	}
	var c config.Cluster
	if err := json.Unmarshal(req.Cluster, &c); err != nil {
		return nil, fmt.Errorf("kube-aws-ops: decoding the cluster configuration: %w", err)
	}
	if req.Rendered == nil {
		return nil, fmt.Errorf("kube-aws-ops: no render output given: run kube-aws render first")
	}
	if !filepath.IsAbs(req.Rendered.Dir) {
		return nil, fmt.Errorf("kube-aws-ops: render output folder %q is not absolute", req.Rendered.Dir)
	}
	opts := engine.Options{
		Region:      req.AWS.Region,
		Profile:     req.AWS.Profile,
		EndpointURL: req.AWS.EndpointURL,
		Timeout:     req.AWS.Timeout,
		Reporter:    engine.ReporterFunc(func(ev engine.Event) { progress(ev.String()) }),
	}
	if opts.Region == "" {
		opts.Region = c.Region
	}
	if opts.EndpointURL == "" {
		// As the deploy plugin: an emulator set in the environment.
		opts.EndpointURL = os.Getenv("KUBE_AWS_ENDPOINT_URL")
	}
	e, err := engine.New(ctx, opts)
	if err != nil {
		return nil, err
	}
	t := engine.Target{Cluster: &c, Rendered: req.Rendered}
	switch req.Op {
	case stages.OpDiff:
		return e.Diff(ctx, t)
	case stages.OpDestroy:
		if req.AWS.ForceUnlock {
			if err := e.Unlock(ctx, &c); err != nil {
				return nil, err
			}
		}
		return e.Destroy(ctx, t)
	default:
		return nil, fmt.Errorf("kube-aws-ops: unknown operation %q (want %s or %s)", req.Op, stages.OpDiff, stages.OpDestroy)
	}
}
