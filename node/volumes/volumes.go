// Package volumes is the `volumes` step: it attaches each EBS volume of the
// volumes plan to this instance (by id, or the first free one whose tags
// match in the instance's availability zone), waits for its device (the
// name given to AttachVolume, its /dev/sdX twin, or on Nitro instances the
// NVMe device whose serial is the volume id), makes a filesystem only when
// the device holds no signature at all, mounts it, keeps it in /etc/fstab,
// and turns the volume's tags into facts (Volume.Facts).
package volumes

import (
	"bufio"
	"context"
	"errors"
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
	"github.com/kube-aws/kube-aws/node/command"
	"github.com/kube-aws/kube-aws/node/retry"
	"github.com/kube-aws/kube-aws/plugins/sdk/fileutil"
)

// Options tune the step.
type Options struct {
	// Run runs blkid, mkfs and mount (command.Exec on a machine).
	Run command.Runner
	// Timeout bounds finding, attaching and seeing each volume: a
	// replaced instance's volume is free only once the old instance has
	// let go of it.
	Timeout time.Duration
	// Poll is how often the device and the attachment are checked.
	Poll time.Duration
}

// Run is the step.
func Run(ctx context.Context, e *agent.Env, o Options) error {
	var plan nodeplan.VolumesPlan
	if found, err := e.OptionalPlan(nodeplan.VolumesPath, &plan); err != nil || !found {
		return err
	}
	client := ec2.NewFromConfig(e.AWS)
	for i, v := range plan.Volumes {
		field := fmt.Sprintf("volumes[%d] (%s)", i, v.Name)
		if err := one(ctx, e, o, client, v); err != nil {
			return fmt.Errorf("%s: %w", field, err)
		}
	}
	return nil
}

func one(ctx context.Context, e *agent.Env, o Options, client *ec2.Client, v nodeplan.Volume) error {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	started := time.Now()
	a := &attacher{e: e, o: o, ec2: client, instance: e.Facts[nodeplan.FactInstanceID], zone: e.Facts[nodeplan.FactAvailabilityZone]}
	var vol types.Volume
	err := retry.Do(ctx, retry.Policy{Initial: o.Poll, Max: 10 * o.Poll, Factor: 1.5}, func(ctx context.Context) error {
		var err error
		vol, err = a.attach(ctx, v)
		return err
	}, e.Retrying(v.Name))
	if err != nil {
		return err
	}
	id := aws.ToString(vol.VolumeId)
	dev, err := waitDevice(ctx, e, o, v.Device, id)
	if err != nil {
		return err
	}
	e.Logf("%s: %s is attached as %s (%s)", v.Name, id, dev, time.Since(started).Round(time.Millisecond))
	uuid, err := filesystem(ctx, e, o, v, dev)
	if err != nil {
		return err
	}
	if err := fstab(e, v, uuid); err != nil {
		return fmt.Errorf("/etc/fstab: %w", err)
	}
	if err := mount(ctx, e, o, v, dev); err != nil {
		return err
	}
	if len(v.Facts) > 0 {
		tags := map[string]string{}
		for _, t := range vol.Tags {
			tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
		}
		facts := nodeplan.Facts{}
		for name, key := range v.Facts {
			val, ok := tags[key]
			if !ok || val == "" {
				return agent.BadInput(fmt.Errorf("fact %s: volume %s has no tag %s", name, id, key))
			}
			facts[name] = val
		}
		if err := e.AddFacts(facts); err != nil {
			return err
		}
		e.Logf("%s: facts %v", v.Name, facts)
	}
	return nil
}

type attacher struct {
	e              *agent.Env
	o              Options
	ec2            *ec2.Client
	instance, zone string
}

