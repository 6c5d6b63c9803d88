// Package volumes is the `volumes` step: it attaches each EBS volume of the
// volumes plan to this instance (by id, or the first free one whose tags
// match in the instance's availability zone), waits for its device (the
// name given to AttachVolume, its /dev/sdX twin, or on Nitro instances the
// NVMe device whose serial is the volume id), makes a filesystem only when
// the device holds no signature at all, mounts it, keeps it in /etc/fstab,
// and turns the volume's tags into facts (Volume.Facts).
//
// Check asks EC2 and looks at the device once; a volume that is attached,
// formatted, in /etc/fstab, mounted and whose facts are kept is current.
// Apply takes every other volume through the whole sequence, each part of
// which does only what is still to do: a device appears only once its
// volume is attached, and a device that is not blank is never formatted.
package volumes

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/awsenv"
	"github.com/kube-aws/kube-aws/node/command"
	"github.com/kube-aws/kube-aws/node/retry"
	"github.com/kube-aws/kube-aws/node/step"
	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

// Step is the step.
type Step struct {
	// Exec runs blkid, mkfs and mount (command.Exec on a machine).
	Exec command.Runner
	// Timeout bounds finding, attaching and seeing each volume: a
	// replaced instance's volume is free only once the old instance has
	// let go of it.
	Timeout time.Duration
	// Poll is how often the device and the attachment are checked.
	Poll time.Duration
}

// New is the step as kube-aws-node runs it.
func New() *Step { return &Step{Exec: command.Exec, Poll: 500 * time.Millisecond} }

func (*Step) Name() string { return nodeplan.StepVolumes }

func (s *Step) Flags(fs *flag.FlagSet) {
	fs.DurationVar(&s.Timeout, "timeout", 10*time.Minute, "how long each volume may take to become free, attach and appear")
}

// planned is a volume of the plan with something to do; every change of
// the volume points to it.
type planned struct {
	field string
	plan  nodeplan.Volume
}

// Check looks at each volume in EC2 and on the machine.
func (s *Step) Check(ctx context.Context, e *agent.Env) (step.Changes, error) {
	var plan nodeplan.VolumesPlan
	if found, err := e.OptionalPlan(nodeplan.VolumesPath, &plan); err != nil || !found {
		return nil, err
	}
	a := s.attacher(e)
	var changes step.Changes
	for i, v := range plan.Volumes {
		w := &planned{field: fmt.Sprintf("volumes[%d] (%s)", i, v.Name), plan: v}
		c, err := s.check(ctx, e, a, w)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", w.field, err)
		}
		changes = append(changes, c...)
	}
	return changes, nil
}

func (s *Step) check(ctx context.Context, e *agent.Env, a *attacher, w *planned) (step.Changes, error) {
	v := w.plan
	var out step.Changes
	add := func(action, target, detail string) {
		out = append(out, step.Change{Action: action, Target: target, Detail: detail, Data: w})
	}
	f, err := a.find(ctx, v)
	if err != nil {
		return nil, err
	}
	var vol *types.Volume
	dev := ""
	switch {
	case f.here != nil:
		vol = f.here
		id := aws.ToString(vol.VolumeId)
		if st, _ := a.attachedHere(*vol); st != types.VolumeAttachmentStateAttached {
			add("wait", id, fmt.Sprintf("%s: until it is attached here (it is %s)", v.Name, st))
		} else {
			dev = device(e, v.Device, id)
		}
	case len(f.free) > 0:
		vol = &f.free[0]
		add("attach", aws.ToString(vol.VolumeId), v.Name+": as "+v.Device)
	default:
		add("wait", v.Name, "until a volume is free: "+strings.Join(f.busy, ", "))
	}
	if dev == "" {
		add("format", v.Device, fmt.Sprintf("%s: make %s if the device is blank", v.Name, v.Filesystem))
		add("write", "/etc/fstab", v.Name+": a line mounting its filesystem on "+v.MountPoint)
	} else {
		uuid, blank, err := s.filesystemOf(ctx, v, dev)
		switch {
		case err != nil:
			return nil, err
		case blank:
			add("format", dev, fmt.Sprintf("%s: make %s on the blank device", v.Name, v.Filesystem))
			add("write", "/etc/fstab", v.Name+": a line mounting the new filesystem on "+v.MountPoint)
		default:
			e.Logf("%s: %s already has %s", v.Name, dev, v.Filesystem)
			if _, changed, err := fstab(e, v, uuid); err != nil {
				return nil, fmt.Errorf("/etc/fstab: %w", err)
			} else if changed {
				add("write", "/etc/fstab", v.Name+": "+fstabLine(v, uuid))
			}
		}
	}
	if !mounted(e.Path(v.MountPoint)) {
		add("mount", v.MountPoint, v.Name+": "+v.Filesystem+", "+mountOptions(v))
	}
	if len(v.Facts) > 0 {
		if vol == nil {
			add("keep", "facts", v.Name+": from the tags of the volume it gets")
		} else {
			facts, err := volumeFacts(v, *vol)
			if err != nil {
				return nil, err
			}
			if !kept(e.Facts, facts) {
				add("keep", "facts", fmt.Sprintf("%s: %v", v.Name, facts))
			}
		}
	}
	return out, nil
}

