package main

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kube-aws/kube-aws/core/stage"
)

func TestParseStackEvent(t *testing.T) {
	for _, c := range []struct {
		line, stack, row string
		ok               bool
	}{
		{"09:32:41 nodepool-spot    CREATE_COMPLETE              AWS::CloudFormation::Stack               demo-nodepool-spot", "nodepool-spot", "CREATE_COMPLETE", true},
		{"09:32:41 network          CREATE_IN_PROGRESS           AWS::EC2::VPC                            VPC: Resource creation Initiated", "network", "CREATE_IN_PROGRESS  VPC: Resource creation Initiated (AWS::EC2::VPC)", true},
		{"09:32:41 etcd             CREATE_FAILED                AWS::CloudFormation::Stack               demo-etcd: The following resource(s) failed", "etcd", "CREATE_FAILED: The following resource(s) failed", true},
		{"09:32:40 nodepool-spot    creating demo-nodepool-spot", "nodepool-spot", "creating demo-nodepool-spot", true},
		{"09:32:40 nodepool-general created demo-nodepool-general (CREATE_COMPLETE)", "nodepool-general", "created demo-nodepool-general (CREATE_COMPLETE)", true},
		{"09:33:46 uploaded stacks/iam.json to s3://bucket/assets/1687fdc1", "", "", false},
		{"09:33:46 uploaded 11 objects to s3://bucket (0 already there)", "", "", false},
		{"deployed 6 stacks", "", "", false},
	} {
		stack, row, ok := parseStackEvent(c.line)
		if stack != c.stack || row != c.row || ok != c.ok {
			t.Errorf("parseStackEvent(%q) = %q, %q, %v; want %q, %q, %v", c.line, stack, row, ok, c.stack, c.row, c.ok)
		}
	}
}

// The live view keeps one row per stack and prints other lines above it; at
// the end the screen holds every stack's last status once.
func TestLiveReporterKeepsOneRowPerStack(t *testing.T) {
	var buf bytes.Buffer
	r := &liveReporter{W: &buf}
	log := func(msg string) {
		r.Event("deploy", stage.Deploy, stage.Event{Kind: stage.EventLog, Level: "info", Message: msg})
	}
	log("09:00:00 locked s3://b/deploy.lock for deploy")
	log("09:00:01 network          CREATE_IN_PROGRESS           AWS::CloudFormation::Stack               demo-network")
	log("09:00:01 iam              CREATE_IN_PROGRESS           AWS::CloudFormation::Stack               demo-iam")
	log("09:00:02 network          CREATE_COMPLETE              AWS::CloudFormation::Stack               demo-network")
	log("09:00:02 etcd             creating demo-etcd")
	log("09:00:03 iam              CREATE_COMPLETE              AWS::CloudFormation::Stack               demo-iam")
	r.Done()
	screen := render(buf.String())
	want := []string{
		"[deploy] 09:00:00 locked s3://b/deploy.lock for deploy",
		"  network                  CREATE_COMPLETE",
		"  iam                      CREATE_COMPLETE",
		"  etcd                     creating demo-etcd",
	}
	if !reflect.DeepEqual(screen, want) {
		t.Fatalf("screen:\n%s\nwant:\n%s", strings.Join(screen, "\n"), strings.Join(want, "\n"))
	}
}

// render plays the cursor-up, clear-down and clear-line sequences the live
// view writes, and returns the lines left on the screen.
func render(out string) []string {
	var screen []string
	cur := 0
	for len(out) > 0 {
		switch {
		case strings.HasPrefix(out, "\x1b["):
			end := strings.IndexAny(out, "AJK")
			var n int
			fmt.Sscanf(out[2:end], "%d", &n)
			switch out[end] {
			case 'A':
				cur -= n
			case 'J':
				screen = screen[:cur]
			}
			out = out[end+1:]
		default:
			i := strings.Index(out, "\n")
			j := strings.Index(out, "\x1b[")
			if j >= 0 && j < i {
				i = j
				line := out[:i]
				out = out[i:]
				if line != "" {
					screen = append(screen[:cur], line)
				}
				continue
			}
			line := out[:i]
			if cur < len(screen) {
				screen[cur] = line
			} else {
				screen = append(screen, line)
			}
			cur++
			out = out[i+1:]
		}
	}
	return screen
}

// Deploys report from several goroutines at once.
func TestLiveReporterConcurrentEvents(t *testing.T) {
	var buf bytes.Buffer
	r := &liveReporter{W: &buf}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				r.Event("deploy", stage.Deploy, stage.Event{Kind: stage.EventLog, Level: "info",
					Message: fmt.Sprintf("%s pool-%d UPDATE_IN_PROGRESS AWS::CloudFormation::Stack demo-pool-%d", time.Now().UTC().Format("15:04:05"), i, i)})
			}
		}(i)
	}
	wg.Wait()
	r.Done()
	if n := len(render(buf.String())); n != 8 {
		t.Fatalf("%d rows on screen, want 8", n)
	}
}

// The line-by-line view names the plugin of every line, marks warnings and
// errors, and shows debug logs and progress only with --verbose.
func TestTextReporter(t *testing.T) {
	for _, verbose := range []bool{false, true} {
		var buf bytes.Buffer
		r := &textReporter{W: &buf, Verbose: verbose}
		r.Event("hello", stage.Initialise, stage.Event{Kind: stage.EventLog, Level: "info", Message: "hello from initialise"})
		r.Event("hello", stage.Initialise, stage.Event{Kind: stage.EventLog, Level: "debug", Message: "hidden"})
		r.Event("hello", stage.Initialise, stage.Event{Kind: stage.EventLog, Level: "warn", Message: "careful\nsecond line"})
		r.Event("hello", stage.Initialise, stage.Event{Kind: stage.EventProgress, Current: 1, Total: 2, Message: "half"})
		want := "[hello] hello from initialise\n[hello] warn: careful\n[hello] second line\n"
		if verbose {
			want = "[hello] hello from initialise\n[hello] hidden\n[hello] warn: careful\n[hello] second line\n[hello] half (1/2)\n"
		}
		if buf.String() != want {
			t.Errorf("verbose %v: %q, want %q", verbose, buf.String(), want)
		}
	}
}

