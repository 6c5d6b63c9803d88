package logs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExportPodLogs(t *testing.T) {
	root := t.TempDir()
	write := func(rel, content string) {
		p := filepath.Join(root, "var", "log", "pods", filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	write("kube-flannel_kube-flannel-ds-x_1/kube-flannel/0.log", "route added\n")
	write("kube-system_kube-proxy-y_2/kube-proxy/1.log", "rules synced\n")
	write("kube-system_kube-proxy-y_2/kube-proxy/0.log.20261127-211000.gz", "rotated")
	write("default_web-z_3/web/0.log", "a user's pod\n")
	long := strings.Repeat("x", maxPodLog) + "the end\n"
	write("kube-system_kube-apiserver-c_4/kube-apiserver/0.log", long)

	d := Dir(t.TempDir())
	if err := d.ExportPodLogs("i-1", root); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		rel  string
		want string // "" for not copied
	}{
		{"kube-flannel_kube-flannel-ds-x_1/kube-flannel/0.log", "route added\n"},
		{"kube-system_kube-proxy-y_2/kube-proxy/1.log", "rules synced\n"},
		{"kube-system_kube-proxy-y_2/kube-proxy/0.log.20261127-211000.gz", ""},
		{"default_web-z_3/web/0.log", ""},
		{"kube-system_kube-apiserver-c_4/kube-apiserver/0.log", long[len(long)-maxPodLog:]},
	} {
		b, err := os.ReadFile(filepath.Join(d.PodsPath("i-1"), filepath.FromSlash(tc.rel)))
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("%s was copied", tc.rel)
		case tc.want != "" && string(b) != tc.want:
			t.Errorf("%s: %d bytes copied (%v), want %d", tc.rel, len(b), err, len(tc.want))
		}
	}

	// A machine that never ran a pod has nothing to copy.
	if err := d.ExportPodLogs("i-2", t.TempDir()); err != nil {
		t.Errorf("no pods: %v", err)
	}
}
