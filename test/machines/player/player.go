// Package player plays EC2 for the instances moto's Auto Scaling groups
// launch: every poll it reads a cloud snapshot, boots a local machine for
// each running instance that has none (with the user data of the launch
// template version it was launched from, not the group's latest, and its
// private address), kills the machine of every instance that is gone or
// terminated (an instance waiting on a termination hook is still running,
// and keeps its machine), and hot-plugs or unplugs volumes as moto records
// attachments.
package player

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kube-aws/kube-aws/test/machines/cloud"
	"github.com/kube-aws/kube-aws/test/machines/logs"
	"github.com/kube-aws/kube-aws/test/machines/nspawn"
	"github.com/kube-aws/kube-aws/test/machines/seed"
	"github.com/kube-aws/kube-aws/test/machines/volumes"
)

// Config is what the player needs.
type Config struct {
	Read    func(context.Context) (*cloud.Snapshot, error)
	Region  string
	NetNS   string // network namespace file
	Bridge  string
	Lower   string // root filesystem folder
	Dir     string // machines' overlays go under Dir/<instance id>
	Cgroup  string // parent cgroup of the machines
	Volumes *volumes.Store
	Logs    logs.Dir
	// Prepare is called with every snapshot before machines are booted
	// (the network and servers are set up for it).
	Prepare func(*cloud.Snapshot) error
	Poll    time.Duration
	Logf    func(format string, args ...any)
}

// Machine is an instance's machine.
type Machine struct {
	Instance cloud.Instance
	*nspawn.Machine
	plugged map[string]string // device -> volume id
	Killed  time.Time
}

// Player runs the loop.
type Player struct {
	cfg     Config
	mu      sync.Mutex
	running map[string]*Machine
	gone    []*Machine
	snap    *cloud.Snapshot
	changed chan struct{} // closed and replaced after every step
	lastErr error
}

