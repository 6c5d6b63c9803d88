package nodeplan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
)

// AddonsPlan (AddonsPath) is what the `addons` step installs on the
// controllers once the API server answers: the Helm releases in order
// (plugin order: a CNI before what needs pod networking, CRDs before their
// users), then the manifests in order, each server-side applied. A run
// retries with backoff until all are in, and a second run changes nothing
// that is already as planned, so every controller may run it.
//
// Release values may hold ((secret:...)) markers: list AddonsPath in the
// SecretsPlan as FormatJSON and the `secrets` step substitutes them first.
// The releases of ReleasesFrom are substituted by the `addons` step itself,
// with the role's secrets, once it has fetched them.
type AddonsPlan struct {
	// Kubeconfig is the kubeconfig the step uses (an admin's).
	Kubeconfig string `json:"kubeconfig"`
	// ReleasesFrom, which may name facts ({addonsKey}), is the S3 key
	// (prefix included) of a ReleaseList in the assets, content-addressed
	// (<prefix>/assets/<sha256>): the helm plugin's rendered list, which
	// deploy uploads and hands to the controllers' bootstrap. Its releases
	// come before Releases. Empty once expanded: no such list (the helm
	// plugin is disabled).
	ReleasesFrom string `json:"releasesFrom,omitempty"`
	// Releases are installed (or upgraded) in this order.
	Releases []Release `json:"releases,omitempty"`
	// Manifests are applied after every release, in this order.
	Manifests []Manifest `json:"manifests,omitempty"`
}

// ReleaseList is the file ReleasesFrom names: the Helm releases in
// install order.
type ReleaseList struct {
	Releases []Release `json:"releases"`
}

// Validate implements Plan.
func (l *ReleaseList) Validate() error {
	var c checker
	checkReleases(&c, l.Releases)
	return c.err()
}

// Release is a Helm release of a packaged chart in the cluster's assets, or
// of a chart in a chart repository.
type Release struct {
	// Name and Namespace identify the release; the namespace is created
	// when missing.
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// Plugin contributed the release; messages name it.
	Plugin string `json:"plugin,omitempty"`
	// ChartKey is the packaged chart (.tgz) in the assets, assets/<sha256>,
	// and ChartSHA256 its digest: only the chart render checked is installed.
	ChartKey    string `json:"chartKey,omitempty"`
	ChartSHA256 string `json:"chartSHA256,omitempty"`
	// Repository, Chart and Version instead name a chart in a Helm chart
	// repository (an https URL), fetched on the machine at install time:
	// only for clusters that reach it (not air-gapped ones).
	Repository string `json:"repository,omitempty"`
	Chart      string `json:"chart,omitempty"`
	Version    string `json:"version,omitempty"`
	// Values are the release's values, a JSON object.
	Values json.RawMessage `json:"values,omitempty"`
	// Wait makes the step wait until the release's resources are ready
	// before the next release (helm --wait); Timeout bounds that wait and
	// the install ("5m" when empty).
	Wait    bool   `json:"wait,omitempty"`
	Timeout string `json:"timeout,omitempty"`
}

// Manifest is a file of Kubernetes objects (YAML or JSON, one or more
// documents) the userdata wrote to the machine.
type Manifest struct {
	// Path is the file on the machine.
	Path string `json:"path"`
	// Plugin contributed the manifest; messages name it.
	Plugin string `json:"plugin,omitempty"`
}

var releaseName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// Validate implements Plan.
func (p *AddonsPlan) Validate() error {
	var c checker
	c.absPath("kubeconfig", p.Kubeconfig)
	c.facts("releasesFrom", p.ReleasesFrom)
	checkReleases(&c, p.Releases)
	paths := map[string]int{}
	for i, m := range p.Manifests {
		field := fmt.Sprintf("manifests[%d]", i)
		c.absPath(field+".path", m.Path)
		if j, dup := paths[m.Path]; dup && m.Path != "" {
			c.add(field+".path", "%s is listed by manifests[%d] too", m.Path, j)
		}
		paths[m.Path] = i
	}
	return c.err()
}

func checkReleases(c *checker, releases []Release) {
	seen := map[string]int{}
	for i, r := range releases {
		field := fmt.Sprintf("releases[%d]", i)
		if !releaseName.MatchString(r.Name) || len(r.Name) > 53 {
			c.add(field+".name", "%q is not a Helm release name (lower-case DNS name, at most 53 characters)", r.Name)
		}
		if !dnsLabel.MatchString(r.Namespace) {
			c.add(field+".namespace", "%q is not a namespace (DNS-1123 label)", r.Namespace)
		}
		id := r.Namespace + "/" + r.Name
		if j, dup := seen[id]; dup {
			c.add(field, "release %s is planned by releases[%d] too", id, j)
		}
		seen[id] = i
		if r.Repository != "" {
			if r.ChartKey != "" || r.ChartSHA256 != "" {
				c.add(field, "has both a repository and a chartKey: name one source")
			}
			if u, err := url.Parse(r.Repository); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
				c.add(field+".repository", "%q is not an http(s) URL", r.Repository)
			}
			if r.Chart == "" {
				c.add(field+".chart", "a chart from a repository needs its name")
			}
		} else {
			c.sha256(field+".chartSHA256", r.ChartSHA256)
			c.assetKey(field+".chartKey", r.ChartKey, r.ChartSHA256)
		}
		if v := bytes.TrimSpace(r.Values); len(v) > 0 && !bytes.Equal(v, []byte("null")) {
			var obj map[string]any
			if err := json.Unmarshal(v, &obj); err != nil {
				c.add(field+".values", "want a JSON object: %v", err)
			}
		}
		c.duration(field+".timeout", r.Timeout)
	}
}

// Describe names a release for messages: "release kube-system/coredns
// (plugin coredns)".
func (r Release) Describe() string {
	s := "release " + r.Namespace + "/" + r.Name
	if r.Plugin != "" {
		s += " (plugin " + r.Plugin + ")"
	}
	return s
}
