// Package cloud reads, from the AWS API (moto in tests), what the harness
// plays: the instances that Auto Scaling groups launched, each with its
// lifecycle state and the user data and instance profile role of the launch
// template version it was launched from, subnets and VPCs, volume
// attachments, load balancers with their registered targets, and Route 53
// records. A Snapshot is one consistent-enough view, taken every poll.
package cloud

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancing"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/sts"
)

// Instance is one instance an Auto Scaling group launched.
type Instance struct {
	ID             string
	Group          string // Auto Scaling group
	State          string // EC2 state name: pending, running, shutting-down, terminated...
	Type           string
	ImageID        string
	PrivateIP      netip.Addr
	SubnetID       string
	Zone           string
	LaunchTime     time.Time
	RootDevice     string // the root volume's device name (the machine's overlay plays it)
	LaunchTemplate string // id
	// Version is the launch template version the instance was launched
	// from: EC2's aws:ec2launchtemplate:version tag (a number, even when the
	// group names $Latest), else the version Auto Scaling reports for it.
	Version string
	// Lifecycle is its Auto Scaling lifecycle state: InService,
	// Terminating:Wait (leaving, still running, out of its load balancers),
	// Terminating:Proceed, Standby...
	Lifecycle  string
	UserData   []byte
	ProfileARN string
	Role       string // role name of the instance profile
	RoleARN    string
	// HopLimit is the launch template's MetadataOptions
	// HttpPutResponseHopLimit: the IP TTL of the metadata service's token
	// replies, as on EC2 (1, EC2's default, when the template sets none).
	HopLimit int
}

// Running says whether the instance should have a machine: its EC2 state,
// whatever its lifecycle state (an instance waiting on a termination hook
// runs until the hook's action ends).
func (i *Instance) Running() bool { return i.State == "pending" || i.State == "running" }

// Leaving says whether its group is terminating it (Terminating:*): Auto
// Scaling has taken it out of its load balancers, and no new connection
// goes to it.
func (i *Instance) Leaving() bool { return strings.HasPrefix(i.Lifecycle, "Terminating") }

// Subnet is one subnet.
type Subnet struct {
	ID    string
	VPCID string
	CIDR  netip.Prefix
	Zone  string
}

// Gateway is the subnet's router: its first address, as in a VPC.
func (s Subnet) Gateway() netip.Addr { return s.CIDR.Masked().Addr().Next() }

// VPC is one VPC.
type VPC struct {
	ID   string
	CIDR netip.Prefix
}

// DNS is the VPC's resolver: base address + 2.
func (v VPC) DNS() netip.Addr { return v.CIDR.Masked().Addr().Next().Next() }

// Attachment is a volume attached (or attaching) to an instance.
type Attachment struct {
	VolumeID   string
	SizeGiB    int32
	InstanceID string
	Device     string
}

// Target is a registered load balancer target.
type Target struct {
	InstanceID string
	Port       int32
}

// Listener is one port of a load balancer and where it sends connections.
type Listener struct {
	Port    int32
	Targets []Target
}

// LoadBalancer is a classic or v2 load balancer.
type LoadBalancer struct {
	Name      string
	DNSName   string
	Listeners []Listener
}

// Record is one Route 53 record set; alias records carry the alias
// target's DNS name in Alias.
type Record struct {
	Name   string
	Type   string
	TTL    int64
	Values []string
	Alias  string
}

// Zone is a hosted zone.
type Zone struct {
	ID      string
	Name    string
	Private bool
	Records []Record
}

// Group is an Auto Scaling group.
type Group struct {
	Name string
	// LaunchTemplate and Version are what the group launches new instances
	// from now (Version as the group names it: a number, $Latest...).
	LaunchTemplate string
	Version        string
	// Instances are the group's instances that are not terminating.
	Instances []string
	// LoadBalancerNames are the classic load balancers the group names.
	LoadBalancerNames []string
}

// Snapshot is the state read in one poll.
type Snapshot struct {
	Taken         time.Time
	Groups        []Group
	Instances     map[string]*Instance
	Subnets       map[string]Subnet
	VPCs          map[string]VPC
	Attachments   []Attachment
	LoadBalancers []LoadBalancer
	Zones         []Zone
}

