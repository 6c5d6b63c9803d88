package volumes

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/awsenv"
	"github.com/kube-aws/kube-aws/node/command"
	"github.com/kube-aws/kube-aws/node/step"
	"github.com/kube-aws/kube-aws/test/agenttest"
	"github.com/kube-aws/kube-aws/test/awstest"
)

var motoURL string

func TestMain(m *testing.M) { agenttest.MotoMain(m, &motoURL) }

const zone = awstest.Region + "a"

// instance launches an instance in moto and serves its metadata.
func instance(t *testing.T, client *ec2.Client) string {
	t.Helper()
	imgs, err := client.DescribeImages(t.Context(), &ec2.DescribeImagesInput{})
	if err != nil || len(imgs.Images) == 0 {
		t.Fatalf("moto has no image to launch: %v", err)
	}
	out, err := client.RunInstances(t.Context(), &ec2.RunInstancesInput{
		ImageId: imgs.Images[0].ImageId, MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
		Placement: &types.Placement{AvailabilityZone: aws.String(zone)},
	})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.Instances[0].InstanceId)
}

func volume(t *testing.T, client *ec2.Client, member string) string {
	t.Helper()
	out, err := client.CreateVolume(t.Context(), &ec2.CreateVolumeInput{
		AvailabilityZone: aws.String(zone), Size: aws.Int32(1),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeVolume, Tags: []types.Tag{
			{Key: aws.String("kube-aws:etcd-data"), Value: aws.String(t.Name())},
			{Key: aws.String("kube-aws:etcd-member"), Value: aws.String(member)},
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.VolumeId)
}

// loop makes a loop device of size MiB and links it at <root>/dev/<name>,
// as the harness hot-plugs one when moto records an attachment.
func loop(t *testing.T, root, name string, size int64) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "disk.img")
	f, _ := os.Create(img)
	f.Truncate(size << 20)
	f.Close()
	out, err := exec.Command("losetup", "--find", "--show", img).CombinedOutput()
	if err != nil {
		t.Fatalf("losetup (the volume tests need root and loop devices): %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { exec.Command("losetup", "-d", dev).Run() })
	os.MkdirAll(filepath.Join(root, "dev"), 0o755)
	if err := os.Symlink(dev, filepath.Join(root, "dev", name)); err != nil {
		t.Fatal(err)
	}
	return dev
}

func unmountAtEnd(t *testing.T, target string) {
	t.Cleanup(func() {
		if mounted(target) {
			if out, err := exec.Command("umount", target).CombinedOutput(); err != nil {
				t.Errorf("umount %s: %v %s", target, err, out)
			}
		}
	})
}

func writePlan(t *testing.T, e *agent.Env, p *nodeplan.VolumesPlan) {
	agenttest.WritePlan(t, e, nodeplan.VolumesPath, p)
}

var opts = Step{Exec: command.Exec, Timeout: 20 * time.Second, Poll: 20 * time.Millisecond}

func etcdPlan(t *testing.T) *nodeplan.VolumesPlan {
	return &nodeplan.VolumesPlan{Volumes: []nodeplan.Volume{{
		Name: "etcd-data", Tags: map[string]string{"kube-aws:etcd-data": t.Name()}, Device: "/dev/xvdf",
		Filesystem: "ext4", MountPoint: "/var/lib/etcd", Facts: map[string]string{"member": "kube-aws:etcd-member"},
	}}}
}

// An etcd member's data volume, found by tag, attached, formatted once,
// mounted, kept in fstab; its member tag becomes the {member} fact. A
// second run (a reboot) formats nothing.
func TestVolume(t *testing.T) {
	agenttest.UseMoto(t, motoURL)
	cfg, _ := awsenv.Load(t.Context(), awstest.Region)
	client := ec2.NewFromConfig(cfg)
	id := instance(t, client)
	agenttest.ServeIMDS(t, agenttest.Instance{ID: id, PrivateIPv4: "10.0.1.5", Hostname: "ip-10-0-1-5.ec2.internal", AvailabilityZone: zone})
	s := agenttest.Settings(t, "etcd")
	agenttest.SetSettings(t, s)
	e, out := agenttest.Env(t, "volumes", t.TempDir())
	busy := volume(t, client, "etcd0")
	other := instance(t, client)
	if _, err := client.AttachVolume(t.Context(), &ec2.AttachVolumeInput{Device: aws.String("/dev/xvdf"), InstanceId: aws.String(other), VolumeId: aws.String(busy)}); err != nil {
		t.Fatal(err)
	}
	free := volume(t, client, "etcd1")
	loop(t, e.Root, "xvdf", 64)
	unmountAtEnd(t, e.Path("/var/lib/etcd"))
	writePlan(t, e, etcdPlan(t))

	if err := step.Run(t.Context(), e, &opts); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	d, _ := agenttest.DryEnv(t, e)
	agenttest.ExpectDryRun(t, d, &opts, agenttest.Want{})
	vols, _ := client.DescribeVolumes(t.Context(), &ec2.DescribeVolumesInput{VolumeIds: []string{free}})
	if at := vols.Volumes[0].Attachments; len(at) != 1 || aws.ToString(at[0].InstanceId) != id || aws.ToString(at[0].Device) != "/dev/xvdf" {
		t.Errorf("attachments of %s: %+v", free, at)
	}
	if !mounted(e.Path("/var/lib/etcd")) {
		t.Fatal("not mounted")
	}
	fst, _ := os.ReadFile(e.Path("/etc/fstab"))
	if !strings.HasPrefix(string(fst), "UUID=") || !strings.HasSuffix(string(fst), " /var/lib/etcd ext4 defaults,nofail 0 2\n") {
		t.Errorf("fstab = %q", fst)
	}
	if e.Facts["member"] != "etcd1" {
		t.Errorf("facts = %v", e.Facts)
	}
	env, _ := os.ReadFile(e.Path(nodeplan.FactsEnvPath))
	if !strings.Contains(string(env), `KUBE_AWS_FACT_MEMBER="etcd1"`) {
		t.Errorf("facts.env = %s", env)
	}
	if !strings.Contains(out.String(), "made ext4 on blank") {
		t.Errorf("output:\n%s", out)
	}

	// Data written, then the step again, as after a reboot: same volume,
	// same filesystem, same data.
	os.WriteFile(e.Path("/var/lib/etcd/member"), []byte("data"), 0o600)
	exec.Command("umount", e.Path("/var/lib/etcd")).Run()
	d, _ = agenttest.DryEnv(t, e)
	agenttest.ExpectDryRun(t, d, &opts, agenttest.Want{Changes: []string{"mount /var/lib/etcd: etcd-data: ext4, defaults"}})
	out.Reset()
	if err := step.Run(t.Context(), e, &opts); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(e.Path("/var/lib/etcd/member")); string(b) != "data" {
		t.Errorf("data lost: %q", b)
	}
	if strings.Contains(out.String(), "made ext4") || !strings.Contains(out.String(), "already has ext4") {
		t.Errorf("second run:\n%s", out)
	}
	if again, _ := os.ReadFile(e.Path("/etc/fstab")); string(again) != string(fst) {
		t.Errorf("fstab changed: %q", again)
	}
}

func TestVolumeFailures(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, e *agent.Env, client *ec2.Client) *nodeplan.VolumesPlan
		want  string
		code  int
	}{
		{
			name: "not blank and not the plan's filesystem",
			setup: func(t *testing.T, e *agent.Env, client *ec2.Client) *nodeplan.VolumesPlan {
				volume(t, client, "etcd0")
				dev := loop(t, e.Root, "xvdf", 64)
				if out, err := exec.Command("mkfs.ext2", "-q", dev).CombinedOutput(); err != nil {
					t.Fatalf("%v %s", err, out)
				}
				return etcdPlan(t)
			},
			want: "holds ext2, the plan says ext4: refusing to format",
			code: agent.ExitBadInput,
		},
		{
			name: "every volume taken",
			setup: func(t *testing.T, e *agent.Env, client *ec2.Client) *nodeplan.VolumesPlan {
				v := volume(t, client, "etcd0")
				client.AttachVolume(t.Context(), &ec2.AttachVolumeInput{Device: aws.String("/dev/xvdf"), InstanceId: aws.String(instance(t, client)), VolumeId: aws.String(v)})
				return etcdPlan(t)
			},
			want: "no volume is free: vol-",
			code: agent.ExitFailed,
		},
		{
			name: "no such volume",
			setup: func(t *testing.T, e *agent.Env, client *ec2.Client) *nodeplan.VolumesPlan {
				return &nodeplan.VolumesPlan{Volumes: []nodeplan.Volume{{Name: "data", VolumeID: "vol-0123456789abcdef0", Device: "/dev/xvdg", Filesystem: "ext4", MountPoint: "/data"}}}
			},
			want: "volume vol-0123456789abcdef0 does not exist",
			code: agent.ExitBadInput,
		},
		{
			name: "attached but no device",
			setup: func(t *testing.T, e *agent.Env, client *ec2.Client) *nodeplan.VolumesPlan {
				volume(t, client, "etcd0")
				return etcdPlan(t)
			},
			want: "is attached but no device appeared (looked for /dev/xvdf, /dev/sdf, /dev/disk/by-id/nvme-Amazon_Elastic_Block_Store_vol",
			code: agent.ExitFailed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, client, _ := etcdMember(t)
			unmountAtEnd(t, e.Path("/var/lib/etcd"))
			writePlan(t, e, tt.setup(t, e, client))
			o := opts
			// Long enough for a few reads of moto on a loaded machine;
			// "every volume taken" waits all of it.
			o.Timeout = 6 * time.Second
			err := step.Run(context.Background(), e, &o)
			if err == nil || !strings.Contains(err.Error(), tt.want) || agent.ExitCode(err) != tt.code {
				t.Fatalf("err = %v (exit %d), want %q (exit %d)", err, agent.ExitCode(err), tt.want, tt.code)
			}
			if mounted(e.Path("/var/lib/etcd")) {
				t.Error("mounted despite the failure")
			}
		})
	}
}

