package sdk

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/stage"
)

// Input is a stage call with what every plugin decodes first already
// decoded: cluster.yaml (defaults applied, secrets as markers) and this
// plugin's values in its own type V. The Request stays reachable for
// everything else (constructs, render output, deploy result, host services).
type Input[V any] struct {
	*Request
	Cluster *config.Cluster
	// Values are this plugin's cluster-level values (plugins.<name>.values);
	// the zero V when cluster.yaml gives none.
	Values V
}

// Decode decodes the cluster and this plugin's cluster-level values of a
// request into V. Typed does it for every stage call; call it yourself only
// from a plugin written against *Request.
func Decode[V any](req *Request) (*Input[V], error) {
	c, err := req.Cluster()
	if err != nil {
		return nil, err
	}
	in := &Input[V]{Request: req, Cluster: c}
	if err := req.DecodeValues(&in.Values); err != nil {
		return nil, err
	}
	return in, nil
}

// NodePool decodes this plugin's values for one node pool: the pool's
// nodePools[].plugins.<name>.values merged over the cluster-level values by
// kube-aws. A pool without values of its own gets the cluster-level ones.
func (in *Input[V]) NodePool(pool string) (V, error) {
	raw, ok := in.Request.Values[in.Plugin].NodePools[pool]
	if !ok || len(raw) == 0 {
		return in.Values, nil
	}
	var v V
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, fmt.Errorf("decoding values of plugin %s for node pool %s: %w", in.Plugin, pool, err)
	}
	return v, nil
}

// NodePools decodes this plugin's values for every node pool of the
// cluster, by pool name (see NodePool).
func (in *Input[V]) NodePools() (map[string]V, error) {
	out := make(map[string]V, len(in.Cluster.NodePools))
	for _, p := range in.Cluster.NodePools {
		v, err := in.NodePool(p.Name)
		if err != nil {
			return nil, err
		}
		out[p.Name] = v
	}
	return out, nil
}

// The stage interfaces of a plugin written with Typed: the same as
// Initialiser, Renderer... but taking the decoded Input.
type (
	TypedInitialiser[V any] interface {
		Initialise(ctx context.Context, in *Input[V]) (*stage.Result, error)
	}
	TypedRenderer[V any] interface {
		Render(ctx context.Context, in *Input[V]) (*stage.Result, error)
	}
	TypedDeployer[V any] interface {
		Deploy(ctx context.Context, in *Input[V]) (*stage.Result, error)
	}
	TypedValidator[V any] interface {
		Validate(ctx context.Context, in *Input[V]) (*stage.Result, error)
	}
	TypedDiffer[V any] interface {
		Diff(ctx context.Context, in *Input[V]) (*stage.Result, error)
	}
	TypedDestroyer[V any] interface {
		Destroy(ctx context.Context, in *Input[V]) (*stage.Result, error)
	}
	TypedAdminCredentialProvider[V any] interface {
		AdminCredential(ctx context.Context, in *Input[V]) (*stage.Result, error)
	}
)

// Typed serves p, whose stage methods take *Input[V] (TypedInitialiser,
// TypedRenderer...) instead of *Request: before each of them runs, the
// cluster and the plugin's values are decoded into the Input, so a plugin
// never repeats that preamble. p's Info is served as it is; Serve fills
// Stages from the typed methods p has.
//
//	type values struct{ Greeting string `json:"greeting"` }
//	type hello struct{}
//	func (hello) Info() stage.PluginInfo { ... }
//	func (hello) Initialise(ctx context.Context, in *sdk.Input[values]) (*stage.Result, error) {
//		// in.Cluster, in.Values.Greeting
//	}
//	func main() { sdk.Serve(sdk.Typed[values](hello{})) }
func Typed[V any](p Plugin) Plugin {
	t := &typed[V]{p: p, fns: map[stage.Name]func(context.Context, *Input[V]) (*stage.Result, error){}}
	if i, ok := p.(TypedInitialiser[V]); ok {
		t.add(stage.Initialise, i.Initialise)
	}
	if r, ok := p.(TypedRenderer[V]); ok {
		t.add(stage.Render, r.Render)
	}
	if d, ok := p.(TypedDeployer[V]); ok {
		t.add(stage.Deploy, d.Deploy)
	}
	if v, ok := p.(TypedValidator[V]); ok {
		t.add(stage.Validate, v.Validate)
	}
	if d, ok := p.(TypedDiffer[V]); ok {
		t.add(stage.Diff, d.Diff)
	}
	if d, ok := p.(TypedDestroyer[V]); ok {
		t.add(stage.Destroy, d.Destroy)
	}
	if a, ok := p.(TypedAdminCredentialProvider[V]); ok {
		t.add(stage.AdminCredential, a.AdminCredential)
	}
	return t
}

// typed adapts a plugin with typed stage methods to the Request-based
// interfaces. It has every stage method; implemented() says which are real.
type typed[V any] struct {
	p      Plugin
	stages []stage.Name
	fns    map[stage.Name]func(context.Context, *Input[V]) (*stage.Result, error)
}

func (t *typed[V]) add(name stage.Name, fn func(context.Context, *Input[V]) (*stage.Result, error)) {
	t.stages = append(t.stages, name)
	t.fns[name] = fn
}

// stageLister is a plugin that knows which of its stage methods are real
// better than its method set does (typed has them all).
type stageLister interface {
	implemented() []stage.Name
}

func (t *typed[V]) implemented() []stage.Name { return t.stages }

func (t *typed[V]) Info() stage.PluginInfo { return t.p.Info() }

// Registered passes registration on when p listens for it.
func (t *typed[V]) Registered(reg stage.Registration) {
	if o, ok := t.p.(RegistrationObserver); ok {
		o.Registered(reg)
	}
}

// run decodes the input and calls p's method for req.Stage (Call picks
// the Request-based method by req.Stage too, so they agree).
func (t *typed[V]) run(ctx context.Context, req *Request) (*stage.Result, error) {
	fn := t.fns[req.Stage]
	if fn == nil {
		return nil, notImplemented(req, t)
	}
	in, err := Decode[V](req)
	if err != nil {
		return nil, err
	}
	return fn(ctx, in)
}

func (t *typed[V]) Initialise(ctx context.Context, req *Request) (*stage.Result, error) {
	return t.run(ctx, req)
}
func (t *typed[V]) Render(ctx context.Context, req *Request) (*stage.Result, error) {
	return t.run(ctx, req)
}
func (t *typed[V]) Deploy(ctx context.Context, req *Request) (*stage.Result, error) {
	return t.run(ctx, req)
}
func (t *typed[V]) Validate(ctx context.Context, req *Request) (*stage.Result, error) {
	return t.run(ctx, req)
}
func (t *typed[V]) Diff(ctx context.Context, req *Request) (*stage.Result, error) {
	return t.run(ctx, req)
}
func (t *typed[V]) Destroy(ctx context.Context, req *Request) (*stage.Result, error) {
	return t.run(ctx, req)
}
func (t *typed[V]) AdminCredential(ctx context.Context, req *Request) (*stage.Result, error) {
	return t.run(ctx, req)
}

// NoValues is V for a plugin that takes no values. Whatever cluster.yaml
// gives is ignored, as the host ignores values of a plugin without a schema.
type NoValues struct{}

// UnmarshalJSON ignores the values.
func (*NoValues) UnmarshalJSON([]byte) error { return nil }
