package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kube-aws/kube-aws/plugins/plugintest"
)

// Messages a user acts on, through the real kube-aws and built-ins: each
// says a thing once, and says it so that following it works.

// A new VPC with private subnets and no NAT gateways is one warning, with
// its line in cluster.yaml, not one from core/config and another from the
// cloudformation built-in.
func TestTheNATWarningIsPrintedOnce(t *testing.T) {
	t.Parallel()
	l := newExampleLayout(t)
	l.edit("  natGateways: true\n", "  natGateways: false\n")
	stdout, stderr, code := l.run("render")
	if code != 0 {
		t.Fatalf("render: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if n := strings.Count(stderr, "NAT gateways"); n != 1 {
		t.Fatalf("the NAT warning is printed %d times, want once:\n%s", n, stderr)
	}
	if !strings.Contains(stderr, "cluster.yaml:77:16 network.natGateways") || !strings.Contains(stderr, "0 fatal, 1 warning(s)") {
		t.Fatalf("the NAT warning names no line, or other warnings came with it:\n%s", stderr)
	}
}

// Refused input costs little: a configuration file over the size limit is
// refused from its size, and the worst file under it (as many YAML nodes per
// byte as YAML allows, or aliases multiplying them) is refused by kube-aws
// in well under 100 MB. The figures are kube-aws's peak resident memory
// (getrusage's ru_maxrss, as /usr/bin/time -v reports it).
func TestRefusedInputStaysUnder100MB(t *testing.T) {
	t.Parallel()
	l := newExampleLayout(t)
	peakRSS := plugintest.Build(t, "github.com/kube-aws/kube-aws/cmd/kube-aws/testdata/peakrss")
	example, err := os.ReadFile(filepath.Join(l.cluster, "cluster.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// fill returns a flow list of one-character items as long as n bytes:
	// the most YAML nodes per byte.
	fill := func(n int) string { return "[" + strings.Repeat("a,", n/2-1) + "a]" }
	withPluginValues := func(values string) string {
		return strings.Replace(string(example), "\n  deploy:\n", "\n  padding:\n    values: {list: "+values+"}\n  deploy:\n", 1)
	}
	withConfigFile := func(file string) string {
		return strings.Replace(string(example), "\n  deploy:\n", "\n  padding:\n    configFiles: ["+file+"]\n  deploy:\n", 1)
	}
	const limit = 128 << 10
	underLimit := func(s string) string {
		// Fill up to just under the limit with plugin values, and misspell
		// clusterName so that the file is refused after being read.
		s = strings.Replace(s, "\nclusterName:", "\nclustrName:", 1)
		return strings.Replace(s, "{list: []}", "{list: "+fill(limit-len(s)-8)+"}", 1)
	}
	// Each level of aliases multiplies the one before by 9.
	bomb := "\n  padding:\n    values:\n      a: &a [x, x, x, x, x, x, x, x, x]\n"
	prev := "a"
	for _, n := range []string{"b", "c", "d", "e", "f", "g", "h", "i"} {
		bomb += "      " + n + ": &" + n + " [" + strings.TrimSuffix(strings.Repeat("*"+prev+", ", 9), ", ") + "]\n"
		prev = n
	}
	for _, tc := range []struct {
		name, cluster string
		files         map[string]string
		msg           string
	}{
		{"cluster.yaml of 50 MiB", string(example) + "\npadding: " + fill(50<<20) + "\n", nil,
			"cluster.yaml is not read: it is 50.0 MiB, over the 128 KiB limit"},
		{"cluster.yaml just under the limit, refused by validation", underLimit(withPluginValues("[]")), nil,
			`unknown key "clustrName"`},
		{"plugin config file of 50 MiB", withConfigFile("padding.yaml"), map[string]string{"padding.yaml": "list: " + fill(50<<20) + "\n"},
			"plugin config file padding.yaml is not read: it is 50.0 MiB, over the 128 KiB limit"},
		{"plugin config file just under the limit, refused for a duplicate key", withConfigFile("padding.yaml"),
			map[string]string{"padding.yaml": "list: " + fill(limit-40) + "\nlist: again\n"}, `key "list" appears more than once`},
		{"aliases multiplying nodes", strings.Replace(string(example), "\n  deploy:\n", bomb+"  deploy:\n", 1), nil, "expands to more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l.write(tc.cluster)
			for name, content := range tc.files {
				if err := os.WriteFile(filepath.Join(l.cluster, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			c := l.command(context.Background(), "render")
			out := filepath.Join(t.TempDir(), "peak-rss")
			c.Args = append([]string{peakRSS}, c.Args...)
			c.Path = peakRSS
			c.Env = append(c.Env, "PEAKRSS_OUT="+out)
			var stderr bytes.Buffer
			c.Stderr = &stderr
			start := time.Now()
			code := exitCode(t, c.Run())
			took := time.Since(start)
			if code != 2 || !strings.Contains(stderr.String(), tc.msg) {
				t.Fatalf("exit %d, want 2 with %q:\n%.2000s", code, tc.msg, stderr.String())
			}
			kib, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			n, err := strconv.Atoi(string(kib))
			if err != nil {
				t.Fatal(err)
			}
			rss := float64(n) / 1024
			t.Logf("%s: refused in %s, peak RSS %.1f MiB", tc.name, took.Round(time.Millisecond), rss)
			if rss >= 100 {
				t.Fatalf("kube-aws took %.1f MiB to refuse it, want under 100 MiB", rss)
			}
		})
	}
}