// New returns a player.
func New(cfg Config) *Player {
	if cfg.Poll == 0 {
		cfg.Poll = time.Second
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	return &Player{cfg: cfg, running: map[string]*Machine{}, changed: make(chan struct{})}
}

// DomainFor is the domain of instance host names in a region, as EC2
// names them.
func DomainFor(region string) string {
	if region == "us-east-1" {
		return "ec2.internal"
	}
	return region + ".compute.internal"
}

// Hostname is an instance's private DNS name.
func Hostname(ip netip.Addr, region string) string {
	return "ip-" + strings.ReplaceAll(ip.String(), ".", "-") + "." + DomainFor(region)
}

// Run polls until ctx ends. A failed poll is logged and retried at the
// next tick (moto may be busy); it is also kept for Err.
func (p *Player) Run(ctx context.Context) {
	t := time.NewTicker(p.cfg.Poll)
	defer t.Stop()
	for {
		if err := p.Step(ctx); err != nil && ctx.Err() == nil {
			p.cfg.Logf("playing EC2: %v", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Err returns the error of the last poll, nil if it went well.
func (p *Player) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lastErr
}

// Step polls once and brings machines in line with the snapshot.
func (p *Player) Step(ctx context.Context) (err error) {
	defer func() {
		p.mu.Lock()
		p.lastErr = err
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
	}()
	snap, err := p.cfg.Read(ctx)
	if err != nil {
		return err
	}
	var errs []error
	if p.cfg.Prepare != nil {
		// A part of the network that failed (one load balancer port, say)
		// is reported, and does not keep every instance from booting.
		errs = append(errs, p.cfg.Prepare(snap))
	}
	p.mu.Lock()
	p.snap = snap
	p.mu.Unlock()
	// Kill first: a replacement may reuse the address of the instance it
	// replaces.
	for id, m := range p.snapshotRunning() {
		if in, ok := snap.Instances[id]; !ok || !in.Running() {
			p.cfg.Logf("instance %s is %s: killing its machine", id, stateOf(in))
			errs = append(errs, p.kill(m))
		}
	}
	ids := make([]string, 0, len(snap.Instances))
	for id := range snap.Instances {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		in := snap.Instances[id]
		if !in.Running() {
			continue
		}
		p.mu.Lock()
		_, ok := p.running[id]
		p.mu.Unlock()
		if ok {
			continue
		}
		if err := p.boot(snap, in); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, p.plugVolumes(snap))
	return errors.Join(errs...)
}

func stateOf(in *cloud.Instance) string {
	if in == nil {
		return "gone"
	}
	return in.State
}

func (p *Player) snapshotRunning() map[string]*Machine {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]*Machine, len(p.running))
	for k, v := range p.running {
		out[k] = v
	}
	return out
}

func (p *Player) boot(snap *cloud.Snapshot, in *cloud.Instance) error {
	sn, ok := snap.Subnets[in.SubnetID]
	if !ok {
		return fmt.Errorf("instance %s: its subnet %q is unknown", in.ID, in.SubnetID)
	}
	vpc, ok := snap.VPCs[sn.VPCID]
	if !ok {
		return fmt.Errorf("instance %s: the VPC %q of subnet %s is unknown", in.ID, sn.VPCID, sn.ID)
	}
	if !in.PrivateIP.IsValid() || !sn.CIDR.Contains(in.PrivateIP) {
		return fmt.Errorf("instance %s: private address %v is not in its subnet %s (%v)", in.ID, in.PrivateIP, sn.ID, sn.CIDR)
	}
	files, err := seed.Files(seed.Instance{
		ID: in.ID, Hostname: Hostname(in.PrivateIP, p.cfg.Region),
		Address: netip.PrefixFrom(in.PrivateIP, sn.CIDR.Bits()), Gateway: sn.Gateway(), DNS: vpc.DNS(),
		Search: []string{DomainFor(p.cfg.Region)}, UserData: in.UserData,
	})
	if err != nil {
		return err
	}
	console, err := p.cfg.Logs.Console(in.ID)
	if err != nil {
		return err
	}
	nm, err := nspawn.Start(nspawn.Config{
		Name: in.ID, Lower: p.cfg.Lower, Dir: filepath.Join(p.cfg.Dir, in.ID),
		NetNS: p.cfg.NetNS, Bridge: p.cfg.Bridge, Files: files,
		Cgroup: p.cfg.Cgroup + "/" + in.ID, Console: console,
		DiskGiB: rootSize(snap, in),
	})
	if err != nil {
		console.Close()
		return fmt.Errorf("booting instance %s: %w", in.ID, err)
	}
	// nspawn holds its own copy of the descriptor.
	go func() { <-nm.Exited(); console.Close() }()
	p.cfg.Logf("instance %s (%s, %s, %s, launch template %s version %s) booted as a machine", in.ID, in.Group, in.PrivateIP, in.Zone, in.LaunchTemplate, in.Version)
	p.mu.Lock()
	p.running[in.ID] = &Machine{Instance: *in, Machine: nm, plugged: map[string]string{}}
	p.mu.Unlock()
	return nil
}

// defaultRootGiB is a machine's disk when moto says nothing of its root
// volume: an EC2 launch template's usual size.
const defaultRootGiB = 30

// rootSize is the size of the instance's root volume, which its disk plays.
func rootSize(snap *cloud.Snapshot, in *cloud.Instance) int {
	for _, a := range snap.Attachments {
		if a.InstanceID == in.ID && a.Device == in.RootDevice && a.SizeGiB > 0 {
			return int(a.SizeGiB)
		}
	}
	return defaultRootGiB
}

func (p *Player) kill(m *Machine) error {
	err := m.Kill()
	m.Killed = time.Now()
	if jerr := p.cfg.Logs.ExportJournal(m.Instance.ID, m.Upper()); jerr != nil {
		p.cfg.Logf("%v", jerr)
	}
	if perr := p.cfg.Logs.ExportPodLogs(m.Instance.ID, m.Upper()); perr != nil {
		p.cfg.Logf("%v", perr)
	}
	// The machine's disk goes with the instance (its root volume); data
	// volumes live in the volume store.
	if rerr := m.Remove(); rerr != nil {
		p.cfg.Logf("%v", rerr)
	}
	p.mu.Lock()
	delete(p.running, m.Instance.ID)
	p.gone = append(p.gone, m)
	p.mu.Unlock()
	return err
}

func (p *Player) plugVolumes(snap *cloud.Snapshot) error {
	var errs []error
	want := map[string]map[string]cloud.Attachment{} // instance -> device -> attachment
	for _, a := range snap.Attachments {
		if in, ok := snap.Instances[a.InstanceID]; ok && a.Device == in.RootDevice {
			continue // the root volume is the machine's overlay
		}
		if want[a.InstanceID] == nil {
			want[a.InstanceID] = map[string]cloud.Attachment{}
		}
		want[a.InstanceID][a.Device] = a
	}
	for id, m := range p.snapshotRunning() {
		pid, err := m.Leader(5 * time.Second)
		if err != nil {
			continue // not up yet, or dying: the next poll sees it
		}
		for dev, vol := range m.plugged {
			if a, ok := want[id][dev]; !ok || a.VolumeID != vol {
				if err := volumes.Unplug(pid, dev); err != nil {
					errs = append(errs, err)
				}
				p.cfg.Logf("volume %s detached from %s (%s)", vol, id, dev)
				delete(m.plugged, dev)
			}
		}
		for dev, a := range want[id] {
			if m.plugged[dev] == a.VolumeID {
				continue
			}
			v, err := p.cfg.Volumes.Ensure(a.VolumeID, a.SizeGiB)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if err := volumes.Plug(pid, m.Cgroup().Dir("devices"), v, dev); err != nil {
				errs = append(errs, err)
				continue
			}
			m.plugged[dev] = a.VolumeID
			p.cfg.Logf("volume %s attached to %s as %s (%s)", a.VolumeID, id, dev, v.Loop)
		}
	}
	return errors.Join(errs...)
}

// Snapshot returns the last snapshot read.
func (p *Player) Snapshot() *cloud.Snapshot {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.snap
}

// Machine returns the running machine of instance id.
func (p *Player) Machine(id string) (*Machine, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m, ok := p.running[id]
	return m, ok
}

// Machines returns the running machines, by instance id.
func (p *Player) Machines() []*Machine {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*Machine, 0, len(p.running))
	for _, m := range p.running {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Instance.ID < out[j].Instance.ID })
	return out
}

// Gone returns the machines killed so far.
func (p *Player) Gone() []*Machine {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*Machine(nil), p.gone...)
}

// Wait waits until cond holds after a poll, or ctx ends.
func (p *Player) Wait(ctx context.Context, cond func(*Player) bool) error {
	for {
		p.mu.Lock()
		ch := p.changed
		p.mu.Unlock()
		if cond(p) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

// Close kills every machine and exports its journal.
func (p *Player) Close() error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, m := range p.snapshotRunning() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := p.kill(m)
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
