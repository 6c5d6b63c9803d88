// Package addons is the `addons` step of the controllers: once the API
// server answers, it installs the add-ons plan's Helm releases in order
// (the helm plugin's release list fetched, its secrets substituted, and the
// charts fetched from the assets by sha256 first, so a missing chart fails
// at once rather than after the wait), then server-side applies its
// manifests in order, each retried with backoff until the step's timeout;
// a second run changes nothing that is as planned.
package addons

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/cli"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/apply"
	"github.com/kube-aws/kube-aws/node/blob"
	"github.com/kube-aws/kube-aws/node/helmrelease"
	"github.com/kube-aws/kube-aws/node/retry"
	"github.com/kube-aws/kube-aws/node/secrets"
	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

// Options tune the step.
type Options struct {
	// Connect reaches the cluster with a kubeconfig (Connect on a machine).
	Connect func(kubeconfig string, logf func(string, ...any)) (Cluster, error)
	// APITimeout bounds the wait for the API server; ReleaseTimeout each
	// release (retries included) and each manifest.
	APITimeout, ReleaseTimeout time.Duration
	// Retry is how releases and manifests are retried.
	Retry retry.Policy
	// Environ is the machine's environment (os.Environ when nil): its AWS
	// endpoint settings go to the AWS environment ConfigMap.
	Environ func() []string
}

// DefaultReleaseTimeout bounds a release's install when the plan says no
// timeout: Helm's own default.
const DefaultReleaseTimeout = 5 * time.Minute

type release struct {
	plan   nodeplan.Release
	chart  *chart.Chart
	values map[string]any
}

// Run is the step.
func Run(ctx context.Context, e *agent.Env, o Options) error {
	var plan nodeplan.AddonsPlan
	if found, err := e.OptionalPlan(nodeplan.AddonsPath, &plan); err != nil || !found {
		return err
	}
	if plan.ReleasesFrom != "" {
		listed, err := releaseList(ctx, e, plan.ReleasesFrom)
		if err != nil {
			return err
		}
		plan.Releases = append(listed, plan.Releases...)
	}
	releases, err := prepare(ctx, e, plan)
	if err != nil {
		return err
	}
	manifests := make([][]apply.Object, len(plan.Manifests))
	for i, m := range plan.Manifests {
		b, err := os.ReadFile(e.Path(m.Path))
		if err != nil {
			return fmt.Errorf("manifests[%d]: %w", i, err)
		}
		if marker := nodeplan.MarkerPattern.Find(b); marker != nil {
			return agent.BadInput(fmt.Errorf("manifests[%d] %s still holds %s: list it in the secrets plan (%s)", i, m.Path, marker, nodeplan.SecretsPath))
		}
		if manifests[i], err = apply.Parse(b); err != nil {
			return agent.BadInput(fmt.Errorf("manifests[%d] %s%s: %w", i, m.Path, byPlugin(m.Plugin), err))
		}
	}

	cluster, err := o.Connect(e.Path(plan.Kubeconfig), e.Logf)
	if err != nil {
		return err
	}
	started := time.Now()
	wctx, cancel := context.WithTimeout(ctx, o.APITimeout)
	err = cluster.WaitReady(wctx)
	cancel()
	if err != nil {
		return fmt.Errorf("waiting for the API server: %w", err)
	}
	e.Logf("the API server is ready (waited %s)", time.Since(started).Round(time.Millisecond))

	applier, err := cluster.Applier()
	if err != nil {
		return err
	}
	env := awsEnv(e, o.Environ)
	err = attempt(ctx, e, o, "the AWS environment", o.ReleaseTimeout, func(ctx context.Context) error {
		_, err := applier.Apply(ctx, []apply.Object{env})
		return err
	})
	if err != nil {
		return fmt.Errorf("the AWS environment ConfigMap %s/%s: %w", names.AWSEnvNamespace, names.AWSEnvConfigMap, err)
	}
	e.Logf("ConfigMap %s/%s: the machine's AWS settings (%d) for the add-ons that call AWS", names.AWSEnvNamespace, names.AWSEnvConfigMap, len(env.Obj.Object["data"].(map[string]any)))

	for i, r := range releases {
		what := fmt.Sprintf("releases[%d]: %s", i, r.plan.Describe())
		timeout := nodeplan.DurationOr(r.plan.Timeout, DefaultReleaseTimeout)
		var outcome helmrelease.Outcome
		started := time.Now()
		err := attempt(ctx, e, o, what, o.ReleaseTimeout, func(ctx context.Context) error {
			cfg, err := cluster.Helm(r.plan.Namespace)
			if err != nil {
				return err
			}
			outcome, err = helmrelease.Ensure(cfg, helmrelease.Release{
				Name: r.plan.Name, Namespace: r.plan.Namespace, Chart: r.chart, ChartSHA256: r.plan.ChartSHA256,
				Values: r.values, Wait: r.plan.Wait, Timeout: timeout,
			}, time.Now())
			return err
		})
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		e.Logf("%s: %s (chart %s %s) in %s", what, outcome, r.chart.Name(), r.chart.Metadata.Version, time.Since(started).Round(time.Millisecond))
	}
	for i, objs := range manifests {
		m := plan.Manifests[i]
		what := fmt.Sprintf("manifests[%d]: %s%s", i, m.Path, byPlugin(m.Plugin))
		var n int
		err := attempt(ctx, e, o, what, o.ReleaseTimeout, func(ctx context.Context) error {
			var err error
			n, err = applier.Apply(ctx, objs)
			return err
		})
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		e.Logf("%s: %d objects applied", what, n)
	}
	return nil
}

