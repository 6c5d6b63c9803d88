package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/kube-aws/kube-aws/core/config"
	"github.com/kube-aws/kube-aws/core/kubeversion"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
)

// Result is what Deploy did.
type Result struct {
	// Deploy is the stage result: every stack deployed so far (in
	// dependency order) and the cluster outputs.
	Deploy stage.DeployResult `json:"deploy"`
	// Changed is true when any stack was created or updated.
	Changed bool `json:"changed"`
	// Uploaded counts objects put in S3 (assets and secrets); Present
	// counts those already there.
	Uploaded int `json:"uploaded"`
	Present  int `json:"present"`
	// Created, Updated and Unchanged name stacks by what happened to them.
	Created   []string `json:"created,omitempty"`
	Updated   []string `json:"updated,omitempty"`
	Unchanged []string `json:"unchanged,omitempty"`
	// Replaced counts the machines the roll replaced, per role.
	Replaced map[string]int `json:"replaced,omitempty"`
}

// Deploy uploads assets and sensitive values, then creates or updates every
// stack in dependency order, holding the cluster's deploy lock throughout.
// A rerun after a failed or interrupted Deploy resumes it. The Result is
// returned with the error too, holding the stacks that were deployed.
func (e *Engine) Deploy(ctx context.Context, t Target) (*Result, error) {
	ctx, cancel := e.run(ctx)
	defer cancel()
	p, err := e.prepare(t)
	if err != nil {
		return nil, err
	}
	release, err := e.lock(ctx, p, "deploy")
	if err != nil {
		return nil, err
	}
	defer release()

	// What runs now is checked before anything is uploaded: a refused
	// deploy leaves the bucket as it was.
	existing, orphans, err := e.survey(ctx, p)
	if err != nil {
		return nil, err
	}
	if err := checkVersionSkew(p.t.Cluster, existing[names.StackControlPlane]); err != nil {
		return nil, err
	}
	if ic := issuerChange(p.t.Cluster, existing[names.StackIAM]); ic != nil {
		if !t.AllowIssuerChange {
			return nil, ic
		}
		e.say("", "the service-account issuer changes from %s to %s (--allow-issuer-change): once this up is done, "+
			"restart every pod that talks to the API server", ic.From, ic.To)
	}

	if err := p.resolveNodeAgent(); err != nil {
		return nil, err
	}
	a, err := e.uploadAssets(ctx, p)
	if err != nil {
		return nil, err
	}
	if err := e.uploadNodeAgent(ctx, p, a); err != nil {
		return nil, err
	}
	if err := e.uploadMirror(ctx, p, a); err != nil {
		return nil, err
	}
	if err := e.uploadSecrets(ctx, p, a); err != nil {
		return nil, err
	}
	published, err := e.publishDiscovery(ctx, p, a.contents)
	if err != nil {
		return nil, err
	}
	a.uploaded.Add(int64(published))
	res := &Result{Deploy: stage.DeployResult{Outputs: map[string]string{}}}
	res.Uploaded, res.Present = int(a.uploaded.Load()), int(a.present.Load())
	if res.Uploaded > 0 {
		e.say("", "uploaded %d objects to s3://%s (%d already there)", res.Uploaded, p.loc.Bucket, res.Present)
	}

	for _, o := range orphans {
		e.say("", "stack %s of cluster %s is no longer rendered (a removed node pool?): up leaves it; delete it by hand, or kube-aws destroy removes it with the cluster", o, p.cluster)
	}

	var mu sync.Mutex
	outputs := map[string]map[string]string{}
	statuses := map[string]stage.StackStatus{}
	outcome := map[string]string{}
	get := func(stack string) (map[string]string, bool) {
		mu.Lock()
		defer mu.Unlock()
		o, ok := outputs[stack]
		return o, ok
	}
	err = p.graph.walk(ctx, e.opts.Parallelism, false, func(ctx context.Context, stack string) error {
		in, err := e.input(p, stack, a.keys, get, existing[stack] != nil)
		if err != nil {
			return err
		}
		o, err := e.deployStack(ctx, p, stack, in, existing[stack])
		if err != nil {
			return err
		}
		outs, err := e.stackOutputs(ctx, in.name, p.tmpl[stack], o.stack)
		if err != nil {
			return err
		}
		e.say(stack, "%s %s (%s)", o.action, in.name, o.stack.StackStatus)
		mu.Lock()
		defer mu.Unlock()
		outputs[stack] = outs
		outcome[stack] = o.action
		statuses[stack] = stage.StackStatus{
			Name: in.name, ID: aws.ToString(o.stack.StackId), Status: string(o.stack.StackStatus),
			Outputs: outs, Changed: o.changed,
		}
		return nil
	})
	for _, stack := range p.graph.order {
		st, ok := statuses[stack]
		if !ok {
			continue
		}
		res.Deploy.Stacks = append(res.Deploy.Stacks, st)
		switch outcome[stack] {
		case "created", "recreated":
			res.Created = append(res.Created, stack)
		case "updated":
			res.Updated = append(res.Updated, stack)
		default:
			res.Unchanged = append(res.Unchanged, stack)
		}
		res.Changed = res.Changed || st.Changed
	}
	liftOutputs(res.Deploy.Outputs, outputs)
	if err != nil {
		return res, fmt.Errorf("deploying cluster %s: %w", p.cluster, err)
	}
	// The stacks changed launch templates in place; the machines that run
	// an older one are replaced now, drained and gated (package roll).
	sum, err := e.rollCluster(ctx, p)
	if sum.Replaced > 0 {
		res.Replaced = sum.ByRole
		res.Changed = true
	}
	if err != nil {
		return res, fmt.Errorf("rolling cluster %s: %w", p.cluster, err)
	}
	return res, nil
}