// attach returns the volume once it is attached to this instance.
func (a *attacher) attach(ctx context.Context, v nodeplan.Volume) (types.Volume, error) {
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
	p := ec2.NewDescribeVolumesPaginator(a.ec2, in)
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			if code(err) == "InvalidVolume.NotFound" {
				return types.Volume{}, agent.BadInput(fmt.Errorf("volume %s does not exist", v.VolumeID))
			}
			return types.Volume{}, fmt.Errorf("describing volumes: %w", err)
		}
		vols = append(vols, out.Volumes...)
	}
	sort.Slice(vols, func(i, j int) bool { return aws.ToString(vols[i].VolumeId) < aws.ToString(vols[j].VolumeId) })
	if len(vols) == 0 {
		return types.Volume{}, agent.BadInput(fmt.Errorf("no volume has tags %v in %s", v.Tags, a.zone))
	}
	// Mine already: a reboot, or the step run again.
	for _, vol := range vols {
		if st, ok := a.attachedHere(vol); ok {
			if st == types.VolumeAttachmentStateAttached {
				return vol, nil
			}
			return types.Volume{}, fmt.Errorf("%s is %s", aws.ToString(vol.VolumeId), st)
		}
	}
	var busy []string
	for _, vol := range vols {
		id := aws.ToString(vol.VolumeId)
		if vol.State != types.VolumeStateAvailable {
			busy = append(busy, describe(vol))
			continue
		}
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

// waitDevice waits for the attached volume's block device and returns its
// path (under the root).
func waitDevice(ctx context.Context, e *agent.Env, o Options, device, volumeID string) (string, error) {
	names := []string{device}
	switch {
	case strings.HasPrefix(device, "/dev/sd"):
		names = append(names, "/dev/xvd"+strings.TrimPrefix(device, "/dev/sd"))
	case strings.HasPrefix(device, "/dev/xvd"):
		names = append(names, "/dev/sd"+strings.TrimPrefix(device, "/dev/xvd"))
	}
	serial := strings.ReplaceAll(volumeID, "-", "")
	names = append(names, "/dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_"+serial)
	t := time.NewTicker(o.Poll)
	defer t.Stop()
	for {
		for _, n := range names {
			if st, err := os.Stat(e.Path(n)); err == nil && st.Mode()&os.ModeDevice != 0 {
				return e.Path(n), nil
			}
		}
		if d := nvmeBySerial(e, serial); d != "" {
			return d, nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%s is attached but no device appeared (looked for %s and an NVMe device with serial %s)", volumeID, strings.Join(names, ", "), serial)
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

// filesystem makes the plan's filesystem on a blank device, refuses one
// that holds anything else, and returns the filesystem's UUID.
func filesystem(ctx context.Context, e *agent.Env, o Options, v nodeplan.Volume, dev string) (string, error) {
	// blkid -p probes the device itself (no cache); exit 2: no signature.
	out, err := o.Run(ctx, "blkid", "-p", "-o", "export", dev)
	switch {
	case err == nil:
		kind := field(out, "TYPE")
		if kind != v.Filesystem {
			if kind == "" {
				kind = "a " + strings.ToLower(field(out, "PTTYPE")) + " partition table"
			}
			return "", agent.BadInput(fmt.Errorf("%s holds %s, the plan says %s: refusing to format a device that is not blank", dev, kind, v.Filesystem))
		}
		e.Logf("%s: %s already has %s", v.Name, dev, kind)
	case command.ExitCode(err) == 2:
		if _, err := o.Run(ctx, "mkfs."+v.Filesystem, "-q", dev); err != nil {
			return "", err
		}
		e.Logf("%s: made %s on blank %s", v.Name, v.Filesystem, dev)
	default:
		return "", err
	}
	out, err = o.Run(ctx, "blkid", "-p", "-o", "export", dev)
	if err != nil {
		return "", err
	}
	uuid := field(out, "UUID")
	if uuid == "" {
		return "", fmt.Errorf("%s: blkid found no UUID", dev)
	}
	return uuid, nil
}

func field(export, name string) string {
	for _, l := range strings.Split(export, "\n") {
		if v, ok := strings.CutPrefix(l, name+"="); ok {
			return v
		}
	}
	return ""
}

// fstab keeps one line for the mount point, by UUID, nofail (a missing
// volume must not stop the machine from booting).
func fstab(e *agent.Env, v nodeplan.Volume, uuid string) error {
	p := e.Path("/etc/fstab")
	b, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	opts := v.MountOptions
	if opts == "" {
		opts = "defaults"
	}
	line := fmt.Sprintf("UUID=%s %s %s %s,nofail 0 2", uuid, v.MountPoint, v.Filesystem, opts)
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
	if out == string(b) {
		return nil
	}
	return fileutil.WriteAtomic(p, []byte(out), 0o644)
}

func mount(ctx context.Context, e *agent.Env, o Options, v nodeplan.Volume, dev string) error {
	target := e.Path(v.MountPoint)
	if mounted(target) {
		e.Logf("%s: %s is mounted", v.Name, v.MountPoint)
		return nil
	}
	if err := os.MkdirAll(target, 0o755); err != nil {
		return err
	}
	opts := v.MountOptions
	if opts == "" {
		opts = "defaults"
	}
	if _, err := o.Run(ctx, "mount", "-t", v.Filesystem, "-o", opts, dev, target); err != nil {
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