// ListPath is where the step keeps the release list it fetched, its secrets
// substituted (so mode 0600), for a look at what was installed.
const ListPath = nodeplan.Dir + "/releases.json"

// maxList bounds the release list object.
const maxList = 8 << 20

// releaseList fetches the release list that from (a plan field naming
// facts) names, checks its sha256, and substitutes its markers with the
// role's secrets as JSON. A fact the bootstrap did not pass (the stack has
// no list: the helm plugin is disabled) means no list.
func releaseList(ctx context.Context, e *agent.Env, from string) ([]nodeplan.Release, error) {
	key, err := e.Facts.Expand(from)
	if err != nil {
		e.Logf("no release list: %v (the render had no charts/releases.json: is the helm plugin disabled?)", err)
		return nil, nil
	}
	sum, ok := nodeplan.KeyDigest(key)
	if !ok {
		return nil, agent.BadInput(fmt.Errorf("releasesFrom %s is not content-addressed (<prefix>/assets/<sha256>): kube-aws-node installs only what it can check", key))
	}
	var data []byte
	err = retry.Do(ctx, retry.Boot, func(ctx context.Context) error {
		var err error
		data, err = e.Store.GetVerified(ctx, key, sum, maxList)
		return err
	}, e.Retrying("fetching the release list"))
	if err != nil {
		return nil, fmt.Errorf("the release list s3://%s/%s: %w", e.Settings.Bucket, key, err)
	}
	if nodeplan.AnyMarkerPattern.Match(data) {
		if data, _, err = secrets.NewDecrypter(e).Substitute(ctx, ListPath, nodeplan.FormatJSON, data); err != nil {
			return nil, fmt.Errorf("the release list s3://%s/%s: %w", e.Settings.Bucket, key, err)
		}
	}
	var list nodeplan.ReleaseList
	if err := nodeplan.Decode(data, &list); err != nil {
		return nil, agent.BadInput(fmt.Errorf("the release list s3://%s/%s: %w", e.Settings.Bucket, key, err))
	}
	// Kept for a look at what was installed; it holds the secrets.
	if err := os.MkdirAll(filepath.Dir(e.Path(ListPath)), 0o755); err != nil {
		return nil, err
	}
	if err := fileutil.WriteAtomic(e.Path(ListPath), data, 0o600); err != nil {
		return nil, err
	}
	e.Logf("release list s3://%s/%s: %d releases, sha256 checked", e.Settings.Bucket, key, len(list.Releases))
	return list.Releases, nil
}

