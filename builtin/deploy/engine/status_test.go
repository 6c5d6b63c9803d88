package engine

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/nodeplan"
)

func TestJudgeMachines(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	grace := 10 * time.Minute
	old, young := now.Add(-25*time.Minute), now.Add(-40*time.Second)
	status := func(phase nodeplan.Phase, step, err string) *nodeplan.Status {
		return &nodeplan.Status{Role: "nodepool-a", InstanceID: "i-1", Address: "10.0.1.23", Phase: phase, Step: step, Error: err, Time: "2026-11-23T11:36:00Z"}
	}
	for _, c := range []struct {
		name     string
		role     string
		launched time.Time
		status   *nodeplan.Status
		severity diag.Severity // "": no diagnostic
		message  []string      // each must appear in the message
		hint     string        // must appear in the hint
	}{
		{"ready", "nodepool-a", old, status(nodeplan.PhaseReady, "wait", ""), "", nil, ""},
		{"ready young", "nodepool-a", young, status(nodeplan.PhaseReady, "wait", ""), "", nil, ""},
		{"failed", "nodepool-a", old, status(nodeplan.PhaseFailed, "runcmd[3]: kube-aws-node secrets", "exit status 1"), diag.Fatal,
			[]string{"machine i-1 (nodepool-a, 10.0.1.23) of stack demo-nodepool-a", "failed at step runcmd[3]: kube-aws-node secrets: exit status 1"},
			"aws ec2 get-console-output --instance-id i-1"},
		{"failed young", "etcd", young, status(nodeplan.PhaseFailed, "volumes", "no device"), diag.Fatal,
			[]string{"failed at step volumes: no device"}, "or its journal"},
		{"never reported", "nodepool-a", old, nil, diag.Fatal,
			[]string{"machine i-1 (nodepool-a, 10.0.9.9)", "never reported a status, 25m0s after launch: node never registered or became Ready"},
			"did not run kube-aws-node"},
		{"etcd never reported", "etcd", old, nil, diag.Fatal, []string{"etcd member never became healthy"}, "get-console-output"},
		{"stuck", "controller", old, status(nodeplan.PhaseBooting, "runcmd[2]: kube-aws-node artifacts", ""), diag.Fatal,
			[]string{"stuck at step runcmd[2]: kube-aws-node artifacts (booting, last reported 2026-11-23T11:36:00Z), 25m0s after launch: node never registered or became Ready"},
			"get-console-output --instance-id i-1"},
		{"etcd stuck booted", "etcd", old, status(nodeplan.PhaseBooted, "wait", ""), diag.Fatal,
			[]string{"stuck at step wait (booted", "etcd member never became healthy"}, ""},
		{"young no status", "nodepool-a", young, nil, diag.Warning, []string{"has not reported a status yet, 40s after launch"}, "run validate again"},
		{"young booting", "nodepool-a", young, status(nodeplan.PhaseBooting, "runcmd[1]", ""), diag.Warning,
			[]string{"is still booting, at step runcmd[1] (booting), 40s after launch"}, "not ready 10m0s after launch is fatal"},
		{"just at grace", "nodepool-a", now.Add(-grace), nil, diag.Fatal, []string{"never reported"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := machine{stack: "nodepool-a", stackName: "demo-nodepool-a", role: c.role, instanceID: "i-1", address: "10.0.9.9", launched: c.launched, status: c.status}
			ds := judgeMachines([]machine{m}, now, grace)
			if c.severity == "" {
				if len(ds) != 0 {
					t.Fatalf("want nothing, got %v", ds)
				}
				return
			}
			if len(ds) != 1 {
				t.Fatalf("want one diagnostic, got %v", ds)
			}
			d := ds[0]
			if d.Severity != c.severity || d.Stage != "validate" || d.Path != "stacks/nodepool-a/instances/i-1" {
				t.Errorf("got %s %s %s, want %s validate stacks/nodepool-a/instances/i-1", d.Severity, d.Stage, d.Path, c.severity)
			}
			for _, w := range c.message {
				if !strings.Contains(d.Message, w) {
					t.Errorf("message %q lacks %q", d.Message, w)
				}
			}
			if !strings.Contains(d.Hint, c.hint) {
				t.Errorf("hint %q lacks %q", d.Hint, c.hint)
			}
		})
	}
}