// kept reports whether every fact of more is in facts, with its value.
func kept(facts, more nodeplan.Facts) bool {
	for k, v := range more {
		if facts[k] != v {
			return false
		}
	}
	return true
}

// Apply takes each volume with a change through attaching, its device,
// its filesystem, /etc/fstab, mounting and its facts, in plan order.
func (s *Step) Apply(ctx context.Context, e *agent.Env, changes step.Changes) error {
	a := s.attacher(e)
	var last *planned
	for _, c := range changes {
		w := c.Data.(*planned)
		if w == last {
			continue
		}
		last = w
		if err := s.apply(ctx, e, a, w.plan); err != nil {
			return fmt.Errorf("%s: %w", w.field, err)
		}
	}
	return nil
}

func (s *Step) apply(ctx context.Context, e *agent.Env, a *attacher, v nodeplan.Volume) error {
	ctx, cancel := context.WithTimeout(ctx, s.Timeout)
	defer cancel()
	started := time.Now()
	var vol types.Volume
	err := retry.Do(ctx, retry.Policy{Initial: s.Poll, Max: 10 * s.Poll, Factor: 1.5}, func(ctx context.Context) error {
		var err error
		vol, err = a.attach(ctx, v)
		return err
	}, e.Retrying(v.Name))
	if err != nil {
		return err
	}
	id := aws.ToString(vol.VolumeId)
	dev, err := s.waitDevice(ctx, e, v.Device, id)
	if err != nil {
		return err
	}
	e.Logf("%s: %s is attached as %s (%s)", v.Name, id, dev, time.Since(started).Round(time.Millisecond))
	uuid, blank, err := s.filesystemOf(ctx, v, dev)
	if err != nil {
		return err
	}
	if blank {
		if _, err := s.Exec(ctx, "mkfs."+v.Filesystem, "-q", dev); err != nil {
			return err
		}
		e.Logf("%s: made %s on blank %s", v.Name, v.Filesystem, dev)
		if uuid, _, err = s.filesystemOf(ctx, v, dev); err != nil {
			return err
		}
	} else {
		e.Logf("%s: %s already has %s", v.Name, dev, v.Filesystem)
	}
	if content, changed, err := fstab(e, v, uuid); err != nil {
		return fmt.Errorf("/etc/fstab: %w", err)
	} else if changed {
		if err := fileutil.WriteAtomic(e.Path("/etc/fstab"), content, 0o644); err != nil {
			return fmt.Errorf("/etc/fstab: %w", err)
		}
	}
	if err := s.mount(ctx, e, v, dev); err != nil {
		return err
	}
	if len(v.Facts) > 0 {
		facts, err := volumeFacts(v, vol)
		if err != nil {
			return err
		}
		if err := e.AddFacts(facts); err != nil {
			return err
		}
		e.Logf("%s: facts %v", v.Name, facts)
	}
	return nil
}