// Reader reads snapshots. It caches what does not change: launch template
// versions and instance profiles.
type Reader struct {
	asg *autoscaling.Client
	ec2 *ec2.Client
	elb *elb.Client
	el2 *elbv2.Client
	r53 *route53.Client
	iam *iam.Client
	sts *sts.Client

	mu       sync.Mutex
	versions map[string]ec2types.ResponseLaunchTemplateData // id/version
	profiles map[string][2]string                           // profile ARN or name -> role name, role ARN
	creds    map[string]aws.Credentials                     // instance id
}

// NewReader reads with cfg (region, credentials and endpoint set).
func NewReader(cfg aws.Config) *Reader {
	return &Reader{
		asg: autoscaling.NewFromConfig(cfg), ec2: ec2.NewFromConfig(cfg),
		elb: elb.NewFromConfig(cfg), el2: elbv2.NewFromConfig(cfg),
		r53: route53.NewFromConfig(cfg), iam: iam.NewFromConfig(cfg), sts: sts.NewFromConfig(cfg),
		versions: map[string]ec2types.ResponseLaunchTemplateData{},
		profiles: map[string][2]string{},
		creds:    map[string]aws.Credentials{},
	}
}

// Read takes a snapshot.
func (r *Reader) Read(ctx context.Context) (*Snapshot, error) {
	s := &Snapshot{Taken: time.Now(), Instances: map[string]*Instance{}, Subnets: map[string]Subnet{}, VPCs: map[string]VPC{}}
	if err := r.readNetwork(ctx, s); err != nil {
		return nil, err
	}
	if err := r.readInstances(ctx, s); err != nil {
		return nil, err
	}
	if err := r.readVolumes(ctx, s); err != nil {
		return nil, err
	}
	if err := r.readLoadBalancers(ctx, s); err != nil {
		return nil, err
	}
	if err := r.readZones(ctx, s); err != nil {
		return nil, err
	}
	return s, nil
}

func (r *Reader) readNetwork(ctx context.Context, s *Snapshot) error {
	vp := ec2.NewDescribeVpcsPaginator(r.ec2, &ec2.DescribeVpcsInput{})
	for vp.HasMorePages() {
		out, err := vp.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("DescribeVpcs: %w", err)
		}
		for _, v := range out.Vpcs {
			p, err := netip.ParsePrefix(aws.ToString(v.CidrBlock))
			if err != nil {
				continue
			}
			s.VPCs[aws.ToString(v.VpcId)] = VPC{ID: aws.ToString(v.VpcId), CIDR: p}
		}
	}
	sp := ec2.NewDescribeSubnetsPaginator(r.ec2, &ec2.DescribeSubnetsInput{})
	for sp.HasMorePages() {
		out, err := sp.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("DescribeSubnets: %w", err)
		}
		for _, sn := range out.Subnets {
			p, err := netip.ParsePrefix(aws.ToString(sn.CidrBlock))
			if err != nil {
				continue
			}
			s.Subnets[aws.ToString(sn.SubnetId)] = Subnet{ID: aws.ToString(sn.SubnetId), VPCID: aws.ToString(sn.VpcId), CIDR: p, Zone: aws.ToString(sn.AvailabilityZone)}
		}
	}
	return nil
}