// prepare checks every release's values and fetches and loads its chart.
func prepare(ctx context.Context, e *agent.Env, plan nodeplan.AddonsPlan) ([]release, error) {
	out := make([]release, 0, len(plan.Releases))
	for i, r := range plan.Releases {
		what := fmt.Sprintf("releases[%d]: %s", i, r.Describe())
		if m := nodeplan.MarkerPattern.Find(r.Values); m != nil {
			return nil, agent.BadInput(fmt.Errorf("%s: values still hold %s: list %s in the secrets plan (format json) so the secrets step substitutes it first", what, m, nodeplan.AddonsPath))
		}
		values := map[string]any{}
		if len(r.Values) > 0 && string(r.Values) != "null" {
			if err := json.Unmarshal(r.Values, &values); err != nil {
				return nil, agent.BadInput(fmt.Errorf("%s: values: %v", what, err))
			}
		}
		var p string
		err := retry.Do(ctx, retry.Boot, func(ctx context.Context) error {
			var err error
			if r.Repository != "" {
				p, err = locate(e, r)
			} else {
				p, err = e.Store.Fetch(ctx, blob.Source{Key: e.Settings.Key(r.ChartKey), SHA256: r.ChartSHA256})
			}
			return err
		}, e.Retrying(what+": fetching the chart"))
		if err != nil {
			return nil, fmt.Errorf("%s: chart: %w", what, err)
		}
		ch, err := loader.Load(p)
		if err != nil {
			return nil, agent.BadInput(fmt.Errorf("%s: the chart %s does not load: %v", what, chartSource(r), err))
		}
		out = append(out, release{plan: r, chart: ch, values: values})
	}
	return out, nil
}

// awsEnv is the ConfigMap names.AWSEnvConfigMap: the region and the
// standard AWS SDK settings the machine has for reaching AWS (endpoints of a
// private or emulated AWS, the instance metadata service's address), so that
// an add-on calling AWS from a pod (the cloud controller manager) reaches it
// as the machine does: a pod does not inherit the machine's environment.
func awsEnv(e *agent.Env, environ func() []string) apply.Object {
	if environ == nil {
		environ = os.Environ
	}
	data := map[string]any{"AWS_REGION": e.Settings.Region}
	for _, kv := range environ() {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "AWS_ENDPOINT_URL") || k == "AWS_EC2_METADATA_SERVICE_ENDPOINT" || k == "AWS_USE_FIPS_ENDPOINT" || k == "AWS_USE_DUALSTACK_ENDPOINT" {
			data[k] = v
		}
	}
	return apply.Object{Obj: &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": names.AWSEnvConfigMap, "namespace": names.AWSEnvNamespace},
		"data":     data,
	}}}
}

// HelmCache is where charts from repositories and their indexes are kept.
const HelmCache = "/var/cache/kube-aws/helm"

// locate downloads a chart from its repository with Helm's own chart
// downloader (index, version constraint, digest check), as helm install
// --repo would.
func locate(e *agent.Env, r nodeplan.Release) (string, error) {
	settings := cli.New()
	settings.RepositoryCache = filepath.Join(e.Path(HelmCache), "repository")
	settings.RepositoryConfig = filepath.Join(e.Path(HelmCache), "repositories.yaml")
	opts := action.ChartPathOptions{RepoURL: r.Repository, Version: r.Version}
	return opts.LocateChart(r.Chart, settings)
}

func chartSource(r nodeplan.Release) string {
	if r.Repository != "" {
		return r.Chart + " " + r.Version + " from " + r.Repository
	}
	return r.ChartKey
}

// attempt retries fn until it succeeds or timeout passes, saying why it
// tries again.
func attempt(ctx context.Context, e *agent.Env, o Options, what string, timeout time.Duration, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return retry.Do(ctx, o.Retry, fn, func(n int, err error, d time.Duration) {
		if errors.Is(err, helmrelease.ErrBusy) {
			e.Logf("%s: %v; waiting %s", what, err, d.Round(time.Millisecond))
			return
		}
		e.Logf("%s: attempt %d failed: %v; trying again in %s", what, n, err, d.Round(time.Millisecond))
	})
}

func byPlugin(p string) string {
	if p == "" {
		return ""
	}
	return " (plugin " + p + ")"
}