// volumeFacts are the facts a volume's tags give.
func volumeFacts(v nodeplan.Volume, vol types.Volume) (nodeplan.Facts, error) {
	tags := map[string]string{}
	for _, t := range vol.Tags {
		tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	facts := nodeplan.Facts{}
	for name, key := range v.Facts {
		val, ok := tags[key]
		if !ok || val == "" {
			return nil, agent.BadInput(fmt.Errorf("fact %s: volume %s has no tag %s", name, aws.ToString(vol.VolumeId), key))
		}
		facts[name] = val
	}
	return facts, nil
}

func (s *Step) attacher(e *agent.Env) *attacher {
	return &attacher{e: e, ec2: ec2.NewFromConfig(e.AWS), instance: e.Facts[nodeplan.FactInstanceID], zone: e.Facts[nodeplan.FactAvailabilityZone]}
}

type attacher struct {
	e              *agent.Env
	ec2            *ec2.Client
	instance, zone string
}

// found is what EC2 says of a volume of the plan: the one attached (or
// attaching) here, else the free ones and those others hold.
type found struct {
	here *types.Volume
	free []types.Volume
	busy []string
}

// find asks EC2 for the plan's volume, or the volumes its tags match.
func (a *attacher) find(ctx context.Context, v nodeplan.Volume) (found, error) {
	in := &ec2.DescribeVolumesInput{}
	if v.VolumeID != "" {
		in.VolumeIds = []string{v.VolumeID}
	} else {
		in.Filters = []types.Filter{{Name: aws.String("availability-zone"), Values: []string{a.zone}}}
		keys := make([]string, 0, len(v.Tags))
		for k := range v.Tags {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			in.Filters = append(in.Filters, types.Filter{Name: aws.String("tag:" + k), Values: []string{v.Tags[k]}})
		}
	}
	var vols []types.Volume
	p := ec2.NewDescribeVolumesPaginator(awsenv.EC2DescribeVolumes(a.ec2.DescribeVolumes), in)
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			if code(err) == "InvalidVolume.NotFound" {
				return found{}, agent.BadInput(fmt.Errorf("volume %s does not exist", v.VolumeID))
			}
			return found{}, fmt.Errorf("describing volumes: %w", err)
		}
		vols = append(vols, out.Volumes...)
	}
	sort.Slice(vols, func(i, j int) bool { return aws.ToString(vols[i].VolumeId) < aws.ToString(vols[j].VolumeId) })
	if len(vols) == 0 {
		return found{}, agent.BadInput(fmt.Errorf("no volume has tags %v in %s", v.Tags, a.zone))
	}
	var f found
	for i, vol := range vols {
		// Mine already: a reboot, or the step run again.
		if _, ok := a.attachedHere(vol); ok {
			f.here = &vols[i]
			return f, nil
		}
	}
	for _, vol := range vols {
		if vol.State == types.VolumeStateAvailable {
			f.free = append(f.free, vol)
		} else {
			f.busy = append(f.busy, describe(vol))
		}
	}
	return f, nil
}

// attach returns the volume once it is attached to this instance.
func (a *attacher) attach(ctx context.Context, v nodeplan.Volume) (types.Volume, error) {
	f, err := a.find(ctx, v)
	if err != nil {
		return types.Volume{}, err
	}
	if f.here != nil {
		if st, _ := a.attachedHere(*f.here); st != types.VolumeAttachmentStateAttached {
			return types.Volume{}, fmt.Errorf("%s is %s", aws.ToString(f.here.VolumeId), st)
		}
		return *f.here, nil
	}
	busy := f.busy
	for _, vol := range f.free {
		id := aws.ToString(vol.VolumeId)
		_, err := a.ec2.AttachVolume(ctx, &ec2.AttachVolumeInput{Device: aws.String(v.Device), InstanceId: aws.String(a.instance), VolumeId: aws.String(id)})
		if err != nil {
			switch code(err) {
			case "VolumeInUse", "IncorrectState":
				// Another instance took it between describe and attach.
				busy = append(busy, id+" (taken meanwhile)")
				continue
			}
			return types.Volume{}, fmt.Errorf("attaching %s as %s: %w", id, v.Device, err)
		}
		a.e.Logf("%s: attaching %s as %s", v.Name, id, v.Device)
		return types.Volume{}, fmt.Errorf("%s is attaching", id)
	}
	return types.Volume{}, fmt.Errorf("no volume is free: %s", strings.Join(busy, ", "))
}

func (a *attacher) attachedHere(vol types.Volume) (types.VolumeAttachmentState, bool) {
	for _, at := range vol.Attachments {
		if aws.ToString(at.InstanceId) == a.instance {
			return at.State, true
		}
	}
	return "", false
}

func describe(vol types.Volume) string {
	s := aws.ToString(vol.VolumeId) + " (" + string(vol.State)
	for _, at := range vol.Attachments {
		s += " to " + aws.ToString(at.InstanceId)
	}
	return s + ")"
}

