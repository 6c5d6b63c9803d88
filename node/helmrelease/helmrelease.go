// Package helmrelease installs or upgrades one Helm release with Helm's
// action library, idempotently: a release already deployed from the same
// chart (by sha256) with the same values is left alone, so every
// controller may run the addons step, at every boot. A release left
// pending by a run that died is marked failed once it is stale, and
// upgraded; one pending for less than that is another controller at work,
// and the caller retries.
package helmrelease

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/release"
	"helm.sh/helm/v3/pkg/storage/driver"
)

// Release is what to install.
type Release struct {
	Name, Namespace string
	Chart           *chart.Chart
	// ChartSHA256 identifies the packaged chart; it is kept in the
	// release's description to tell an unchanged release.
	ChartSHA256 string
	Values      map[string]any
	Wait        bool
	Timeout     time.Duration
}

// Outcome says what Ensure did.
type Outcome string

const (
	Installed Outcome = "installed"
	Upgraded  Outcome = "upgraded"
	Unchanged Outcome = "unchanged"
)

// StaleAfter is how long a pending release may be another installer's
// before it is taken for one that died.
var StaleAfter = 15 * time.Minute

// ErrBusy is a release another installer is working on.
var ErrBusy = errors.New("another installation of this release is in progress")

// Ensure makes the release deployed as asked. cfg is Helm's configuration
// for the release's namespace.
func Ensure(cfg *action.Configuration, r Release, now time.Time) (Outcome, error) {
	desc := "kube-aws-node: chart sha256 " + r.ChartSHA256
	last, err := cfg.Releases.Last(r.Name)
	switch {
	case errors.Is(err, driver.ErrReleaseNotFound):
		return Installed, install(cfg, r, desc, false)
	case err != nil:
		return "", fmt.Errorf("reading the release's history: %w", err)
	}
	st := last.Info.Status
	switch {
	case st == release.StatusDeployed && strings.Contains(last.Info.Description, desc) && sameValues(last.Config, r.Values):
		return Unchanged, nil
	case st.IsPending():
		if now.Sub(last.Info.LastDeployed.Time) < StaleAfter {
			return "", fmt.Errorf("%w (revision %d is %s since %s)", ErrBusy, last.Version, st, last.Info.LastDeployed.UTC().Format(time.RFC3339))
		}
		// Nothing is working on it any more: what helm's users do by hand.
		last.SetStatus(release.StatusFailed, fmt.Sprintf("kube-aws-node: %s since %s, taken as failed", st, last.Info.LastDeployed.UTC().Format(time.RFC3339)))
		if err := cfg.Releases.Update(last); err != nil {
			return "", fmt.Errorf("marking stale revision %d failed: %w", last.Version, err)
		}
	case st == release.StatusUninstalled:
		return Installed, install(cfg, r, desc, true)
	}
	// Helm upgrades a failed release too, a first install that failed
	// included.
	u := action.NewUpgrade(cfg)
	u.Namespace, u.Wait, u.Timeout, u.Description = r.Namespace, r.Wait, r.Timeout, desc
	u.MaxHistory = 10
	if _, err := u.Run(r.Name, r.Chart, r.Values); err != nil {
		return "", err
	}
	return Upgraded, nil
}

func install(cfg *action.Configuration, r Release, desc string, replace bool) error {
	in := action.NewInstall(cfg)
	in.ReleaseName, in.Namespace, in.CreateNamespace = r.Name, r.Namespace, true
	in.Wait, in.Timeout, in.Description, in.Replace = r.Wait, r.Timeout, desc, replace
	_, err := in.Run(r.Chart, r.Values)
	return err
}

// sameValues compares values as JSON: what Helm stored and what the plan
// says may differ in Go types (float64 against int) but not in meaning.
func sameValues(a, b map[string]any) bool {
	ja, err1 := json.Marshal(orEmpty(a))
	jb, err2 := json.Marshal(orEmpty(b))
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

func orEmpty(m map[string]any) map[string]any {
	if m == nil {
		return map[string]any{}
	}
	return m
}