func (r *Reader) readInstances(ctx context.Context, s *Snapshot) error {
	type member struct{ group, lt, version, lifecycle string }
	members := map[string]member{}
	gp := autoscaling.NewDescribeAutoScalingGroupsPaginator(r.asg, &autoscaling.DescribeAutoScalingGroupsInput{})
	for gp.HasMorePages() {
		out, err := gp.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("DescribeAutoScalingGroups: %w", err)
		}
		for _, g := range out.AutoScalingGroups {
			group := Group{Name: aws.ToString(g.AutoScalingGroupName), LoadBalancerNames: g.LoadBalancerNames}
			if g.LaunchTemplate != nil {
				group.LaunchTemplate, group.Version = aws.ToString(g.LaunchTemplate.LaunchTemplateId), aws.ToString(g.LaunchTemplate.Version)
			}
			for _, i := range g.Instances {
				if !strings.HasPrefix(string(i.LifecycleState), "Terminat") {
					group.Instances = append(group.Instances, aws.ToString(i.InstanceId))
				}
				m := member{group: aws.ToString(g.AutoScalingGroupName), lifecycle: string(i.LifecycleState)}
				lt := i.LaunchTemplate
				if lt == nil {
					lt = g.LaunchTemplate
				}
				if lt != nil {
					m.lt, m.version = aws.ToString(lt.LaunchTemplateId), aws.ToString(lt.Version)
				}
				members[aws.ToString(i.InstanceId)] = m
			}
			s.Groups = append(s.Groups, group)
		}
	}
	if len(members) == 0 {
		return nil
	}
	ids := make([]string, 0, len(members))
	for id := range members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	ip := ec2.NewDescribeInstancesPaginator(r.ec2, &ec2.DescribeInstancesInput{InstanceIds: ids})
	for ip.HasMorePages() {
		out, err := ip.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("DescribeInstances: %w", err)
		}
		for _, res := range out.Reservations {
			for _, i := range res.Instances {
				id := aws.ToString(i.InstanceId)
				m := members[id]
				in := &Instance{ID: id, Group: m.group, LaunchTemplate: m.lt, Version: m.version, Lifecycle: m.lifecycle,
					Type: string(i.InstanceType), ImageID: aws.ToString(i.ImageId), SubnetID: aws.ToString(i.SubnetId),
					LaunchTime: aws.ToTime(i.LaunchTime), RootDevice: aws.ToString(i.RootDeviceName)}
				for _, tag := range i.Tags {
					// EC2 records what it launched from; Auto Scaling may
					// report $Latest, which the template has moved on from.
					switch aws.ToString(tag.Key) {
					case "aws:ec2launchtemplate:id":
						in.LaunchTemplate = aws.ToString(tag.Value)
					case "aws:ec2launchtemplate:version":
						in.Version = aws.ToString(tag.Value)
					}
				}
				if i.State != nil {
					in.State = string(i.State.Name)
				}
				if i.Placement != nil {
					in.Zone = aws.ToString(i.Placement.AvailabilityZone)
				}
				in.PrivateIP, _ = netip.ParseAddr(aws.ToString(i.PrivateIpAddress))
				if i.IamInstanceProfile != nil {
					in.ProfileARN = aws.ToString(i.IamInstanceProfile.Arn)
				}
				if in.Running() && in.LaunchTemplate != "" {
					if err := r.fromTemplate(ctx, in); err != nil {
						return err
					}
				}
				s.Instances[id] = in
			}
		}
	}
	return nil
}

// fromTemplate fills user data, the instance profile and the metadata hop
// limit from the launch
// template version the instance was launched from, not the group's current
// one (moto does not copy the profile onto the instance).
func (r *Reader) fromTemplate(ctx context.Context, in *Instance) error {
	key := in.LaunchTemplate + "/" + in.Version
	r.mu.Lock()
	d, ok := r.versions[key]
	r.mu.Unlock()
	if !ok {
		v := in.Version
		if v == "" {
			v = "$Default"
		}
		out, err := r.ec2.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{
			LaunchTemplateId: aws.String(in.LaunchTemplate), Versions: []string{v}})
		if err != nil {
			return fmt.Errorf("DescribeLaunchTemplateVersions %s version %s (instance %s): %w", in.LaunchTemplate, v, in.ID, err)
		}
		if len(out.LaunchTemplateVersions) == 0 || out.LaunchTemplateVersions[0].LaunchTemplateData == nil {
			return fmt.Errorf("launch template %s has no version %s (instance %s)", in.LaunchTemplate, v, in.ID)
		}
		d = *out.LaunchTemplateVersions[0].LaunchTemplateData
		// Only numbered versions never change.
		if !strings.HasPrefix(v, "$") {
			r.mu.Lock()
			r.versions[key] = d
			r.mu.Unlock()
		}
	}
	if d.UserData != nil {
		ud, err := base64.StdEncoding.DecodeString(aws.ToString(d.UserData))
		if err != nil {
			return fmt.Errorf("launch template %s version %s: user data is not base64: %w", in.LaunchTemplate, in.Version, err)
		}
		in.UserData = ud
	}
	in.HopLimit = 1
	if d.MetadataOptions != nil && aws.ToInt32(d.MetadataOptions.HttpPutResponseHopLimit) > 0 {
		in.HopLimit = int(aws.ToInt32(d.MetadataOptions.HttpPutResponseHopLimit))
	}
	if in.ProfileARN == "" && d.IamInstanceProfile != nil {
		in.ProfileARN = aws.ToString(d.IamInstanceProfile.Arn)
		if in.ProfileARN == "" {
			in.ProfileARN = aws.ToString(d.IamInstanceProfile.Name)
		}
	}
	if in.ProfileARN != "" {
		role, arn, err := r.role(ctx, in.ProfileARN)
		if err != nil {
			return fmt.Errorf("instance %s: %w", in.ID, err)
		}
		in.Role, in.RoleARN = role, arn
	}
	return nil
}

