package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/kube-aws/kube-aws/test/awstest"
)

// The transcripts the docs quote are what the code prints: README's `make
// demo`, the CI progress of docs/cli.md and the first plugin of
// docs/plugins.md (section 1.4) are run here and compared line by line, so
// they cannot drift from the code again. A transcript may leave lines out
// (a line "..." or "…") and elide part of a line ("…"); what differs from
// run to run (times, instance and VPC ids, IP addresses, moto's port,
// temporary folders, the lock holder, the build's commit) is set aside on
// both sides before comparing.

// TestDemoTranscriptsAreWhatTheDemoPrints runs scripts/demo.sh, the demo
// itself, with this build, and compares README's transcript and the `up`
// transcript of docs/cli.md with what it printed.
func TestDemoTranscriptsAreWhatTheDemoPrints(t *testing.T) {
	t.Parallel()
	moto, err := awstest.PythonPath()
	if err != nil {
		t.Fatal(err)
	}
	l := newExampleLayout(t)
	demo := exec.Command(filepath.Join("..", "..", "scripts", "demo.sh"))
	demo.Env = append(cleanEnv(), "KUBE_AWS="+l.kubeAWS, "KUBE_AWS_VENV="+filepath.Dir(filepath.Dir(moto)))
	var out bytes.Buffer
	demo.Stdout, demo.Stderr = &out, &out
	if err := demo.Run(); err != nil {
		t.Fatalf("scripts/demo.sh: %v\n%s", err, out.String())
	}
	steps := splitSteps(strings.Split(out.String(), "\n"))

	readme := docBlock(t, filepath.Join("..", "..", "README.md"), func(heading string, block []string) bool {
		return heading == "## make demo" && len(block) > 0 && strings.HasPrefix(block[0], "demo folder: ")
	})
	compareTranscript(t, "README.md (make demo)", splitSteps(readme), steps)

	cli := docBlock(t, filepath.Join("..", "..", "docs", "cli.md"), func(_ string, block []string) bool {
		return len(block) > 0 && strings.HasPrefix(block[0], "$ CI=1 kube-aws up ")
	})
	compareTranscript(t, "docs/cli.md (kube-aws up)", splitSteps(cli), steps)
}

// TestPluginGuideTranscriptIsWhatTheCodePrints builds the hello plugin from
// the code of docs/plugins.md, section 1.2, puts it in a cluster folder made
// as section 1.4 says, runs the commands of section 1.4 and compares what
// they print with the guide.
func TestPluginGuideTranscriptIsWhatTheCodePrints(t *testing.T) {
	t.Parallel()
	guide := filepath.Join("..", "..", "docs", "plugins.md")
	code := docBlock(t, guide, func(_ string, block []string) bool {
		return len(block) > 0 && strings.HasPrefix(block[0], "// Command hello is a kube-aws plugin")
	})
	initCmd := docBlock(t, guide, func(heading string, block []string) bool {
		return strings.HasPrefix(heading, "### 1.4 ") && len(block) > 0 && strings.HasPrefix(block[0], "kube-aws init ")
	})
	values := docBlock(t, guide, func(heading string, block []string) bool {
		return strings.HasPrefix(heading, "### 1.4 ") && len(block) > 0 && block[0] == "plugins:"
	})
	transcript := docBlock(t, guide, func(heading string, block []string) bool {
		return strings.HasPrefix(heading, "### 1.4 ") && len(block) > 0 && strings.HasPrefix(block[0], "$ kube-aws plugins list")
	})

	l := newExampleLayout(t)
	dir := filepath.Join(t.TempDir(), "mycluster")
	if err := os.MkdirAll(filepath.Join(dir, "plugins", "hello"), 0o755); err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(t.TempDir(), "main.go")
	if err := os.WriteFile(src, []byte(strings.Join(code, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Built in this module, as the guide's go.mod replace line does.
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "plugins", "hello", "hello"), src)
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the guide's hello plugin: %v\n%s", err, b)
	}
	bin := filepath.Dir(l.kubeAWS)
	run := func(command string) string {
		t.Helper()
		c := exec.Command("sh", "-c", command+" 2>&1")
		c.Dir = dir
		c.Env = append(cleanEnv(), "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
		b, err := c.Output()
		if err != nil {
			t.Fatalf("%s: %v\n%s", command, err, b)
		}
		return string(b)
	}
	run(initCmd[0])
	path := filepath.Join(dir, "cluster.yaml")
	y, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(y, []byte("\nplugins: {}\n")) {
		t.Fatalf("kube-aws init wrote no `plugins: {}` line for the guide to replace:\n%s", y)
	}
	y = bytes.Replace(y, []byte("\nplugins: {}\n"), []byte("\n"+strings.Join(values, "\n")+"\n"), 1)
	if err := os.WriteFile(path, y, 0o644); err != nil {
		t.Fatal(err)
	}
	want := splitSteps(transcript)
	got := map[string][]string{}
	for _, st := range want {
		got[st.command] = strings.Split(run(st.command), "\n")
	}
	var have []step
	for _, st := range want {
		have = append(have, step{st.command, got[st.command]})
	}
	compareTranscript(t, "docs/plugins.md (1.4)", want, have)
}

// cleanEnv is the environment without the variables that point kube-aws
// at other plugin folders.
func cleanEnv() []string {
	var env []string
	for _, e := range os.Environ() {
		if !strings.HasPrefix(e, "KUBE_AWS_BUILTIN_DIR=") && !strings.HasPrefix(e, "KUBE_AWS_CONTRIB_DIR=") && !strings.HasPrefix(e, "KUBE_AWS=") {
			env = append(env, e)
		}
	}
	return env
}

// docBlock returns the lines of the first fenced code block of a markdown
// file that pick accepts (given the heading it is under).
func docBlock(t *testing.T, file string, pick func(heading string, block []string) bool) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	heading := ""
	var block []string
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		switch {
		case !in && strings.HasPrefix(line, "```"):
			in, block = true, nil
		case in && strings.HasPrefix(line, "```"):
			in = false
			if pick(heading, block) {
				return block
			}
		case in:
			block = append(block, line)
		case strings.HasPrefix(line, "#"):
			heading = line
		}
	}
	t.Fatalf("%s: no code block found for this test", file)
	return nil
}

