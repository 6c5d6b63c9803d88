// Package addons is the `addons` step of the controllers: once the API
// server answers, it installs the add-ons plan's Helm releases in order
// (the helm plugin's release list fetched, its secrets substituted, and the
// charts fetched from the assets by sha256 first, so a missing chart fails
// at once rather than after the wait), then server-side applies its
// manifests in order, each retried with backoff until the step's timeout;
// a second run changes nothing that is as planned (package helmrelease
// leaves a release deployed from the same chart with the same values).
package addons

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
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
	"github.com/kube-aws/kube-aws/node/awsenv"
	"github.com/kube-aws/kube-aws/node/blob"
	"github.com/kube-aws/kube-aws/node/helmrelease"
	"github.com/kube-aws/kube-aws/node/retry"
	"github.com/kube-aws/kube-aws/node/step"
	"github.com/kube-aws/kube-aws/node/steps/secrets"
	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

// Step is the step.
type Step struct {
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
	// WebhookHealth replaces the pod identity webhook's address (tests).
	WebhookHealth string
}

// New is the step as kube-aws-node runs it.
func New() *Step {
	return &Step{Connect: Connect, Retry: retry.Policy{Initial: time.Second, Max: 30 * time.Second, Factor: 2, Jitter: 0.2}}
}

func (*Step) Name() string { return nodeplan.StepAddons }

func (s *Step) Flags(fs *flag.FlagSet) {
	fs.DurationVar(&s.APITimeout, "api-timeout", 20*time.Minute, "how long to wait for the API server")
	fs.DurationVar(&s.ReleaseTimeout, "release-timeout", 15*time.Minute, "how long each release or manifest may take, retries included")
}

// DefaultReleaseTimeout bounds a release's install when the plan says no
// timeout: Helm's own default.
const DefaultReleaseTimeout = 5 * time.Minute

// The data of the step's changes.
type (
	// listFile is the release list to keep at ListPath.
	listFile []byte
	// apiServer is the API server to wait for, by a kubeconfig.
	apiServer string
	// release is a release to install or upgrade, unless it is deployed
	// from the same chart with the same values.
	release struct {
		field  string
		plan   nodeplan.Release
		values map[string]any
		chart  *chart.Chart
	}
	// manifest is a manifest's objects to apply.
	manifest struct {
		field   string
		objects []apply.Object
	}
)

// Check reads the plan, the release list it names and the manifests, and
// says what the step installs once the API server answers: the AWS
// environment ConfigMap, every release (Helm leaves one deployed from the
// same chart with the same values as it is), every manifest (server-side
// apply changes nothing that is as applied).
func (s *Step) Check(ctx context.Context, e *agent.Env) (step.Changes, error) {
	var plan nodeplan.AddonsPlan
	if found, err := e.OptionalPlan(nodeplan.AddonsPath, &plan); err != nil || !found {
		return nil, err
	}
	var changes step.Changes
	if plan.ReleasesFrom != "" {
		listed, data, err := releaseList(ctx, e, plan.ReleasesFrom)
		if err != nil {
			return nil, err
		}
		if data != nil {
			changes = append(changes, step.Change{Action: "write", Target: ListPath, Detail: fmt.Sprintf("the release list, %d releases, its secrets substituted", len(listed)), Data: listFile(data)})
		}
		plan.Releases = append(listed, plan.Releases...)
	}
	changes = append(changes, step.Change{Action: "wait", Target: "the API server", Detail: fmt.Sprintf("until it is ready, with %s, up to %s", plan.Kubeconfig, s.APITimeout), Data: apiServer(plan.Kubeconfig)})
	env := awsEnv(e, s.Environ)
	changes = append(changes, step.Change{Action: "apply", Target: fmt.Sprintf("ConfigMap %s/%s", names.AWSEnvNamespace, names.AWSEnvConfigMap),
		Detail: fmt.Sprintf("the machine's AWS settings (%d) for the add-ons that call AWS", len(env.Obj.Object["data"].(map[string]any))), Data: env})
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
		changes = append(changes, step.Change{Action: "install", Target: r.Describe(), Detail: "chart " + chartSource(r) + ", unless deployed from it with the same values",
			Data: &release{field: what, plan: r, values: values}})
	}
	for i, m := range plan.Manifests {
		b, err := os.ReadFile(e.Path(m.Path))
		if err != nil {
			return nil, fmt.Errorf("manifests[%d]: %w", i, err)
		}
		if marker := nodeplan.MarkerPattern.Find(b); marker != nil {
			return nil, agent.BadInput(fmt.Errorf("manifests[%d] %s still holds %s: list it in the secrets plan (%s)", i, m.Path, marker, nodeplan.SecretsPath))
		}
		objects, err := apply.Parse(b)
		if err != nil {
			return nil, agent.BadInput(fmt.Errorf("manifests[%d] %s%s: %w", i, m.Path, byPlugin(m.Plugin), err))
		}
		changes = append(changes, step.Change{Action: "apply", Target: m.Path + byPlugin(m.Plugin), Detail: fmt.Sprintf("%d objects, server-side", len(objects)),
			Data: &manifest{field: fmt.Sprintf("manifests[%d]: %s%s", i, m.Path, byPlugin(m.Plugin)), objects: objects}})
	}
	return changes, nil
}

