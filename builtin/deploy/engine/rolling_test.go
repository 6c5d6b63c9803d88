package engine

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/kube-aws/kube-aws/builtin/deploy/engine/roll"
	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/test/awstest"
)

// machines plays, against moto, what the roll waits for: every instance of
// the cluster's groups boots and writes a ready status object, and the
// controllers' drainer answers every drain request (drained, or blocked
// for the instances in block).
type machines struct {
	f      *fixture
	asg    *autoscaling.Client
	ec2    *ec2.Client
	prefix string

	mu      sync.Mutex
	block   map[string]bool
	drained []string
	ready   map[string]bool
}

func playMachines(t *testing.T, f *fixture) (*machines, func()) {
	cfg := f.awsConfig()
	m := &machines{f: f, prefix: "clusters/" + f.name, block: map[string]bool{}, ready: map[string]bool{},
		asg: autoscaling.NewFromConfig(cfg, func(o *autoscaling.Options) { o.BaseEndpoint = aws.String(motoURL) }),
		ec2: ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(motoURL) })}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := m.once(ctx); err != nil && ctx.Err() == nil {
				t.Logf("machines: %v", err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return m, func() { cancel(); <-done }
}

func (m *machines) put(ctx context.Context, rel string, v any) error {
	b, _ := json.Marshal(v)
	_, err := m.f.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(m.f.bucket), Key: aws.String(m.prefix + "/" + rel), Body: strings.NewReader(string(b))})
	return err
}

