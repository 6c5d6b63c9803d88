package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/kube-aws/kube-aws/core/version"
)

// Every command documents itself with examples.
func TestEveryCommandHasExamples(t *testing.T) {
	root := newRoot(&globals{})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%q has no Example", c.CommandPath())
		}
		if c.Short == "" {
			t.Errorf("%q has no Short description", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// Usage errors are found by cobra before any command runs: exit 2 with a
// message, and nothing on stdout (a JSON reader must not choke on it).
func TestUsageErrorsExit2InProcess(t *testing.T) {
	for _, args := range [][]string{
		{"nosuch"},
		{"render", "--nosuch"},
		{"render", "extra-arg"},
		{"stage"},
		{"stage", "render", "deploy"},
		{"stage", "nosuch"},
		{"plugins", "describe"},
		{"version", "--output", "xml"},
		{"completion", "tcsh"},
		{"--stage-timeout", "soon", "version"},
	} {
		var o, e bytes.Buffer
		if code := run(args, &o, &e); code != 2 {
			t.Errorf("kube-aws %v: exit %d, want 2\n%s", args, code, e.String())
		}
		if o.Len() != 0 {
			t.Errorf("kube-aws %v wrote to stdout: %q", args, o.String())
		}
		if !strings.Contains(e.String(), "Error:") {
			t.Errorf("kube-aws %v: no error message: %q", args, e.String())
		}
	}
}

func TestVersionJSON(t *testing.T) {
	var o, e bytes.Buffer
	if code := run([]string{"version", "-o", "json"}, &o, &e); code != 0 {
		t.Fatalf("exit %d: %s", code, e.String())
	}
	var v struct {
		Version string `json:"version"`
		Release string `json:"release"`
		SDK     struct {
			Module  string `json:"module"`
			Version string `json:"version"`
		} `json:"sdk"`
		ProtocolVersion int `json:"protocolVersion"`
	}
	if err := json.Unmarshal(o.Bytes(), &v); err != nil || v.Version == "" || v.ProtocolVersion != 1 {
		t.Fatalf("%v %q", err, o.String())
	}
	// The SDK version is the one the module is tagged with: what a plugin's
	// go.mod requires to be built for this kube-aws.
	if v.Release != version.Release || v.SDK.Module != "github.com/kube-aws/kube-aws" || v.SDK.Version != "v"+version.Release ||
		!strings.HasPrefix(v.Version, version.Release) {
		t.Fatalf("version -o json: %+v", v)
	}
	o.Reset()
	if code := run([]string{"version"}, &o, &e); code != 0 {
		t.Fatalf("exit %d: %s", code, e.String())
	}
	if want := "\nplugin SDK: require github.com/kube-aws/kube-aws v" + version.Release + "\n"; !strings.Contains(o.String(), want) ||
		!strings.HasPrefix(o.String(), "kube-aws "+version.Version+" (plugin protocol 1, ") {
		t.Fatalf("kube-aws version printed %q, want the version, protocol and %q", o.String(), want)
	}
}

func TestInitWritesAValidFileAndRefusesToOverwrite(t *testing.T) {
	dir := t.TempDir()
	cfg := dir + "/cluster.yaml"
	args := []string{"init", "-c", cfg, "--cluster-name", "unit", "--region", "eu-west-1",
		"--availability-zones", "eu-west-1a", "--s3-uri", "s3://unit-bucket/unit"}
	var o, e bytes.Buffer
	if code := run(args, &o, &e); code != 0 {
		t.Fatalf("init: exit %d\n%s", code, e.String())
	}
	// The folder of generated secrets is git-ignored, once.
	if b, err := os.ReadFile(dir + "/.gitignore"); err != nil || !strings.Contains(string(b), "\n/credentials/\n") {
		t.Fatalf(".gitignore = %q, %v", b, err)
	}
	e.Reset()
	if code := run(args, &o, &e); code != 2 || !strings.Contains(e.String(), "already exists") {
		t.Fatalf("second init: exit %d\n%s", code, e.String())
	}
	if err := os.WriteFile(dir+"/.gitignore", []byte("*.log"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code := run([]string{"init", "-c", dir + "/other.yaml", "--cluster-name", "other", "--region", "eu-west-1",
		"--availability-zones", "eu-west-1a", "--s3-uri", "s3://unit-bucket/other"}, &o, &e); code != 0 {
		t.Fatalf("init of a second cluster: exit %d\n%s", code, e.String())
	}
	if b, _ := os.ReadFile(dir + "/.gitignore"); !strings.HasPrefix(string(b), "*.log\n#") || strings.Count(string(b), "/credentials/") != 1 {
		t.Fatalf(".gitignore appended to = %q", b)
	}
	e.Reset()
	bad := []string{"init", "-c", dir + "/bad.yaml", "--cluster-name", "Not_Valid!", "--region", "eu-west-1", "--s3-uri", "nope"}
	if code := run(bad, &o, &e); code != 2 || !strings.Contains(e.String(), "s3URI") {
		t.Fatalf("init with bad flags: exit %d\n%s", code, e.String())
	}
}
