package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The built-ins are one executable that each name in the built-in folder
// links to: a render and a listing start it once, and a name it does not
// serve is listed with its own error while every other built-in is listed.
func TestBuiltinsShareOneProcess(t *testing.T) {
	t.Parallel()
	l := newExampleLayout(t)
	l.env = append(l.env, "KUBE_AWS_DEBUG=1") // go-plugin logs each process it starts
	starts := func(stderr string) int { return strings.Count(stderr, "starting plugin") }

	_, stderr, code := l.run("render")
	if code != 0 || starts(stderr) != 1 {
		t.Fatalf("render: exit %d, %d plugin processes started, want 0 and 1\n%s", code, starts(stderr), stderr)
	}
	list := func() (doc struct{ Plugins []PluginSummaryJSON }, stderr string, code int) {
		out, stderr, code := l.run("plugins", "list", "-o", "json")
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("plugins list: %v\n%s\n%s", err, out, stderr)
		}
		return doc, stderr, code
	}
	doc, stderr, code := list()
	if code != 0 || len(doc.Plugins) != 10 || starts(stderr) != 1 {
		t.Fatalf("plugins list: exit %d, %d plugins, %d processes; want 0, the 10 built-ins and 1\n%+v", code, len(doc.Plugins), starts(stderr), doc.Plugins)
	}
	for _, p := range doc.Plugins {
		if p.Source != "builtin" || p.Version == "" || !p.Enabled || p.Error != "" {
			t.Errorf("built-in listed as %+v", p)
		}
	}

	builtin := filepath.Join(filepath.Dir(l.kubeAWS), "kube-aws-plugins", "builtin")
	if err := os.Symlink(filepath.Join("..", "libexec", "kube-aws-builtins"), filepath.Join(builtin, "bogus")); err != nil {
		t.Fatal(err)
	}
	doc, _, code = list()
	var bogus, fine int
	for _, p := range doc.Plugins {
		switch {
		case p.Name == "bogus" && strings.Contains(p.Error, `serves the plugins apiserver, cloudformation, deploy, etcd, flannel, helm, iam, kubernetes, pki, userdata, not "bogus"`):
			bogus++
		case p.Name != "bogus" && p.Error == "" && p.Version != "":
			fine++
		default:
			t.Errorf("listed as %+v", p)
		}
	}
	if code != 1 || bogus != 1 || fine != 10 {
		t.Fatalf("plugins list with a name the executable does not serve: exit %d, bogus %d, fine %d; want 1, 1 and 10", code, bogus, fine)
	}
	_, stderr, code = l.run("render")
	if code == 0 || !strings.Contains(stderr, `plugin bogus`) || !strings.Contains(stderr, `not "bogus"`) {
		t.Fatalf("render with a name the executable does not serve: exit %d\n%s", code, stderr)
	}
}

// PluginSummaryJSON is what `plugins list -o json` prints of a plugin.
type PluginSummaryJSON struct {
	Name, Source, Version, Error string
	Enabled                      bool
}