// step is one command of a transcript and what it printed.
type step struct {
	command string
	lines   []string
}

// splitSteps splits a transcript at its "$ " lines; what comes before the
// first one is the step of command "".
func splitSteps(lines []string) []step {
	steps := []step{{}}
	for _, l := range lines {
		if c, ok := strings.CutPrefix(l, "$ "); ok {
			steps = append(steps, step{command: c})
			continue
		}
		steps[len(steps)-1].lines = append(steps[len(steps)-1].lines, l)
	}
	for i := range steps {
		ls := steps[i].lines
		for len(ls) > 0 && strings.TrimSpace(ls[len(ls)-1]) == "" {
			ls = ls[:len(ls)-1]
		}
		steps[i].lines = ls
	}
	return steps
}

// commandKey is how a transcript's command is matched with the run's: the
// demo's moto endpoint and CI=1 (which the demo sets for every command)
// are left out, and so are comments.
func commandKey(c string) string {
	c, _, _ = strings.Cut(c, " #")
	c = regexp.MustCompile(`--endpoint-url \S+ ?`).ReplaceAllString(c, "")
	return strings.Join(strings.Fields(strings.TrimPrefix(c, "CI=1 ")), " ")
}

// volatile is what differs from run to run, each with what it is set to
// on both sides.
var volatile = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\S*/tmp\.[A-Za-z0-9]{6,}`), "<tmp>"},
	{regexp.MustCompile(`127\.0\.0\.1:[0-9]+`), "127.0.0.1:<port>"},
	{regexp.MustCompile(`\b[0-9]{2}:[0-9]{2}:[0-9]{2}\b`), "<time>"},
	{regexp.MustCompile(`by \S+ kube-aws pid [0-9]+`), "by <user> kube-aws pid <pid>"},
	{regexp.MustCompile(`\bi-[0-9a-f]{8,17}\b`), "<instance>"},
	{regexp.MustCompile(`\b(vpc|sg|subnet)-[0-9a-f]{8,17}\b`), "<$1>"},
	{regexp.MustCompile(`\b10\.[0-9]+\.[0-9]+\.[0-9]+\b`), "<ip>"},
	{regexp.MustCompile(`\b[0-9]+s after launch`), "<n>s after launch"},
	{regexp.MustCompile(`LoadBalancer-[A-Z0-9]+\.`), "LoadBalancer-<id>."},
	{regexp.MustCompile(`\b[0-9a-f]{64}\b`), "<sha256>"},
	{regexp.MustCompile(`valid until [0-9]{4}-[0-9]{2}-[0-9]{2}`), "valid until <date>"},
	{regexp.MustCompile(`\b([0-9]+\.[0-9]+\.[0-9]+)\+[0-9a-f]{7}(\.dirty)?\b`), "$1"},
}

func normalise(s string) string {
	for _, v := range volatile {
		s = v.re.ReplaceAllString(s, v.with)
	}
	return strings.Join(strings.Fields(s), " ")
}

// isGap is a transcript line standing for lines left out.
func isGap(l string) bool { t := strings.TrimSpace(l); return t == "..." || t == "…" }

// linePattern matches a run's line against a transcript's, "…" eliding
// any part of it.
func linePattern(want string) *regexp.Regexp {
	parts := strings.Split(normalise(want), "…")
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".*") + "$")
}

// compareTranscript checks each step of a transcript against the run's step
// of the same command: the transcript's lines, in runs between gaps, must
// appear in the run's output in order, each run of lines consecutively.
func compareTranscript(t *testing.T, doc string, want, have []step) {
	t.Helper()
	byCommand := map[string][]string{}
	for _, st := range have {
		byCommand[commandKey(st.command)] = st.lines
	}
	for _, st := range want {
		got, ok := byCommand[commandKey(st.command)]
		if !ok {
			t.Errorf("%s quotes `%s`, which the run does not run", doc, st.command)
			continue
		}
		if err := matchLines(st.lines, got); err != nil {
			t.Errorf("%s, `%s`: %v\nthe run printed:\n%s", doc, st.command, err, strings.Join(got, "\n"))
		}
	}
}

func matchLines(want, got []string) error {
	var runs [][]string
	cur := []string{}
	for _, w := range want {
		if isGap(w) {
			runs = append(runs, cur)
			cur = []string{}
			continue
		}
		cur = append(cur, w)
	}
	runs = append(runs, cur)
	norm := make([]string, len(got))
	for i, g := range got {
		norm[i] = normalise(g)
	}
	pos := 0
	for _, r := range runs {
		if len(r) == 0 {
			continue
		}
		pats := make([]*regexp.Regexp, len(r))
		for i, w := range r {
			pats[i] = linePattern(w)
		}
		found := -1
		for i := pos; i+len(r) <= len(norm) && found < 0; i++ {
			all := true
			for j, p := range pats {
				if !p.MatchString(norm[i+j]) {
					all = false
					break
				}
			}
			if all {
				found = i
			}
		}
		if found < 0 {
			return fmt.Errorf("these lines are not in what the run printed (in this order, after what came before):\n%s", strings.Join(r, "\n"))
		}
		pos = found + len(r)
	}
	return nil
}

// The comparison itself: runs of lines between gaps in order and
// consecutive, "…" eliding part of a line, volatile parts set aside.
func TestTranscriptMatching(t *testing.T) {
	got := []string{
		"[deploy] 05:01:02 locked s3://b/deploy.lock for deploy by unknown@vm kube-aws pid 5675",
		"[deploy] 05:01:02 uploaded a to s3://b/x",
		"[deploy] 05:01:05 uploaded 32 objects to s3://b (0 already there)",
		"stack demo-network: CREATE_COMPLETE",
		"stack demo-iam:     CREATE_COMPLETE",
		"  VPCId: vpc-ed192c1be18cd1951",
	}
	tests := []struct {
		name string
		want []string
		ok   bool
	}{
		{"runs between gaps", []string{"[deploy] 09:38:30 locked s3://b/deploy.lock for deploy by ci@runner-7 kube-aws pid 4242", "...",
			"[deploy] 09:38:31 uploaded 32 objects to s3://b (0 already there)", "stack demo-network: CREATE_COMPLETE", "stack demo-iam: CREATE_COMPLETE", "…", "  VPCId: vpc-31c8a05906113a477"}, true},
		{"an elided part of a line", []string{"[deploy] 09:38:31 uploaded … to s3://b/x"}, true},
		{"a number that changed", []string{"[deploy] 09:38:31 uploaded 11 objects to s3://b (0 already there)"}, false},
		{"lines without a gap must be consecutive", []string{"[deploy] 09:38:30 locked s3://b/deploy.lock for deploy by ci@runner-7 kube-aws pid 4242",
			"[deploy] 09:38:31 uploaded 32 objects to s3://b (0 already there)"}, false},
		{"runs in order", []string{"stack demo-iam: CREATE_COMPLETE", "...", "stack demo-network: CREATE_COMPLETE"}, false},
	}
	for _, tc := range tests {
		if err := matchLines(tc.want, got); (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}