// liftOutputs copies the stack outputs names.ClusterOutput knows (the API
// endpoint, say) to cluster outputs; control-plane wins over network, which
// wins over others.
func liftOutputs(dst map[string]string, outputs map[string]map[string]string) {
	stacks := make([]string, 0, len(outputs))
	for s := range outputs {
		stacks = append(stacks, s)
	}
	rank := func(s string) int {
		switch s {
		case names.StackControlPlane:
			return 0
		case names.StackNetwork:
			return 1
		}
		return 2
	}
	sort.Slice(stacks, func(i, j int) bool {
		if rank(stacks[i]) != rank(stacks[j]) {
			return rank(stacks[i]) < rank(stacks[j])
		}
		return stacks[i] < stacks[j]
	})
	for _, s := range stacks {
		keys := make([]string, 0, len(outputs[s]))
		for out := range outputs[s] {
			keys = append(keys, out)
		}
		sort.Strings(keys)
		for _, out := range keys {
			if name := names.ClusterOutput(out); name != "" {
				if _, set := dst[name]; !set {
					dst[name] = outputs[s][out]
				}
			}
		}
	}
}

// checkVersionSkew refuses, before anything changes, a kubernetesVersion
// the running cluster (the control-plane stack's KubernetesVersion output)
// may not move to: the upstream skew policy, as initialise checks it
// against the version this folder last deployed; here it is checked
// against AWS, whatever folder the up runs from.
func checkVersionSkew(c *config.Cluster, controlPlane *cftypes.Stack) error {
	if controlPlane == nil || c.KubernetesVersion == "" {
		return nil
	}
	running := ""
	for _, o := range controlPlane.Outputs {
		if aws.ToString(o.OutputKey) == names.OutputKubernetesVersion {
			running = aws.ToString(o.OutputValue)
		}
	}
	if running == "" {
		return nil
	}
	from, err := kubeversion.Parse(running)
	if err != nil {
		return nil // not a version kube-aws wrote: nothing to judge by
	}
	to, err := kubeversion.Parse(c.KubernetesVersion)
	if err != nil {
		return nil // initialise reported it
	}
	var se *kubeversion.SkewError
	if err := kubeversion.CheckUpgrade(from, to); errors.As(err, &se) {
		return &VersionSkewError{Skew: se}
	}
	return nil
}

// VersionSkewError is a kubernetesVersion the running cluster may not move
// to; Deploy changed nothing.
type VersionSkewError struct {
	Skew *kubeversion.SkewError
}

func (e *VersionSkewError) Error() string {
	return fmt.Sprintf("the cluster runs Kubernetes %s (the control-plane stack's %s output): %v; nothing was changed", e.Skew.From, names.OutputKubernetesVersion, e.Skew)
}

// issuerChange is, before any stack changes, a service-account issuer
// other than the one the running cluster's tokens carry (the iam stack's
// ServiceAccountIssuer output). The issuer is made from s3URI, so moving
// the cluster's bucket or prefix changes it: the new API servers would
// refuse every token the pods hold until the kubelet renews it (up to an
// hour), and pod roles would trust a new IAM OIDC provider.
func issuerChange(c *config.Cluster, iamStack *cftypes.Stack) *IssuerChangeError {
	if iamStack == nil {
		return nil
	}
	running := ""
	for _, o := range iamStack.Outputs {
		if aws.ToString(o.OutputKey) == names.OutputServiceAccountIssuer {
			running = aws.ToString(o.OutputValue)
		}
	}
	want, d := config.ServiceAccountIssuer(c)
	if running == "" || d != nil || want == running {
		return nil
	}
	return &IssuerChangeError{From: running, To: want, S3URI: c.S3URI}
}

// IssuerChangeError is a deploy that would change a running cluster's
// service-account issuer; Deploy changed no stack.
type IssuerChangeError struct {
	From, To, S3URI string
}

func (e *IssuerChangeError) Error() string {
	return fmt.Sprintf("s3URI %s would change the service-account issuer of the running cluster from %s to %s (the iam stack's %s output): "+
		"the new API servers would refuse the token of every pod until its kubelet renews it, up to an hour, and pod roles would trust a new IAM OIDC provider; no stack was changed",
		e.S3URI, e.From, e.To, names.OutputServiceAccountIssuer)
}

// Hint says how to go on.
func (e *IssuerChangeError) Hint() string {
	return "set s3URI back to the bucket and prefix of " + e.From + "; to move the cluster anyway, run again with --allow-issuer-change, " +
		"then restart every pod that talks to the API server (kubectl rollout restart for each Deployment and DaemonSet, kube-system included)"
}