// role returns the role of an instance profile given by ARN or name.
func (r *Reader) role(ctx context.Context, profile string) (string, string, error) {
	r.mu.Lock()
	v, ok := r.profiles[profile]
	r.mu.Unlock()
	if ok {
		return v[0], v[1], nil
	}
	name := profile
	if i := strings.LastIndex(profile, "/"); strings.HasPrefix(profile, "arn:") && i >= 0 {
		name = profile[i+1:]
	}
	out, err := r.iam.GetInstanceProfile(ctx, &iam.GetInstanceProfileInput{InstanceProfileName: aws.String(name)})
	if err != nil {
		return "", "", fmt.Errorf("GetInstanceProfile %s: %w", name, err)
	}
	if out.InstanceProfile == nil || len(out.InstanceProfile.Roles) == 0 {
		return "", "", fmt.Errorf("instance profile %s has no role", name)
	}
	ro := out.InstanceProfile.Roles[0]
	v = [2]string{aws.ToString(ro.RoleName), aws.ToString(ro.Arn)}
	r.mu.Lock()
	r.profiles[profile] = v
	r.mu.Unlock()
	return v[0], v[1], nil
}

// Credentials returns temporary credentials of the instance's role, from
// STS AssumeRole (moto issues them), renewed 5 minutes before they expire.
func (r *Reader) Credentials(ctx context.Context, instanceID, roleARN string) (aws.Credentials, error) {
	r.mu.Lock()
	c, ok := r.creds[instanceID]
	r.mu.Unlock()
	if ok && time.Until(c.Expires) > 5*time.Minute {
		return c, nil
	}
	out, err := r.sts.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String(roleARN), RoleSessionName: aws.String(instanceID)})
	if err != nil {
		return aws.Credentials{}, fmt.Errorf("AssumeRole %s for %s: %w", roleARN, instanceID, err)
	}
	c = aws.Credentials{AccessKeyID: aws.ToString(out.Credentials.AccessKeyId), SecretAccessKey: aws.ToString(out.Credentials.SecretAccessKey),
		SessionToken: aws.ToString(out.Credentials.SessionToken), Expires: aws.ToTime(out.Credentials.Expiration), CanExpire: true}
	r.mu.Lock()
	r.creds[instanceID] = c
	r.mu.Unlock()
	return c, nil
}

// AccountID returns the account the credentials are in.
func (r *Reader) AccountID(ctx context.Context) (string, error) {
	out, err := r.sts.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return "", fmt.Errorf("GetCallerIdentity: %w", err)
	}
	return aws.ToString(out.Account), nil
}

func (r *Reader) readVolumes(ctx context.Context, s *Snapshot) error {
	p := ec2.NewDescribeVolumesPaginator(r.ec2, &ec2.DescribeVolumesInput{})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("DescribeVolumes: %w", err)
		}
		for _, v := range out.Volumes {
			for _, a := range v.Attachments {
				if a.State == ec2types.VolumeAttachmentStateAttached || a.State == ec2types.VolumeAttachmentStateAttaching {
					s.Attachments = append(s.Attachments, Attachment{VolumeID: aws.ToString(v.VolumeId), SizeGiB: aws.ToInt32(v.Size),
						InstanceID: aws.ToString(a.InstanceId), Device: aws.ToString(a.Device)})
				}
			}
		}
	}
	return nil
}

