package helmrelease

import (
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	kubefake "helm.sh/helm/v3/pkg/kube/fake"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage"
	"helm.sh/helm/v3/pkg/storage/driver"
	helmtime "helm.sh/helm/v3/pkg/time"
	"k8s.io/client-go/kubernetes/fake"
)

// store keeps releases as Secrets, as on a cluster, in a fake clientset:
// every reader gets its own copy, as two controllers do.
func store() *storage.Storage {
	return storage.Init(driver.NewSecrets(fake.NewClientset().CoreV1().Secrets("apps")))
}

// config is Helm's configuration with the releases in s and a kube client
// that accepts everything (or fails as told), as Helm's own tests use.
func config(t *testing.T, store *storage.Storage, kc *kubefake.FailingKubeClient) *action.Configuration {
	t.Helper()
	return &action.Configuration{
		Releases: store, KubeClient: kc, Capabilities: chartutil.DefaultCapabilities,
		Log: func(string, ...any) {},
	}
}

func testChart(version string) *chart.Chart {
	return &chart.Chart{
		Metadata: &chart.Metadata{APIVersion: "v2", Name: "greeter", Version: version},
		Templates: []*chart.File{{Name: "templates/cm.yaml", Data: []byte(
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  greeting: {{ .Values.greeting | quote }}\n")}},
		Values: map[string]any{"greeting": "hello"},
	}
}

func rel(sum, greeting string) Release {
	return Release{Name: "greeter", Namespace: "apps", Chart: testChart("0.1.0"), ChartSHA256: sum,
		Values: map[string]any{"greeting": greeting, "replicas": 2}, Timeout: time.Minute}
}

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

const sumA, sumB = "aaaa", "bbbb"

func TestEnsure(t *testing.T) {
	// setLast changes the newest revision's status and time, as a run that
	// died would leave it.
	setLast := func(st release.Status, age time.Duration) func(t *testing.T, s *storage.Storage) {
		return func(t *testing.T, s *storage.Storage) {
			last, err := s.Last("greeter")
			if err != nil {
				t.Fatal(err)
			}
			last.Info.Status = st
			last.Info.LastDeployed = helmtime.Time{Time: now.Add(-age)}
			if err := s.Update(last); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		name      string
		before    func(t *testing.T, s *storage.Storage)
		release   Release
		want      Outcome
		wantErr   error
		revisions int
		status    release.Status
	}{
		{name: "unchanged", release: rel(sumA, "hi"), want: Unchanged, revisions: 1, status: release.StatusDeployed},
		{name: "values changed", release: rel(sumA, "bonjour"), want: Upgraded, revisions: 2, status: release.StatusDeployed},
		{name: "chart changed", release: rel(sumB, "hi"), want: Upgraded, revisions: 2, status: release.StatusDeployed},
		{name: "another installer at work", before: setLast(release.StatusPendingInstall, time.Minute), release: rel(sumA, "hi"), wantErr: ErrBusy, revisions: 1, status: release.StatusPendingInstall},
		{name: "install that died", before: setLast(release.StatusPendingInstall, time.Hour), release: rel(sumA, "hi"), want: Upgraded, revisions: 2, status: release.StatusDeployed},
		{name: "upgrade that died", before: setLast(release.StatusPendingUpgrade, time.Hour), release: rel(sumA, "hi"), want: Upgraded, revisions: 2, status: release.StatusDeployed},
		{name: "failed", before: setLast(release.StatusFailed, 0), release: rel(sumA, "hi"), want: Upgraded, revisions: 2, status: release.StatusDeployed},
		{name: "uninstalled, history kept", before: setLast(release.StatusUninstalled, 0), release: rel(sumA, "hi"), want: Installed, revisions: 2, status: release.StatusDeployed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := store()
			cfg := config(t, s, &kubefake.FailingKubeClient{PrintingKubeClient: kubefake.PrintingKubeClient{Out: io.Discard}})
			if got, err := Ensure(cfg, rel(sumA, "hi"), now); err != nil || got != Installed {
				t.Fatalf("first install: %v %v", got, err)
			}
			if tt.before != nil {
				tt.before(t, s)
			}
			got, err := Ensure(cfg, tt.release, now)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
			} else if err != nil || got != tt.want {
				t.Fatalf("Ensure = %v, %v; want %v", got, err, tt.want)
			}
			all, _ := s.History("greeter")
			last, _ := s.Last("greeter")
			if len(all) != tt.revisions || last.Info.Status != tt.status {
				t.Errorf("%d revisions, last %s; want %d, %s", len(all), last.Info.Status, tt.revisions, tt.status)
			}
			if tt.wantErr == nil && (last.Config["greeting"] != tt.release.Values["greeting"] || !strings.Contains(last.Info.Description, tt.release.ChartSHA256)) {
				t.Errorf("deployed config %v, description %q", last.Config, last.Info.Description)
			}
			if tt.want == Installed && last.Namespace != "apps" {
				t.Errorf("namespace %q", last.Namespace)
			}
		})
	}
}

// A failure from the cluster is returned; the next attempt installs.
func TestEnsureAfterFailure(t *testing.T) {
	s := store()
	kc := &kubefake.FailingKubeClient{PrintingKubeClient: kubefake.PrintingKubeClient{Out: io.Discard}, CreateError: errors.New("connection refused")}
	cfg := config(t, s, kc)
	if _, err := Ensure(cfg, rel(sumA, "hi"), now); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("err = %v", err)
	}
	kc.CreateError = nil
	// The namespace could not be made, so nothing was recorded: the next
	// run installs.
	if got, err := Ensure(cfg, rel(sumA, "hi"), now); err != nil || got != Installed {
		t.Fatalf("second attempt: %v %v", got, err)
	}
	// A failure once the release is recorded: the next run upgrades it.
	kc.UpdateError = errors.New("etcdserver: request timed out")
	if _, err := Ensure(cfg, rel(sumA, "changed"), now); err == nil {
		t.Fatal("upgrade succeeded despite the failure")
	}
	kc.UpdateError = nil
	if last, _ := s.Last("greeter"); last.Info.Status != release.StatusFailed {
		t.Fatalf("last revision %s", last.Info.Status)
	}
	if got, err := Ensure(cfg, rel(sumA, "hi"), now); err != nil || got != Upgraded {
		t.Fatalf("after the failed upgrade: %v %v", got, err)
	}
	if got, _ := Ensure(cfg, rel(sumA, "hi"), now); got != Unchanged {
		t.Errorf("third attempt: %v", got)
	}
}

// Two controllers install the same release at once: one installs, the
// other fails or finds it busy, and its retry finds it unchanged.
func TestEnsureConcurrent(t *testing.T) {
	s := store()
	var wg sync.WaitGroup
	results := make([]Outcome, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := config(t, s, &kubefake.FailingKubeClient{PrintingKubeClient: kubefake.PrintingKubeClient{Out: io.Discard}})
			results[i], errs[i] = Ensure(cfg, rel(sumA, "hi"), time.Now())
		}()
	}
	wg.Wait()
	if errs[0] != nil && errs[1] != nil {
		t.Fatalf("both failed: %v", errs)
	}
	cfg := config(t, s, &kubefake.FailingKubeClient{PrintingKubeClient: kubefake.PrintingKubeClient{Out: io.Discard}})
	got, err := Ensure(cfg, rel(sumA, "hi"), time.Now())
	if err != nil || got != Unchanged {
		t.Errorf("after both: %v %v (outcomes %v, errors %v)", got, err, results, errs)
	}
	if all, _ := s.History("greeter"); len(all) < 1 || len(all) > 2 {
		t.Errorf("%d revisions", len(all))
	}
}