func (m *machines) once(ctx context.Context) error {
	groups, err := m.asg.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{})
	if err != nil {
		return err
	}
	for _, g := range groups.AutoScalingGroups {
		role := ""
		for pool := range m.f.pools {
			if strings.HasPrefix(aws.ToString(g.AutoScalingGroupName), m.f.name+"-nodepool-"+pool+"-") {
				role = "nodepool-" + pool
			}
		}
		if role == "" {
			continue
		}
		for _, i := range g.Instances {
			id := aws.ToString(i.InstanceId)
			m.mu.Lock()
			seen := m.ready[id]
			m.ready[id] = true
			m.mu.Unlock()
			if !seen {
				st := nodeplan.Status{Role: role, InstanceID: id, Phase: nodeplan.PhaseReady, Seconds: 12, Goal: &nodeplan.GoalReport{Node: "node-" + id}}
				if err := m.put(ctx, nodeplan.StatusKey(role, id), st); err != nil {
					return err
				}
			}
		}
	}
	out, err := m.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{{Name: aws.String("tag-key"), Values: []string{nodeplan.DrainTag}}}})
	if err != nil {
		return err
	}
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			id := aws.ToString(i.InstanceId)
			for _, tag := range i.Tags {
				if aws.ToString(tag.Key) != nodeplan.DrainTag {
					continue
				}
				req, err := nodeplan.ParseDrainRequest(aws.ToString(tag.Value))
				if err != nil {
					return err
				}
				st := nodeplan.DrainStatus{InstanceID: id, Node: "node-" + id, Request: req.ID, Phase: nodeplan.DrainDrained}
				m.mu.Lock()
				if m.block[id] {
					st.Phase, st.Blocker = nodeplan.DrainBlocked, &nodeplan.DrainBlocker{Pod: "default/web-0", PDB: "default/web", Message: "0 disruptions allowed"}
				} else if !contains(m.drained, id) {
					m.drained = append(m.drained, id)
				}
				m.mu.Unlock()
				if err := m.put(ctx, nodeplan.DrainStatusKey(id), st); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func (f *fixture) poolInstances(t *testing.T, pool string) (version string, byVersion map[string][]string) {
	t.Helper()
	cfg := f.awsConfig()
	asg := autoscaling.NewFromConfig(cfg, func(o *autoscaling.Options) { o.BaseEndpoint = aws.String(motoURL) })
	groups, err := asg.DescribeAutoScalingGroups(context.Background(), &autoscaling.DescribeAutoScalingGroupsInput{})
	if err != nil {
		t.Fatal(err)
	}
	byVersion = map[string][]string{}
	for _, g := range groups.AutoScalingGroups {
		if !strings.HasPrefix(aws.ToString(g.AutoScalingGroupName), f.name+"-nodepool-"+pool) {
			continue
		}
		version = aws.ToString(g.LaunchTemplate.Version)
		for _, i := range g.Instances {
			byVersion[aws.ToString(i.LaunchTemplate.Version)] = append(byVersion[aws.ToString(i.LaunchTemplate.Version)], aws.ToString(i.InstanceId))
		}
	}
	return version, byVersion
}

// A change of a pool's userdata, through CloudFormation and moto playing
// AWS's in-place group update, leaves its machines on the old launch
// template version; up's roll then replaces each, a new one Ready before
// the old one is drained and terminated, and leaves the group at its size.
func TestRollReplacesAPoolsMachines(t *testing.T) {
	f := newFixture(t, map[string]int{"a": 2, "b": 1})
	e := f.engine(func(o *Options) {
		o.RollPoll = 20 * time.Millisecond
		o.BootGrace = time.Minute
		o.DrainTimeout = 10 * time.Second
	})
	m, stop := playMachines(t, f)
	defer stop()
	f.mustDeploy(e, f.render())
	_, before := f.poolInstances(t, "a")

	// A new secret changes the pools' userdata (each lists every secret).
	f.secrets = map[string]string{"((secret:app/extra))": "v"}
	target := f.render()
	res := f.mustDeploy(e, target)
	if res.Replaced["nodepool-a"] != 2 || res.Replaced["nodepool-b"] != 1 {
		t.Fatalf("replaced %v, want pool a's two machines and b's one\nevents:\n%s", res.Replaced, f.events.text())
	}
	version, after := f.poolInstances(t, "a")
	if len(after) != 1 || len(after[version]) != 2 {
		t.Fatalf("pool a after the roll: %v (group version %s)", after, version)
	}
	for _, old := range before["1"] {
		if !contains(m.drained, old) {
			t.Errorf("old machine %s went without a drain", old)
		}
	}
	// The log says, per machine, what happened and why.
	log := f.events.text()
	for _, want := range []string{"machine - out-of-date: 2 of 2 machines out of date", "replacing: launch template version 1 -> 2", "drained", "terminating", "gone"} {
		if !strings.Contains(log, want) {
			t.Errorf("events lack %q:\n%s", want, log)
		}
	}
	// Nothing left to roll: diff says no machine.
	d, err := e.Diff(context.Background(), target)
	if err != nil || len(d.Machines) != 0 {
		t.Fatalf("diff after the roll: %+v %v", d, err)
	}
}

// A drain that a PodDisruptionBudget blocks stops the roll at that
// machine, naming the pod and the budget; nothing is terminated and the
// drain request is withdrawn.
func TestRollStopsAtABlockedDrain(t *testing.T) {
	f := newFixture(t, map[string]int{"a": 1})
	e := f.engine(func(o *Options) {
		o.RollPoll = 20 * time.Millisecond
		o.BootGrace = time.Minute
		o.DrainTimeout = 10 * time.Second
	})
	m, stop := playMachines(t, f)
	defer stop()
	f.mustDeploy(e, f.render())
	_, before := f.poolInstances(t, "a")
	old := before["1"][0]
	m.mu.Lock()
	m.block[old] = true
	m.mu.Unlock()

	f.secrets = map[string]string{"((secret:app/extra))": "v"}
	target := f.render()
	// diff lists the machine first.
	d, err := e.Diff(context.Background(), target)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Machines) != 1 || d.Machines[0].InstanceID != old {
		t.Fatalf("diff machines %+v", d.Machines)
	}
	_, err = e.Deploy(context.Background(), target)
	var re *roll.Error
	if !errors.As(err, &re) || re.Instance != old || !strings.Contains(err.Error(), "PodDisruptionBudget default/web") || !strings.Contains(err.Error(), "nothing was terminated") {
		t.Fatalf("deploy: %v", err)
	}
	_, after := f.poolInstances(t, "a")
	if !contains(after["1"], old) {
		t.Errorf("the blocked machine is gone: %v", after)
	}
	cfg := f.awsConfig()
	ec := ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.BaseEndpoint = aws.String(motoURL) })
	out, err := ec.DescribeTags(context.Background(), &ec2.DescribeTagsInput{Filters: []ec2types.Filter{
		{Name: aws.String("resource-id"), Values: []string{old}}, {Name: aws.String("key"), Values: []string{nodeplan.DrainTag}}}})
	if err != nil || len(out.Tags) != 0 {
		t.Errorf("drain request left on %s: %v %v", old, out.Tags, err)
	}
	_ = awstest.Region
}