// Validate reads every pool machine's status object: a failed step, a
// machine stuck or silent past the grace period are fatal and name the
// instance; a ready one says nothing; young ones are warnings.
func TestValidateMachines(t *testing.T) {
	f := newFixture(t, map[string]int{"a": 4})
	ctx := context.Background()
	target := f.render()
	f.mustDeploy(f.engine(), target)

	e := f.engine()
	groups, _, err := e.stackGroups(ctx, f.name+"-nodepool-a")
	if err != nil || len(groups) != 1 || len(groups[0].Instances) != 4 {
		t.Fatalf("groups %+v, %v: want one with 4 instances", groups, err)
	}
	var ids []string
	for _, i := range groups[0].Instances {
		ids = append(ids, aws.ToString(i.InstanceId))
	}
	put := func(id string, phase nodeplan.Phase, step, errText string) {
		b, _ := json.Marshal(nodeplan.Status{Role: "nodepool-a", InstanceID: id, Address: "10.0.1.200", Phase: phase, Step: step, Error: errText, Time: "2026-11-23T12:00:00Z"})
		key := "clusters/" + f.name + "/" + nodeplan.StatusKey("nodepool-a", id)
		if _, err := f.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(f.bucket), Key: aws.String(key), Body: strings.NewReader(string(b))}); err != nil {
			t.Fatal(err)
		}
	}
	failed, ready, booting, silent := ids[0], ids[1], ids[2], ids[3]
	put(failed, nodeplan.PhaseFailed, "runcmd[3]: kube-aws-node secrets", "decrypting: AccessDenied")
	put(ready, nodeplan.PhaseReady, "wait", "")
	put(booting, nodeplan.PhaseBooting, "runcmd[2]: kube-aws-node artifacts", "")

	find := func(ds diag.List, id string) *diag.Diagnostic {
		for i := range ds {
			if strings.HasSuffix(ds[i].Path, "/instances/"+id) {
				return &ds[i]
			}
		}
		return nil
	}
	// Right after the deploy: the failed machine is fatal, the others are
	// still booting.
	ds, err := e.Validate(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	if f, w := ds.Count(); f != 1 || w != 2 {
		t.Fatalf("young machines: want 1 fatal and 2 warnings, got %v", ds)
	}
	if d := find(ds, failed); d == nil || d.Severity != diag.Fatal || !strings.Contains(d.Message, "machine "+failed+" (nodepool-a, 10.0.1.200)") ||
		!strings.Contains(d.Message, "failed at step runcmd[3]: kube-aws-node secrets: decrypting: AccessDenied") || !strings.Contains(d.Hint, "get-console-output --instance-id "+failed) {
		t.Errorf("failed machine: %v", d)
	}
	if d := find(ds, silent); d == nil || d.Severity != diag.Warning || !strings.Contains(d.Message, "has not reported a status yet") {
		t.Errorf("young silent machine: %v", d)
	}

	// An hour later: every machine not ready is fatal; the address of a
	// silent one comes from EC2.
	late := f.engine(func(o *Options) { o.Now = func() time.Time { return time.Now().Add(time.Hour) } })
	ds, err = late.Validate(ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	if f, w := ds.Count(); f != 3 || w != 0 || find(ds, ready) != nil {
		t.Fatalf("an hour later: want 3 fatals, none for the ready machine, got %v", ds)
	}
	if d := find(ds, booting); d == nil || !strings.Contains(d.Message, "stuck at step runcmd[2]: kube-aws-node artifacts") || !strings.Contains(d.Message, "node never registered or became Ready") {
		t.Errorf("stuck machine: %v", d)
	}
	if d := find(ds, silent); d == nil || d.Severity != diag.Fatal || !strings.Contains(d.Message, "never reported a status") || !strings.Contains(d.Message, "(nodepool-a, 10.0.1.") || strings.Contains(d.Message, "10.0.1.200") {
		t.Errorf("silent machine: %v", d)
	}
	// The same through the grace period: a long one keeps them warnings.
	patient := f.engine(func(o *Options) {
		o.Now = func() time.Time { return time.Now().Add(time.Hour) }
		o.BootGrace = 2 * time.Hour
	})
	if ds, err := patient.Validate(ctx, target); err != nil || len(ds.Fatals()) != 1 {
		t.Fatalf("grace of 2h: want only the failed machine fatal, got %v (%v)", ds, err)
	}
}
