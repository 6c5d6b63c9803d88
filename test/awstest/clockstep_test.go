package awstest

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
)

// TestWallClockStepEndsNoHookWait: a termination hook's heartbeat timeout
// runs on the monotonic clock. A host whose wall clock is stepped forward
// past the timeout (a fresh machine's first time sync) must not end a
// waiting instance's action with the hook's default result: on wall time,
// a CI run once saw an instance terminated between two calls of a test.
// moto runs under libfaketime, which steps its wall clock and leaves its
// monotonic clock alone, as a time sync does.
func TestWallClockStepEndsNoHookWait(t *testing.T) {
	lib := fakeTimeLibrary(t)
	offset := filepath.Join(t.TempDir(), "faketimerc")
	setOffset := func(spec string) {
		t.Helper()
		if err := os.WriteFile(offset, []byte(spec+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	setOffset("+0")
	url, stop, err := StartServerEnv([]string{"LD_PRELOAD=" + lib, "FAKETIME_TIMESTAMP_FILE=" + offset,
		"FAKETIME_CACHE_DURATION=1", "FAKETIME_DONT_FAKE_MONOTONIC=1"})
	if err != nil {
		t.Fatalf("starting moto under libfaketime: %v", err)
	}
	t.Cleanup(stop)
	ctx := context.Background()
	c := newClients(url)

	group := c.createStack(ctx, t, "step", stackSpec{userData: "v1", desired: 2, heartbeat: 600, tag: "a"})
	if _, err := c.as.SetDesiredCapacity(ctx, &autoscaling.SetDesiredCapacityInput{AutoScalingGroupName: aws.String(group), DesiredCapacity: aws.Int32(1)}); err != nil {
		t.Fatal(err)
	}
	waiting := byState(c.members(ctx, t, group), "Terminating:Wait")
	if len(waiting) != 1 {
		t.Fatalf("after scaling in to 1: %v waiting; want one", waiting)
	}
	id := waiting[0]

	// Three hours: past the 600 s timeout, within AWS's 48 hour limit.
	setOffset("+3h")
	deadline := time.Now().Add(10 * time.Second)
	for {
		ahead, err := serverClockAhead(url)
		if err != nil {
			t.Fatal(err)
		}
		if ahead > 2*time.Hour {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("moto's wall clock is %v ahead 10s after the step; want 3h (libfaketime at %s)", ahead, lib)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if m := c.members(ctx, t, group)[id]; m.state != "Terminating:Wait" || m.ec2State != "running" {
		t.Fatalf("after the wall clock stepped 3h, %s is %+v; want it still waiting, running", id, m)
	}
	if _, err := c.as.CompleteLifecycleAction(ctx, &autoscaling.CompleteLifecycleActionInput{AutoScalingGroupName: aws.String(group),
		LifecycleHookName: aws.String("drain"), LifecycleActionResult: aws.String("CONTINUE"), InstanceId: aws.String(id)}); err != nil {
		t.Fatalf("completing %s's action after the step: %v", id, err)
	}
	if st, _ := c.instance(ctx, t, id); st != "terminated" {
		t.Errorf("%s is %s after CompleteLifecycleAction, want terminated", id, st)
	}
}

// fakeTimeLibrary is Debian's libfaketime (package libfaketime), the
// variant for threaded programs: moto serves each request on a thread.
func fakeTimeLibrary(t *testing.T) string {
	t.Helper()
	libs, _ := filepath.Glob("/usr/lib/*/faketime/libfaketimeMT.so.1")
	if len(libs) == 0 {
		t.Fatal("libfaketime is needed to step moto's wall clock: apt-get install libfaketime (.ci/run installs it)")
	}
	return libs[0]
}

// serverClockAhead is how far the Date of moto's answer is ahead of this
// process's wall clock (HTTP dates have whole seconds).
func serverClockAhead(url string) (time.Duration, error) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url + "/moto-api/")
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	d, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		return 0, err
	}
	return time.Until(d), nil
}