// On Nitro instances the device is an NVMe namespace named by its serial.
func TestNVMeBySerial(t *testing.T) {
	root := t.TempDir()
	e := &agent.Env{Root: root}
	os.MkdirAll(filepath.Join(root, "sys/block/nvme1n1/device"), 0o755)
	os.WriteFile(filepath.Join(root, "sys/block/nvme1n1/device/serial"), []byte("vol0123456789abcdef0  \n"), 0o644)
	os.MkdirAll(filepath.Join(root, "sys/block/nvme0n1/device"), 0o755)
	os.WriteFile(filepath.Join(root, "sys/block/nvme0n1/device/serial"), []byte("vol0fff\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "dev"), 0o755)
	dev := loop(t, root, "nvme1n1", 1)
	_ = dev
	if got := nvmeBySerial(e, "vol0123456789abcdef0"); got != filepath.Join(root, "dev/nvme1n1") {
		t.Errorf("found %q", got)
	}
	if got := nvmeBySerial(e, "vol0aaa"); got != "" {
		t.Errorf("found %q for a serial no device has", got)
	}
}

// etcdMember is an instance launched in moto, serving its metadata, with
// an etcd member's settings: its Env, EC2 and its id.
func etcdMember(t *testing.T) (*agent.Env, *ec2.Client, string) {
	t.Helper()
	agenttest.UseMoto(t, motoURL)
	cfg, _ := awsenv.Load(t.Context(), awstest.Region)
	client := ec2.NewFromConfig(cfg)
	id := instance(t, client)
	agenttest.ServeIMDS(t, agenttest.Instance{ID: id, PrivateIPv4: "10.0.1.6", Hostname: "ip-10-0-1-6.ec2.internal", AvailabilityZone: zone})
	agenttest.SetSettings(t, agenttest.Settings(t, "etcd"))
	e, _ := agenttest.Env(t, "volumes", t.TempDir())
	return e, client, id
}

// The dry run asks EC2 and looks at the machine; it attaches, formats and
// mounts nothing.
func TestDryRun(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, client *ec2.Client) (*nodeplan.VolumesPlan, agenttest.Want)
	}{
		{
			name: "a free volume",
			setup: func(t *testing.T, client *ec2.Client) (*nodeplan.VolumesPlan, agenttest.Want) {
				v := volume(t, client, "etcd1")
				return etcdPlan(t), agenttest.Want{Changes: []string{
					"attach " + v + ": etcd-data: as /dev/xvdf",
					"format /dev/xvdf: etcd-data: make ext4 if the device is blank",
					"write /etc/fstab: etcd-data: a line mounting its filesystem on /var/lib/etcd",
					"mount /var/lib/etcd: etcd-data: ext4, defaults",
					"keep facts: etcd-data: map[member:etcd1]",
				}}
			},
		},
		{
			name: "every volume taken",
			setup: func(t *testing.T, client *ec2.Client) (*nodeplan.VolumesPlan, agenttest.Want) {
				v := volume(t, client, "etcd0")
				other := instance(t, client)
				client.AttachVolume(t.Context(), &ec2.AttachVolumeInput{Device: aws.String("/dev/xvdf"), InstanceId: aws.String(other), VolumeId: aws.String(v)})
				return etcdPlan(t), agenttest.Want{Changes: []string{
					"wait etcd-data: until a volume is free: " + v + " (in-use to " + other + ")",
					"format /dev/xvdf: etcd-data: make ext4 if the device is blank",
					"write /etc/fstab: etcd-data: a line mounting its filesystem on /var/lib/etcd",
					"mount /var/lib/etcd: etcd-data: ext4, defaults",
					"keep facts: etcd-data: from the tags of the volume it gets",
				}}
			},
		},
		{
			name: "no such volume",
			setup: func(t *testing.T, client *ec2.Client) (*nodeplan.VolumesPlan, agenttest.Want) {
				volume(t, client, "etcd0")
				return &nodeplan.VolumesPlan{Volumes: []nodeplan.Volume{{Name: "data", VolumeID: "vol-0123456789abcdef0", Device: "/dev/xvdg", Filesystem: "ext4", MountPoint: "/data"}}},
					agenttest.Want{Err: "volumes[0] (data): volume vol-0123456789abcdef0 does not exist", Code: agent.ExitBadInput}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, client, id := etcdMember(t)
			plan, want := tt.setup(t, client)
			writePlan(t, e, plan)
			d, _ := agenttest.DryEnv(t, e)
			agenttest.ExpectDryRun(t, d, &opts, want)
			// The instance's own root volume is attached to it; the test's are not.
			vols, err := client.DescribeVolumes(t.Context(), &ec2.DescribeVolumesInput{Filters: []types.Filter{{Name: aws.String("tag:kube-aws:etcd-data"), Values: []string{t.Name()}}}})
			if err != nil || len(vols.Volumes) == 0 {
				t.Fatalf("the test's volumes: %v %v", vols, err)
			}
			for _, v := range vols.Volumes {
				for _, at := range v.Attachments {
					if aws.ToString(at.InstanceId) == id {
						t.Errorf("the dry run attached %s", aws.ToString(v.VolumeId))
					}
				}
			}
		})
	}
}