// Apply keeps the release list, fetches and loads every chart (a missing
// chart fails at once rather than after the wait), waits for the API
// server (and, where it runs, the pod identity webhook), then applies the
// AWS environment, installs the releases and
// applies the manifests, in order, each retried until ReleaseTimeout.
func (s *Step) Apply(ctx context.Context, e *agent.Env, changes step.Changes) error {
	var kubeconfig apiServer
	for _, c := range changes {
		switch d := c.Data.(type) {
		case listFile:
			// Kept for a look at what was installed; it holds the secrets.
			if err := os.MkdirAll(filepath.Dir(e.Path(ListPath)), 0o755); err != nil {
				return err
			}
			if err := fileutil.WriteAtomic(e.Path(ListPath), d, 0o600); err != nil {
				return err
			}
		case apiServer:
			kubeconfig = d
		case *release:
			if err := loadChart(ctx, e, d); err != nil {
				return err
			}
		}
	}

	cluster, err := s.Connect(e.Path(string(kubeconfig)), e.Logf)
	if err != nil {
		return err
	}
	started := time.Now()
	wctx, cancel := context.WithTimeout(ctx, s.APITimeout)
	err = cluster.WaitReady(wctx)
	cancel()
	if err != nil {
		return fmt.Errorf("waiting for the API server: %w", err)
	}
	e.Logf("the API server is ready (waited %s)", time.Since(started).Round(time.Millisecond))
	if err := s.waitWebhook(ctx, e); err != nil {
		return err
	}

	applier, err := cluster.Applier()
	if err != nil {
		return err
	}
	for _, c := range changes {
		switch d := c.Data.(type) {
		case apply.Object:
			err := s.attempt(ctx, e, "the AWS environment", func(ctx context.Context) error {
				_, err := applier.Apply(ctx, []apply.Object{d})
				return err
			})
			if err != nil {
				return fmt.Errorf("the AWS environment %s: %w", c.Target, err)
			}
			e.Logf("%s: %s", c.Target, c.Detail)
		case *release:
			if err := s.install(ctx, e, cluster, d); err != nil {
				return err
			}
		case *manifest:
			var n int
			err := s.attempt(ctx, e, d.field, func(ctx context.Context) error {
				var err error
				n, err = applier.Apply(ctx, d.objects)
				return err
			})
			if err != nil {
				return fmt.Errorf("%s: %w", d.field, err)
			}
			e.Logf("%s: %d objects applied", d.field, n)
		}
	}
	return nil
}

