//go:build e2ecluster

package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
)

// addonsLine is a line of the controllers' addons step on the console that
// says one thing was installed: the AWS environment ConfigMap, a release
// (releases[i]: release <ns>/<name> ...: installed|upgraded|unchanged) or
// a manifest (manifests[i]: <path> ...: <n> objects applied).
// The step writes each line to the console itself, and cloud-init forwards
// its stderr there too ("cloud-init[181]: kube-aws-node[...]"): only the
// step's own lines, which start the line, are read.
var addonsLine = regexp.MustCompile(`(?m)^kube-aws-node\[[^\]]+\]\s+[0-9.]+s addons: (?:(ConfigMap ` +
	regexp.QuoteMeta(names.AWSEnvNamespace+"/"+names.AWSEnvConfigMap) + `): |releases\[([0-9]+)\]: release (\S+) .*: (?:installed|upgraded|unchanged) \(chart |manifests\[([0-9]+)\]: .*: [0-9]+ objects applied)`)

// checkAddonsOrder holds the plugin guide's promise (docs/plugins.md,
// section 3.2) on every controller: the AWS environment ConfigMap first,
// then every Helm release in the order of the rendered release list
// (plugin order), then every manifest in order, each once; and a release's
// namespace that nothing else makes (flannel's) is created by its install.
func (e *example) checkAddonsOrder(ctx context.Context, t *testing.T, cs *kubernetes.Clientset, st map[string]nodeplan.Status) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.dir, "rendered", "charts", "releases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var list nodeplan.ReleaseList
	if err := nodeplan.Decode(b, &list); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range list.Releases {
		want = append(want, r.Namespace+"/"+r.Name)
	}
	for id, s := range st {
		if s.Role != "controller" {
			continue
		}
		console, err := os.ReadFile(e.h.Logs.ConsolePath(id))
		if err != nil {
			t.Fatal(err)
		}
		var order []string
		var releases []string
		lastRelease, lastManifest := -1, -1
		matches := addonsLine.FindAllStringSubmatch(string(console), -1)
		// The step's last run (a run that failed is run again) starts
		// with the ConfigMap.
		for i := len(matches) - 1; i > 0; i-- {
			if matches[i][1] != "" {
				matches = matches[i:]
				break
			}
		}
		for _, m := range matches {
			switch {
			case m[1] != "":
				order = append(order, "configmap")
			case m[3] != "":
				i, _ := strconv.Atoi(m[2])
				if i != lastRelease+1 {
					t.Errorf("%s: release %d (%s) installed after release %d", id, i, m[3], lastRelease)
				}
				lastRelease = i
				releases = append(releases, m[3])
				order = append(order, "release")
			default:
				i, _ := strconv.Atoi(m[4])
				if i != lastManifest+1 {
					t.Errorf("%s: manifest %d applied after manifest %d", id, i, lastManifest)
				}
				lastManifest = i
				order = append(order, "manifest")
			}
		}
		if fmt.Sprint(releases) != fmt.Sprint(want) {
			t.Errorf("%s: releases installed %v, want the rendered list's order %v", id, releases, want)
		}
		phase := 0 // configmap, releases, manifests
		for i, o := range order {
			p := map[string]int{"configmap": 0, "release": 1, "manifest": 2}[o]
			if p < phase || (i == 0 && o != "configmap") {
				t.Errorf("%s: the addons step went %v; want the AWS environment ConfigMap, then every release, then every manifest", id, order)
				break
			}
			phase = p
		}
		if lastManifest < 0 {
			t.Errorf("%s: no manifest was applied (the kubernetes built-in contributes two)", id)
		}
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, "kube-flannel", metav1.GetOptions{})
	switch {
	case err != nil:
		t.Errorf("the flannel release's namespace: %v", err)
	case ns.Labels["name"] != "kube-flannel":
		t.Errorf("namespace kube-flannel has labels %v: not the one a release's install creates (name: kube-flannel)", ns.Labels)
	default:
		t.Logf("addons: the AWS environment ConfigMap, %d releases in plugin order (%v), then the manifests, on every controller; kube-flannel created by its release's install", len(want), want)
	}
}