func code(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

// deviceNames are where an attached volume's block device may appear.
func deviceNames(device, volumeID string) []string {
	names := []string{device}
	switch {
	case strings.HasPrefix(device, "/dev/sd"):
		names = append(names, "/dev/xvd"+strings.TrimPrefix(device, "/dev/sd"))
	case strings.HasPrefix(device, "/dev/xvd"):
		names = append(names, "/dev/sd"+strings.TrimPrefix(device, "/dev/xvd"))
	}
	return append(names, "/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_"+serial(volumeID))
}

// serial is a volume's NVMe serial: its id without the dash.
func serial(volumeID string) string { return strings.ReplaceAll(volumeID, "-", "") }

// device returns the path (under the root) of the attached volume's block
// device, or "" when none is there.
func device(e *agent.Env, device, volumeID string) string {
	for _, n := range deviceNames(device, volumeID) {
		if st, err := os.Stat(e.Path(n)); err == nil && st.Mode()&os.ModeDevice != 0 {
			return e.Path(n)
		}
	}
	return nvmeBySerial(e, serial(volumeID))
}

// waitDevice waits for the attached volume's block device.
func (s *Step) waitDevice(ctx context.Context, e *agent.Env, dev, volumeID string) (string, error) {
	t := time.NewTicker(s.Poll)
	defer t.Stop()
	for {
		if d := device(e, dev, volumeID); d != "" {
			return d, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%s is attached but no device appeared (looked for %s and an NVMe device with serial %s)", volumeID, strings.Join(deviceNames(dev, volumeID), ", "), serial(volumeID))
		case <-t.C:
		}
	}
}

// nvmeBySerial finds the NVMe namespace whose controller's serial is the
// volume id without its dash, as EBS on Nitro reports it.
func nvmeBySerial(e *agent.Env, serial string) string {
	blocks, _ := os.ReadDir(e.Path("/sys/block"))
	for _, b := range blocks {
		if !strings.HasPrefix(b.Name(), "nvme") {
			continue
		}
		s, err := os.ReadFile(e.Path(filepath.Join("/sys/block", b.Name(), "device", "serial")))
		if err == nil && strings.TrimSpace(string(s)) == serial {
			if st, err := os.Stat(e.Path("/dev/" + b.Name())); err == nil && st.Mode()&os.ModeDevice != 0 {
				return e.Path("/dev/" + b.Name())
			}
		}
	}
	return ""
}

// filesystemOf probes the device itself (blkid -p, no cache): the UUID of
// the plan's filesystem on it, or blank when it holds no signature at all.
// Anything else on it is refused: it is never formatted.
func (s *Step) filesystemOf(ctx context.Context, v nodeplan.Volume, dev string) (uuid string, blank bool, err error) {
	out, err := s.Exec(ctx, "blkid", "-p", "-o", "export", dev)
	switch {
	case command.ExitCode(err) == 2:
		return "", true, nil
	case err != nil:
		return "", false, err
	}
	if kind := field(out, "TYPE"); kind != v.Filesystem {
		if kind == "" {
			kind = "a " + strings.ToLower(field(out, "PTTYPE")) + " partition table"
		}
		return "", false, agent.BadInput(fmt.Errorf("%s holds %s, the plan says %s: refusing to format a device that is not blank", dev, kind, v.Filesystem))
	}
	if uuid = field(out, "UUID"); uuid == "" {
		return "", false, fmt.Errorf("%s: blkid found no UUID", dev)
	}
	return uuid, false, nil
}

func field(export, name string) string {
	for _, l := range strings.Split(export, "\n") {
		if v, ok := strings.CutPrefix(l, name+"="); ok {
			return v
		}
	}
	return ""
}

func mountOptions(v nodeplan.Volume) string {
	if v.MountOptions == "" {
		return "defaults"
	}
	return v.MountOptions
}

// fstabLine mounts the filesystem by UUID, nofail (a missing volume must
// not stop the machine from booting).
func fstabLine(v nodeplan.Volume, uuid string) string {
	return fmt.Sprintf("UUID=%s %s %s %s,nofail 0 2", uuid, v.MountPoint, v.Filesystem, mountOptions(v))
}

// fstab is /etc/fstab with one line for the mount point, fstabLine, and
// whether that is a change.
func fstab(e *agent.Env, v nodeplan.Volume, uuid string) ([]byte, bool, error) {
	b, err := os.ReadFile(e.Path("/etc/fstab"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, false, err
	}
	line := fstabLine(v, uuid)
	var lines []string
	replaced := false
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		l := sc.Text()
		if f := strings.Fields(l); len(f) >= 2 && !strings.HasPrefix(f[0], "#") && f[1] == v.MountPoint {
			if !replaced {
				lines = append(lines, line)
				replaced = true
			}
			continue
		}
		lines = append(lines, l)
	}
	if !replaced {
		lines = append(lines, line)
	}
	out := strings.Join(lines, "\n") + "\n"
	return []byte(out), out != string(b), nil
}

func (s *Step) mount(ctx context.Context, e *agent.Env, v nodeplan.Volume, dev string) error {
	target := e.Path(v.MountPoint)
	if mounted(target) {
		e.Logf("%s: %s is mounted", v.Name, v.MountPoint)
		return nil
	}
	if err := os.MkdirAll(target, 0o755); err != nil {
		return err
	}
	if _, err := s.Exec(ctx, "mount", "-t", v.Filesystem, "-o", mountOptions(v), dev, target); err != nil {
		return err
	}
	e.Logf("%s: mounted %s on %s", v.Name, dev, v.MountPoint)
	return nil
}

// mounted reports whether something is mounted on target.
func mounted(target string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		// id parent major:minor root mount-point ...
		if f := strings.Fields(l); len(f) > 4 && unescape(f[4]) == target {
			return true
		}
	}
	return false
}

// unescape undoes mountinfo's octal escapes of space, tab, newline, \.
func unescape(s string) string {
	r := strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`)
	return r.Replace(s)
}