// install installs or upgrades a release, or leaves it as it is.
func (s *Step) install(ctx context.Context, e *agent.Env, cluster Cluster, r *release) error {
	timeout := nodeplan.DurationOr(r.plan.Timeout, DefaultReleaseTimeout)
	var outcome helmrelease.Outcome
	started := time.Now()
	err := s.attempt(ctx, e, r.field, func(ctx context.Context) error {
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
		return fmt.Errorf("%s: %w", r.field, err)
	}
	e.Logf("%s: %s (chart %s %s) in %s", r.field, outcome, r.chart.Name(), r.chart.Metadata.Version, time.Since(started).Round(time.Millisecond))
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
// no list: the helm plugin is disabled) means no list. It returns the
// releases and the list's content, to keep at ListPath.
func releaseList(ctx context.Context, e *agent.Env, from string) ([]nodeplan.Release, []byte, error) {
	key, err := e.Facts.Expand(from)
	if err != nil {
		e.Logf("no release list: %v (the render had no charts/releases.json: is the helm plugin disabled?)", err)
		return nil, nil, nil
	}
	sum, ok := nodeplan.KeyDigest(key)
	if !ok {
		return nil, nil, agent.BadInput(fmt.Errorf("releasesFrom %s is not content-addressed (<prefix>/assets/<sha256>): kube-aws-node installs only what it can check", key))
	}
	var data []byte
	err = retry.Do(ctx, retry.Boot, func(ctx context.Context) error {
		var err error
		data, err = e.Store.GetVerified(ctx, key, sum, maxList)
		return err
	}, e.Retrying("fetching the release list"))
	if err != nil {
		return nil, nil, fmt.Errorf("the release list s3://%s/%s: %w", e.Settings.Bucket, key, err)
	}
	if nodeplan.AnyMarkerPattern.Match(data) {
		if data, _, err = secrets.NewDecrypter(e).Substitute(ctx, ListPath, nodeplan.FormatJSON, data); err != nil {
			return nil, nil, fmt.Errorf("the release list s3://%s/%s: %w", e.Settings.Bucket, key, err)
		}
	}
	var list nodeplan.ReleaseList
	if err := nodeplan.Decode(data, &list); err != nil {
		return nil, nil, agent.BadInput(fmt.Errorf("the release list s3://%s/%s: %w", e.Settings.Bucket, key, err))
	}
	e.Logf("release list s3://%s/%s: %d releases, sha256 checked", e.Settings.Bucket, key, len(list.Releases))
	return list.Releases, data, nil
}

// loadChart fetches a release's chart (by sha256 from the assets, or from
// its repository) and loads it.
func loadChart(ctx context.Context, e *agent.Env, r *release) error {
	var p string
	err := retry.Do(ctx, retry.Boot, func(ctx context.Context) error {
		var err error
		if r.plan.Repository != "" {
			p, err = locate(e, r.plan)
		} else {
			p, err = e.Store.Fetch(ctx, blob.Source{Key: e.Settings.Key(r.plan.ChartKey), SHA256: r.plan.ChartSHA256})
		}
		return err
	}, e.Retrying(r.field+": fetching the chart"))
	if err != nil {
		return fmt.Errorf("%s: chart: %w", r.field, err)
	}
	if r.chart, err = loader.Load(p); err != nil {
		return agent.BadInput(fmt.Errorf("%s: the chart %s does not load: %v", r.field, chartSource(r.plan), err))
	}
	return nil
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
	for k, v := range awsenv.Forwarded(environ()) {
		data[k] = v
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

// attempt retries fn until it succeeds or ReleaseTimeout passes, saying
// why it tries again.
func (s *Step) attempt(ctx context.Context, e *agent.Env, what string, fn func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, s.ReleaseTimeout)
	defer cancel()
	return retry.Do(ctx, s.Retry, fn, func(n int, err error, d time.Duration) {
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
