//go:build e2ecluster

package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kube-aws/kube-aws/test/cisbench"
)

// cisDir is where the benchmark's tools go in a machine.
const cisDir = "/var/tmp/kube-bench"

// cis runs the CIS Kubernetes Benchmark (kube-bench, test/cisbench) on one
// etcd member, one controller and one worker: each role's targets, with
// the benchmark picked explicitly. It logs each role's counts by section,
// and fails on a FAIL or WARN without its row in the table of
// docs/security.md, and on a row whose check no longer gives its result.
func (e *example) cis(ctx context.Context, t *testing.T) {
	t.Run("CIS benchmark", func(t *testing.T) {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
		defer cancel()
		tools, err := cisbench.Build()
		if err != nil {
			t.Fatal(err)
		}
		rows, err := cisbench.LoadTable()
		if err != nil {
			t.Fatal(err)
		}
		controller, err := e.podNetworkController(cctx)
		if err != nil {
			t.Fatal(err)
		}
		groups := map[string]string{"etcd": "-etcd", "worker": "-nodepool-general-"}
		counts := map[string][]cisbench.Count{}
		for _, role := range cisbench.Roles {
			id := controller
			if role.Name != "controller" {
				live := e.live(cctx, t, groups[role.Name])
				if len(live) == 0 {
					t.Fatalf("no %s instance", role.Name)
				}
				id = live[0].id
			}
			m, err := e.machineOf(id)
			if err != nil {
				t.Fatal(err)
			}
			if err := tools.Stage(filepath.Join(m.Root(), cisDir)); err != nil {
				t.Fatal(err)
			}
			report := cisDir + "/report-" + role.Name + ".json"
			started := time.Now()
			// kube-bench runs each audit with /bin/sh, and some are
			// bash (5.1.1's [[ ]]; its image's sh is busybox's, which
			// takes them): in a mount namespace of its own, the
			// machine's /bin/sh (dash) is bash for kube-bench alone.
			// kubectl and jq from the staged folder for the policy
			// checks, which ask the API as the cluster's admin.
			if out, err := e.inMachine(cctx, id, "unshare", "--mount", "--propagation", "private",
				"sh", "-c", `mount --bind /usr/bin/bash /usr/bin/sh && exec "$@"`, "sh", "env",
				"PATH="+cisDir+":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
				"KUBECONFIG=/etc/kubernetes/admin.conf",
				cisDir+"/kube-bench", "run", "--targets", role.Targets, "--benchmark", cisbench.Benchmark,
				"--config-dir", cisDir+"/cfg", "--json", "--outputfile", report); err != nil {
				t.Fatalf("kube-bench on %s (%s): %v\n%s", id, role.Name, err, out)
			}
			b, err := os.ReadFile(filepath.Join(m.Root(), report))
			if err != nil {
				t.Fatal(err)
			}
			// Kept with the machine's logs when the run fails.
			if dir := filepath.Join(string(e.h.Logs), id); os.MkdirAll(dir, 0o755) == nil {
				_ = os.WriteFile(filepath.Join(dir, "kube-bench.json"), b, 0o644)
			}
			r, err := cisbench.ParseReport(b)
			if err != nil {
				t.Fatalf("%s (%s): %v", id, role.Name, err)
			}
			counts[role.Name] = r.Counts()
			for _, c := range counts[role.Name] {
				t.Logf("%s %s: %s %s: %d PASS, %d FAIL, %d WARN, %d INFO", role.Name, id, c.Section, c.Desc, c.Pass, c.Fail, c.Warn, c.Info)
			}
			t.Logf("%s %s: kube-bench %s, benchmark %s, targets %s, ran in %.1fs", role.Name, id, tools.Version, cisbench.Benchmark, role.Targets, time.Since(started).Seconds())
			if p := cisbench.Compare(role.Name, r.Results(), rows); len(p) > 0 {
				t.Errorf("%s (%s) against the table of %s:\n%s", role.Name, id, cisbench.DocPath, strings.Join(p, "\n"))
			}
		}
		t.Logf("counts for %s:\n%s", cisbench.DocPath, cisbench.CountsTable(counts))
	})
}

// podNetworkController is the controller that ran the secret-probe
// release's Job: it has held a pod on the pod network, so host-local's
// files are in /var/lib/cni/networks, the only CNI files the benchmark's
// 1.1.9 and 1.1.10 find (the kubelet has no --cni-conf-dir). Either
// controller would do but for those two, which find nothing on a
// controller that never ran such a pod.
func (e *example) podNetworkController(ctx context.Context) (string, error) {
	cs, _, err := e.kube(ctx)
	if err != nil {
		return "", err
	}
	pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "job-name=secret-probe"})
	if err != nil {
		return "", err
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" {
			continue
		}
		n, err := cs.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			return "", err
		}
		if id := n.Spec.ProviderID[strings.LastIndex(n.Spec.ProviderID, "/")+1:]; strings.HasPrefix(id, "i-") {
			return id, nil
		}
	}
	return "", fmt.Errorf("no pod of the secret-probe Job with a node whose provider id names an instance (%d pods)", len(pods.Items))
}