func (r *Reader) readLoadBalancers(ctx context.Context, s *Snapshot) error {
	cp := elb.NewDescribeLoadBalancersPaginator(r.elb, &elb.DescribeLoadBalancersInput{})
	for cp.HasMorePages() {
		out, err := cp.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("DescribeLoadBalancers (classic): %w", err)
		}
		for _, d := range out.LoadBalancerDescriptions {
			lb := LoadBalancer{Name: aws.ToString(d.LoadBalancerName), DNSName: aws.ToString(d.DNSName)}
			for _, ld := range d.ListenerDescriptions {
				if ld.Listener == nil {
					continue
				}
				l := Listener{Port: ld.Listener.LoadBalancerPort}
				for _, i := range d.Instances {
					l.Targets = append(l.Targets, Target{InstanceID: aws.ToString(i.InstanceId), Port: aws.ToInt32(ld.Listener.InstancePort)})
				}
				lb.Listeners = append(lb.Listeners, l)
			}
			s.LoadBalancers = append(s.LoadBalancers, lb)
		}
	}
	p := elbv2.NewDescribeLoadBalancersPaginator(r.el2, &elbv2.DescribeLoadBalancersInput{})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("DescribeLoadBalancers (v2): %w", err)
		}
		for _, d := range out.LoadBalancers {
			lb := LoadBalancer{Name: aws.ToString(d.LoadBalancerName), DNSName: aws.ToString(d.DNSName)}
			ls, err := r.el2.DescribeListeners(ctx, &elbv2.DescribeListenersInput{LoadBalancerArn: d.LoadBalancerArn})
			if err != nil {
				return fmt.Errorf("DescribeListeners %s: %w", lb.Name, err)
			}
			for _, li := range ls.Listeners {
				l := Listener{Port: aws.ToInt32(li.Port)}
				for _, a := range li.DefaultActions {
					if a.TargetGroupArn == nil {
						continue
					}
					th, err := r.el2.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: a.TargetGroupArn})
					if err != nil {
						return fmt.Errorf("DescribeTargetHealth %s: %w", aws.ToString(a.TargetGroupArn), err)
					}
					for _, t := range th.TargetHealthDescriptions {
						if t.Target != nil {
							l.Targets = append(l.Targets, Target{InstanceID: aws.ToString(t.Target.Id), Port: aws.ToInt32(t.Target.Port)})
						}
					}
				}
				lb.Listeners = append(lb.Listeners, l)
			}
			s.LoadBalancers = append(s.LoadBalancers, lb)
		}
	}
	return nil
}

func (r *Reader) readZones(ctx context.Context, s *Snapshot) error {
	zp := route53.NewListHostedZonesPaginator(r.r53, &route53.ListHostedZonesInput{})
	for zp.HasMorePages() {
		out, err := zp.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("ListHostedZones: %w", err)
		}
		for _, z := range out.HostedZones {
			zone := Zone{ID: aws.ToString(z.Id), Name: aws.ToString(z.Name)}
			if z.Config != nil {
				zone.Private = z.Config.PrivateZone
			}
			rp := route53.NewListResourceRecordSetsPaginator(r.r53, &route53.ListResourceRecordSetsInput{HostedZoneId: z.Id})
			for rp.HasMorePages() {
				rr, err := rp.NextPage(ctx)
				if err != nil {
					return fmt.Errorf("ListResourceRecordSets %s: %w", zone.Name, err)
				}
				for _, rs := range rr.ResourceRecordSets {
					rec := Record{Name: aws.ToString(rs.Name), Type: string(rs.Type), TTL: aws.ToInt64(rs.TTL)}
					for _, v := range rs.ResourceRecords {
						rec.Values = append(rec.Values, aws.ToString(v.Value))
					}
					if rs.AliasTarget != nil {
						rec.Alias = aws.ToString(rs.AliasTarget.DNSName)
					}
					zone.Records = append(zone.Records, rec)
				}
			}
			s.Zones = append(s.Zones, zone)
		}
	}
	return nil
}
