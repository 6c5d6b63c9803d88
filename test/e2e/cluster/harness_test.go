//go:build e2ecluster

package cluster

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"golang.org/x/sys/unix"

	"github.com/kube-aws/kube-aws/test/machines"
	"github.com/kube-aws/kube-aws/test/machines/nspawn"
	"github.com/kube-aws/kube-aws/test/machines/player"
)

// TestHarness proves the harness before any cluster exists: an instance of
// the proof stack boots from its launch template's user data and uses every
// service the harness plays (IMDSv2 and its role's credentials, S3 through
// AWS_ENDPOINT_URL, Route 53 through the VPC resolver, EC2 AttachVolume with
// the volume hot-plugged, the load balancer); then its instance is
// terminated, the Auto Scaling group replaces it, and the replacement finds
// what the first wrote on the volume.
func TestHarness(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	t0 := time.Now()
	r, err := startRun(ctx, os.Stderr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		r.h.Hold()
		td := time.Now()
		if err := r.close(t.Failed()); err != nil {
			t.Errorf("teardown: %v", err)
		}
		t.Logf("teardown took %v", time.Since(td).Round(time.Millisecond))
	})
	t.Logf("harness and proof stack up in %v (root filesystem built: %v)", time.Since(t0).Round(time.Millisecond), r.h.Image.Built)

	ids, err := r.groupInstances(ctx)
	if err != nil || len(ids) != 1 {
		t.Fatalf("proof group instances: %v, %v; want one", ids, err)
	}
	first := ids[0]
	st := r.checkInstance(ctx, t, first)
	if st.Found != "none" {
		t.Errorf("first instance found %q on a new volume, want none", st.Found)
	}

	// Terminate it: moto's group launches a replacement, the player kills
	// the first machine and boots the replacement.
	if _, err := r.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{first}}); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	ids, err = r.groupInstances(ctx)
	if err != nil || len(ids) != 1 || ids[0] == first {
		t.Fatalf("after terminating %s the group has %v (%v); want one replacement", first, ids, err)
	}
	second := ids[0]
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	err = r.h.Player().Wait(wctx, func(p *player.Player) bool {
		_, up := p.Machine(first)
		return !up
	})
	wcancel()
	if err != nil {
		t.Fatalf("the machine of terminated instance %s is still running: %v", first, err)
	}
	t.Logf("machine of terminated %s killed %v after TerminateInstances", first, time.Since(killed).Round(time.Millisecond))
	if _, err := os.Stat(r.h.Logs.JournalPath(first)); err != nil {
		t.Errorf("journal of the killed machine was not kept: %v", err)
	}
	st2 := r.checkInstance(ctx, t, second)
	if want := "written-by " + first; st2.Found != want {
		t.Errorf("replacement %s found %q on the volume, want %q", second, st2.Found, want)
	}
	if m, ok := r.h.Player().Machine(second); ok {
		checkDiskGivesBack(t, m)
	}

	// Scale out: an instance launched later boots too (its bootstrap
	// stops at AttachVolume, the volume being in use: only the boot and
	// its credentials are checked). Scale in: its machine goes.
	if _, err := r.asg.SetDesiredCapacity(ctx, &autoscaling.SetDesiredCapacityInput{AutoScalingGroupName: aws.String(r.group(ctx, t)), DesiredCapacity: aws.Int32(2)}); err != nil {
		t.Fatal(err)
	}
	ids, err = r.groupInstances(ctx)
	if err != nil || len(ids) != 2 {
		t.Fatalf("after scaling out to 2 the group has %v (%v)", ids, err)
	}
	third := ids[0]
	if third == second {
		third = ids[1]
	}
	wctx, wcancel = context.WithTimeout(ctx, 60*time.Second)
	err = r.h.Player().Wait(wctx, func(p *player.Player) bool {
		_, up := p.Machine(third)
		b, _ := os.ReadFile(r.h.Logs.ConsolePath(third))
		return up && strings.Contains(string(b), "harness-bootstrap: instance "+third)
	})
	wcancel()
	if err != nil {
		t.Fatalf("scaled-out instance %s did not boot and get its role's credentials: %v\nconsole:\n%s", third, err, r.consoleTail(third))
	}
	if m, ok := r.h.Player().Machine(third); ok {
		t.Logf("scaled-out %s got its credentials %.2fs after machine start", third, time.Since(m.Started).Seconds())
	}
	if _, err := r.asg.SetDesiredCapacity(ctx, &autoscaling.SetDesiredCapacityInput{AutoScalingGroupName: aws.String(r.group(ctx, t)), DesiredCapacity: aws.Int32(1)}); err != nil {
		t.Fatal(err)
	}
	wctx, wcancel = context.WithTimeout(ctx, 30*time.Second)
	err = r.h.Player().Wait(wctx, func(p *player.Player) bool { return len(p.Machines()) == 1 })
	wcancel()
	if err != nil {
		t.Fatalf("after scaling in to 1, machines %d: %v", len(r.h.Player().Machines()), err)
	}
}

