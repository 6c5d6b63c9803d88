package shortlived

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The settings are the process's, applied when the package is initialised,
// so each case runs in a process of its own: this test binary started again
// with childEnv set, which TestMain hands to child instead of the tests.
const childEnv = "SHORTLIVED_TEST_ALLOCATE_MIB"

func TestMain(m *testing.M) {
	if mib := os.Getenv(childEnv); mib != "" {
		n, err := strconv.Atoi(mib)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		json.NewEncoder(os.Stdout).Encode(child(n))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// report is what a child process saw.
type report struct {
	PercentAtStart int   // GOGC when the process started
	Collections    int64 // collections while it allocated
	Percent        int   // GOGC once the collections' cleanups ran
	Limit          int64 // the soft memory limit then
}

// sink keeps each allocation from being optimised away; only the last is
// reachable, so what the child allocates is garbage.
var sink []byte

func child(mib int) report {
	var r report
	r.PercentAtStart = gcPercent()
	deferred := r.PercentAtStart == -1 && debug.SetMemoryLimit(-1) == FirstCollection
	before := collections()
	for range mib {
		sink = make([]byte, 1<<20)
	}
	r.Collections = collections() - before
	// A deferred first collection changes the settings in a cleanup, which
	// runs in a goroutine after the collection; give it a moment.
	deadline := time.Now().Add(5 * time.Second)
	for deferred && r.Collections > 0 && gcPercent() == -1 && time.Now().Before(deadline) {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
	r.Percent = gcPercent()
	r.Limit = debug.SetMemoryLimit(-1)
	return r
}

func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

func collections() int64 {
	s := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

func TestSettings(t *testing.T) {
	const unlimited = int64(^uint64(0) >> 1)
	cases := []struct {
		name           string
		env            []string
		allocateMiB    int
		percentAtStart int
		collects       bool
		percent        int
		limit          int64
	}{
		{name: "a render's worth of garbage is never collected", allocateMiB: 16,
			percentAtStart: -1, collects: false, percent: -1, limit: FirstCollection},
		{name: "past the first collection the usual settings hold", allocateMiB: 200,
			percentAtStart: -1, collects: true, percent: GCPercent, limit: MemoryLimit},
		{name: "GOGC in the environment is kept and the first collection not deferred", env: []string{"GOGC=100"}, allocateMiB: 16,
			percentAtStart: 100, collects: true, percent: 100, limit: MemoryLimit},
		{name: "GOMEMLIMIT in the environment is kept and the first collection not deferred", env: []string{"GOMEMLIMIT=1GiB"}, allocateMiB: 16,
			percentAtStart: GCPercent, collects: true, percent: GCPercent, limit: 1 << 30},
		{name: "both in the environment", env: []string{"GOGC=off", "GOMEMLIMIT=off"}, allocateMiB: 16,
			percentAtStart: -1, collects: false, percent: -1, limit: unlimited},
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cmd := exec.Command(self)
			env := []string{}
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GOMEMLIMIT=") {
					env = append(env, kv)
				}
			}
			cmd.Env = append(append(env, fmt.Sprintf("%s=%d", childEnv, c.allocateMiB)), c.env...)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			var r report
			if err := json.Unmarshal(out, &r); err != nil {
				t.Fatalf("child printed %q: %v", out, err)
			}
			if r.PercentAtStart != c.percentAtStart {
				t.Errorf("GOGC at start = %d, want %d", r.PercentAtStart, c.percentAtStart)
			}
			if (r.Collections > 0) != c.collects {
				t.Errorf("%d collections while allocating %d MiB of garbage, want collections: %v", r.Collections, c.allocateMiB, c.collects)
			}
			if r.Percent != c.percent {
				t.Errorf("GOGC after = %d, want %d", r.Percent, c.percent)
			}
			if r.Limit != c.limit {
				t.Errorf("memory limit after = %d, want %d", r.Limit, c.limit)
			}
		})
	}
}