func TestParseMachineEvent(t *testing.T) {
	for _, c := range []struct {
		line string
		want machineEvent
		ok   bool
	}{
		{"09:40:02 nodepool-general machine i-0abc draining: node ip-10-0-1-5: 2 pods left default/web-1 default/web-2",
			machineEvent{Time: "09:40:02", Stack: "nodepool-general", Instance: "i-0abc", Phase: "draining", Message: "node ip-10-0-1-5: 2 pods left default/web-1 default/web-2"}, true},
		{"09:40:00 nodepool-general machine - out-of-date: 2 of 2 machines out of date",
			machineEvent{Time: "09:40:00", Stack: "nodepool-general", Phase: "out-of-date", Message: "2 of 2 machines out of date"}, true},
		{"09:32:40 nodepool-spot    creating demo-nodepool-spot", machineEvent{}, false},
		{"09:32:41 etcd             CREATE_FAILED                AWS::CloudFormation::Stack               demo-etcd: failed", machineEvent{}, false},
	} {
		got, ok := parseMachineEvent(c.line)
		if ok != c.ok || got != c.want {
			t.Errorf("parseMachineEvent(%q) = %+v, %v; want %+v, %v", c.line, got, ok, c.want, c.ok)
		}
	}
}

// A roll shows a row per machine under the stacks' rows; --progress json
// gives each step as an object with its fields.
func TestProgressOfARoll(t *testing.T) {
	lines := []string{
		"09:40:00 control-plane    updated demo-control-plane (UPDATE_COMPLETE)",
		"09:40:01 nodepool-general machine i-0new launching: launched from launch template version 2",
		"09:40:02 nodepool-general machine i-0old draining: drain requested (timeout 5m0s)",
		"09:40:20 nodepool-general machine i-0new ready: ready 18.0 s after its machine started",
		"09:40:25 nodepool-general machine i-0old gone: gone",
	}
	var buf bytes.Buffer
	r := &liveReporter{W: &buf}
	for _, l := range lines {
		r.Event("deploy", stage.Deploy, stage.Event{Kind: stage.EventLog, Level: "info", Message: l})
	}
	r.Done()
	want := []string{
		"  control-plane            updated demo-control-plane (UPDATE_COMPLETE)",
		"  nodepool-general i-0new  ready: ready 18.0 s after its machine started",
		"  nodepool-general i-0old  gone: gone",
	}
	if screen := render(buf.String()); !reflect.DeepEqual(screen, want) {
		t.Fatalf("screen:\n%s\nwant:\n%s", strings.Join(screen, "\n"), strings.Join(want, "\n"))
	}
	buf.Reset()
	j := &jsonReporter{W: &buf}
	for _, l := range lines {
		j.Event("deploy", stage.Deploy, stage.Event{Kind: stage.EventLog, Level: "info", Message: l})
	}
	got := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(got) != len(lines) {
		t.Fatalf("%d JSON lines for %d events:\n%s", len(got), len(lines), buf.String())
	}
	if want := `{"plugin":"deploy","stage":"deploy","kind":"machine","level":"info","message":"09:40:02 nodepool-general machine i-0old draining: drain requested (timeout 5m0s)","machine":{"time":"09:40:02","stack":"nodepool-general","instance":"i-0old","phase":"draining","message":"drain requested (timeout 5m0s)"}}`; got[2] != want {
		t.Errorf("JSON event:\n%s\nwant:\n%s", got[2], want)
	}
	if !strings.Contains(got[0], `"kind":"stack","stack":"control-plane"`) && !strings.Contains(got[0], `"stack":"control-plane"`) {
		t.Errorf("stack event: %s", got[0])
	}
}

func TestDiffTextListsMachines(t *testing.T) {
	d := &stage.DiffResult{Changed: true,
		Stacks: []stage.StackDiff{{Stack: "nodepool-spot", StackName: "demo-nodepool-spot", Action: stage.ActionUpdate,
			Changes: []stage.ResourceChange{{Action: "Modify", LogicalID: "LaunchTemplate", ResourceType: "AWS::EC2::LaunchTemplate"}}}},
		Machines: []stage.MachineDiff{
			{Stack: "nodepool-spot", Role: "nodepool-spot", InstanceID: "i-1", Address: "10.0.1.5", Reasons: []string{"kubernetesVersion 1.33.13 -> 1.34.4", "plugin audit changed"}},
			{Stack: "nodepool-spot", Role: "nodepool-spot", InstanceID: "i-2", Reasons: []string{"launch template version 3 -> 4: instance type t3.medium -> t3.large"}},
		}}
	want := `nodepool-spot (demo-nodepool-spot): would update
    ~ Modify  LaunchTemplate                           AWS::EC2::LaunchTemplate
nodepool-spot (nodepool-spot): 2 machine(s) would be replaced, drained first
    ! i-1 (10.0.1.5): kubernetesVersion 1.33.13 -> 1.34.4; plugin audit changed
    ! i-2: launch template version 3 -> 4: instance type t3.medium -> t3.large
`
	if got := diffText(d); got != want {
		t.Errorf("diffText:\n%s\nwant:\n%s", got, want)
	}
}