// checkDiskGivesBack proves that what a machine deletes leaves the host's
// disk: 64 MiB written on the machine's disk and deleted again must leave
// its sparse file, or a run's disk use is the most its machines ever wrote.
func checkDiskGivesBack(t *testing.T, m *player.Machine) {
	t.Helper()
	img := m.DiskImage()
	if img == "" {
		t.Fatalf("machine %s has no disk of its own", m.Instance.ID)
	}
	allocated := func() int64 {
		var st syscall.Stat_t
		if err := syscall.Stat(img, &st); err != nil {
			t.Fatal(err)
		}
		return st.Blocks * 512
	}
	probe := filepath.Join(m.Upper(), "var", "tmp", "disk-probe")
	if err := os.MkdirAll(filepath.Dir(probe), 0o755); err != nil {
		t.Fatal(err)
	}
	const size = 64 << 20
	if err := os.WriteFile(probe, bytes.Repeat([]byte{0xa5}, size), 0o644); err != nil {
		t.Fatal(err)
	}
	syncFS(t, probe)
	written := allocated()
	if err := os.Remove(probe); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	deadline := deleted.Add(15 * time.Second)
	for {
		syncFS(t, m.Upper())
		after := allocated()
		if written-after >= size*3/4 {
			t.Logf("%s: %d MiB deleted on the machine's disk left the host's in %v", m.Instance.ID, (written-after)>>20, time.Since(deleted).Round(time.Millisecond))
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: 64 MiB written then deleted on the machine's disk: its file %s holds %d MiB before the delete and %d MiB after; the host keeps what machines delete", m.Instance.ID, img, written>>20, after>>20)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// syncFS commits the filesystem that holds path (its journal included,
// which is when ext4 sends the discards of what was deleted).
func syncFS(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		t.Fatal(err)
	}
}

// group returns the proof group's name.
func (r *run) group(ctx context.Context, t *testing.T) string {
	out, err := r.asg.DescribeAutoScalingGroups(ctx, &autoscaling.DescribeAutoScalingGroupsInput{})
	if err != nil || len(out.AutoScalingGroups) != 1 {
		t.Fatalf("proof groups: %v, %v", out, err)
	}
	return aws.ToString(out.AutoScalingGroups[0].AutoScalingGroupName)
}

// checkInstance waits for instance id's machine and its status, and checks
// every step of bootstrap.sh from the outside too.
func (r *run) checkInstance(ctx context.Context, t *testing.T, id string) *status {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	err := r.h.Player().Wait(wctx, func(p *player.Player) bool { _, ok := p.Machine(id); return ok })
	cancel()
	if err != nil {
		t.Fatalf("no machine for instance %s: %v (player: %v)", id, err, r.h.Player().Err())
	}
	m, _ := r.h.Player().Machine(id)
	sctx, cancel := context.WithTimeout(ctx, 120*time.Second)
	st, err := r.waitStatus(sctx, id)
	cancel()
	if err != nil {
		t.Fatalf("%v\nconsole:\n%s", err, r.consoleTail(id))
	}
	started := float64(m.Started.UnixNano()) / 1e9
	var line []string
	for _, k := range []string{"start", "token", "credentials", "asset", "dns", "attach", "device", "mounted", "serving"} {
		v, ok := st.Times[k]
		if !ok {
			t.Errorf("%s: status has no time for %s", id, k)
			continue
		}
		line = append(line, fmt.Sprintf("%s %.2fs", k, v-started))
	}
	t.Logf("%s (machine start = 0): %s", id, strings.Join(line, ", "))
	if st.Instance != id || st.Address != m.Instance.PrivateIP.String() {
		t.Errorf("IMDS told %s it is %s at %s; moto says %s", id, st.Instance, st.Address, m.Instance.PrivateIP)
	}
	if st.Role != m.Instance.Role || st.Role == "" {
		t.Errorf("IMDS role %q, instance profile role %q", st.Role, m.Instance.Role)
	}

	// DNS: the machine resolved the record to the load balancer, and the
	// VPC resolver says the same to the test.
	lb, ok := r.h.LoadBalancerAddr(r.lbName(ctx, t))
	if !ok {
		t.Fatalf("the proof load balancer has no address on the run's network")
	}
	if st.Resolved != lb.String() {
		t.Errorf("%s resolved %s to %q, want the load balancer's %s", id, recordName, st.Resolved, lb)
	}
	snap := r.h.Player().Snapshot()
	vpcDNS := snap.VPCs[snap.Subnets[m.Instance.SubnetID].VPCID].DNS()
	addrs, err := r.h.Resolver(vpcDNS).LookupHost(ctx, recordName)
	if err != nil || len(addrs) != 1 || addrs[0] != lb.String() {
		t.Errorf("resolver %s: %s = %v, %v; want %s", vpcDNS, recordName, addrs, err, lb)
	}
	if _, err := r.h.Resolver(vpcDNS).LookupHost(ctx, "example.com"); err == nil {
		t.Errorf("resolver %s answered example.com; it must refuse names outside the run's zones", vpcDNS)
	}

	// The volume: moto records the attachment, the machine has the device.
	vo, err := r.ec2.DescribeVolumes(ctx, &ec2.DescribeVolumesInput{VolumeIds: []string{r.volume}})
	if err != nil {
		t.Fatal(err)
	}
	if a := vo.Volumes[0].Attachments; len(a) != 1 || aws.ToString(a[0].InstanceId) != id || a[0].State != ec2types.VolumeAttachmentStateAttached {
		t.Errorf("volume %s attachments %+v, want attached to %s", r.volume, a, id)
	}
	out, err := m.Exec("findmnt", "-n", "-o", "SOURCE,FSTYPE", "/data")
	if err == nil {
		b, err := out.CombinedOutput()
		if err != nil || strings.Fields(string(b))[0] != "/dev/xvdf" {
			t.Errorf("%s: /data is %q (%v), want /dev/xvdf", id, b, err)
		}
	} else {
		t.Error(err)
	}

	// The load balancer spreads to the registered instance.
	lctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	var got string
	for {
		got, err = r.askLB(lctx, netip.AddrPortFrom(lb, 80))
		if err == nil && got == "hello-from-"+id {
			break
		}
		if lctx.Err() != nil {
			t.Fatalf("load balancer %s:80 answered %q, %v; want hello-from-%s", lb, got, err, id)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("%s: load balancer %s:80 answered %q %.2fs after machine start", id, lb, got, time.Since(m.Started).Seconds())
	if d, err := cloudInitDone(m.Machine); err != nil {
		t.Error(err)
	} else {
		t.Logf("%s: cloud-init finished %.2fs after machine start", id, d.Seconds())
	}
	return st
}

// cloudInitDone is when cloud-final.service finished, from the machine's
// journal, relative to the machine's start.
func cloudInitDone(m *nspawn.Machine) (time.Duration, error) {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		cmd, err := m.Exec("journalctl", "-u", "cloud-final.service", "-o", "short-unix", "--no-pager")
		if err != nil {
			return 0, err
		}
		out, _ := cmd.Output()
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "Finished cloud-final.service") {
				var ts float64
				if _, err := fmt.Sscanf(l, "%f", &ts); err == nil {
					return time.Unix(0, int64(ts*1e9)).Sub(m.Started), nil
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return 0, fmt.Errorf("cloud-final.service did not finish within 30s")
}

func (r *run) lbName(ctx context.Context, t *testing.T) string {
	for _, lb := range r.h.Player().Snapshot().LoadBalancers {
		return lb.Name
	}
	t.Fatal("moto has no load balancer")
	return ""
}

func (r *run) askLB(ctx context.Context, addr netip.AddrPort) (string, error) {
	c, err := r.h.NS.DialContext(ctx, "tcp", addr.String())
	if err != nil {
		return "", err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	return strings.TrimSpace(line), err
}

// TestRunRefusesWithoutDiskSpace: a run that needs more free space than the
// host has says so before it makes anything, and leaves no run folder.
func TestRunRefusesWithoutDiskSpace(t *testing.T) {
	work := t.TempDir()
	_, err := machines.Start(context.Background(), machines.Options{AWS: aws.Config{Region: "us-east-1"}, Moto: "127.0.0.1:1", WorkDir: work, Log: io.Discard, MinFree: 1 << 62})
	if err == nil || !strings.Contains(err.Error(), "a run needs about") || !strings.Contains(err.Error(), work) {
		t.Fatalf("Start with too little space: %v; want a refusal naming %s", err, work)
	}
	t.Logf("refused: %v", err)
	if entries, _ := os.ReadDir(work); len(entries) != 0 {
		t.Errorf("the refused run left %d entries in %s", len(entries), work)
	}
}
