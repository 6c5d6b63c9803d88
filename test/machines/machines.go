// Package machines plays EC2 for moto on this machine: it boots every
// instance moto's Auto Scaling groups launch as a systemd-nspawn machine
// from its launch template's user data, on a network namespace made for the
// run, and serves there what an instance finds in a VPC: the AWS API (a
// forwarder to moto), the instance metadata service, the VPC resolver with
// Route 53's records, and load balancers in front of registered targets.
//
// Start sets it all up; Close tears it all down (machines, mounts, loop
// devices, cgroups, the namespace) and keeps the machines' logs when the
// run failed. The subpackages each do one job; this one wires them.
package machines

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"golang.org/x/net/dns/dnsmessage"

	"github.com/kube-aws/kube-aws/test/machines/cgroups"
	"github.com/kube-aws/kube-aws/test/machines/cloud"
	"github.com/kube-aws/kube-aws/test/machines/diskspace"
	"github.com/kube-aws/kube-aws/test/machines/dns"
	"github.com/kube-aws/kube-aws/test/machines/image"
	"github.com/kube-aws/kube-aws/test/machines/imds"
	"github.com/kube-aws/kube-aws/test/machines/logs"
	"github.com/kube-aws/kube-aws/test/machines/netns"
	"github.com/kube-aws/kube-aws/test/machines/player"
	"github.com/kube-aws/kube-aws/test/machines/rootfs"
	"github.com/kube-aws/kube-aws/test/machines/tcpproxy"
	"github.com/kube-aws/kube-aws/test/machines/volumes"
)

// Addresses on the run's network. They are link-local, so they never clash
// with a VPC's CIDR; machines reach them through their default route.
const (
	// EndpointAddr serves the AWS API (a forwarder to moto). The machine
	// image carries EndpointURL as AWS_ENDPOINT_URL, so the image's cache
	// key does not change with moto's port.
	EndpointAddr = "169.254.169.250"
	EndpointURL  = "http://" + EndpointAddr
	// Bridge is the bridge in the run's namespace; it holds each subnet's
	// gateway.
	Bridge = "kabr0"
	// BridgeMAC is the bridge's own hardware address, set when it is made.
	// A Linux bridge without one takes the lowest address among its ports,
	// so it changed when a machine with a lower one booted or went away;
	// every other machine's ARP entry for its gateway then named an address
	// nothing answered, and their routed traffic (to other subnets and the
	// VPC resolver) stopped until the entry was resolved again, up to a
	// minute later: etcd lost quorum that way in the middle of a fault case.
	BridgeMAC = "02:6b:61:00:00:01"
)

// lowDiskWarning is the free space under which a run warns, once, that
// writes are about to fail.
const lowDiskWarning = 1 << 30

// lbBase is the first address given to a load balancer.
var lbBase = netip.MustParseAddr("169.254.170.1")

// CgroupRoot is the cgroup (in every hierarchy) under which each run makes
// its own.
const CgroupRoot = "kube-aws-e2e"

// Options configure a harness.
type Options struct {
	// AWS reads moto (region, credentials and BaseEndpoint set).
	AWS aws.Config
	// Moto is moto's address on the host, host:port (127.0.0.1:N).
	Moto string
	// CacheDir holds the root filesystem (rootfs.DefaultCacheDir if "").
	CacheDir string
	// WorkDir is where runs make their folder (/var/tmp/kube-aws-e2e if "").
	WorkDir string
	// Poll is how often moto is read (1 s if 0).
	Poll time.Duration
	// Log receives progress lines (os.Stderr if nil).
	Log io.Writer
	// MinFree is the free space, in bytes, that WorkDir's filesystem must
	// have for Start to go on (0: not checked). What a run writes peaks
	// while an upgrade's replacements and the machines they replace are
	// up at once.
	MinFree uint64
}

// Harness is one run.
type Harness struct {
	ID      string
	Dir     string   // the run's folder
	Logs    logs.Dir // per-instance console and journal
	NS      *netns.NS
	Image   *rootfs.Image
	opts    Options
	reader  *cloud.Reader
	mender  *cloud.Mender
	player  *player.Player
	vols    *volumes.Store
	cancel  context.CancelFunc
	loops   sync.WaitGroup // the player's loop and the disk sampler
	account string

	mu      sync.Mutex
	addrs   map[netip.Prefix]bool // addresses on the bridge
	dnsUp   map[netip.Addr]func() // VPC resolver -> close
	lbAddr  map[string]netip.Addr // load balancer name -> address
	lbPorts map[string]*lbPort    // "addr:port"
	closers []func() error        // servers, in start order
	snap    atomic.Pointer[cloud.Snapshot]
	disk    *diskspace.Watch
	closed  bool
	Started time.Time
}

func (h *Harness) logf(format string, args ...any) {
	fmt.Fprintf(h.opts.Log, "machines %s: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// Preflight says why machines cannot run here, or nil: root, the tools,
// and systemd-nspawn actually starting.
func Preflight() error {
	if os.Geteuid() != 0 {
		return errors.New("local machines need root (mounts, network namespaces, cgroups, loop devices): run `sudo make e2e-cluster`")
	}
	var missing []string
	for _, t := range []string{"systemd-nspawn", "mmdebstrap", "nsenter", "ip", "losetup", "journalctl"} {
		if _, err := exec.LookPath(t); err != nil {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("missing %s: run `apt-get install systemd-container mmdebstrap iproute2 util-linux` (make e2e-cluster does)", strings.Join(missing, ", "))
	}
	if out, err := exec.Command("systemd-nspawn", "--version").CombinedOutput(); err != nil {
		return fmt.Errorf("systemd-nspawn cannot run here: %v: %s", err, out)
	}
	if _, err := cgroups.Hierarchies(); err != nil {
		return fmt.Errorf("systemd-nspawn needs cgroups: %w", err)
	}
	return nil
}

// Start sets up a run: the root filesystem (built once, then cached), the
// network namespace with its bridge, the AWS API forwarder and the metadata
// service, then starts playing EC2. The caller must Close it.
func Start(ctx context.Context, opts Options) (*Harness, error) {
	if err := Preflight(); err != nil {
		return nil, err
	}
	if opts.Log == nil {
		opts.Log = os.Stderr
	}
	if opts.CacheDir == "" {
		d, err := rootfs.DefaultCacheDir()
		if err != nil {
			return nil, err
		}
		opts.CacheDir = d
	}
	if opts.WorkDir == "" {
		opts.WorkDir = "/var/tmp/kube-aws-e2e"
	}
	if swept, err := SweepStale(opts.WorkDir); len(swept) > 0 || err != nil {
		fmt.Fprintf(opts.Log, "machines: cleaned up after killed runs %v (logs kept): %v\n", swept, err)
	}
	if err := os.MkdirAll(opts.WorkDir, 0o755); err != nil {
		return nil, err
	}
	if err := diskspace.Check(opts.WorkDir, opts.MinFree); err != nil {
		return nil, err
	}
	b := make([]byte, 4)
	rand.Read(b)
	h := &Harness{ID: "run-" + hex.EncodeToString(b), opts: opts, Started: time.Now(),
		addrs: map[netip.Prefix]bool{}, dnsUp: map[netip.Addr]func(){}, lbAddr: map[string]netip.Addr{}, lbPorts: map[string]*lbPort{}}
	h.Dir = filepath.Join(opts.WorkDir, h.ID)
	h.Logs = logs.Dir(filepath.Join(h.Dir, "logs"))
	if err := os.MkdirAll(string(h.Logs), 0o755); err != nil {
		return nil, err
	}
	if err := writeOwner(h.Dir); err != nil {
		return nil, err
	}
	register(h)
	ok := false
	defer func() {
		if !ok {
			h.Close(true)
		}
	}()
	start := time.Now()
	if err := raiseInotifyLimits(h.logf); err != nil {
		return nil, err
	}
	img, err := rootfs.Ensure(ctx, opts.CacheDir, image.Spec(EndpointURL, image.HostSources()), opts.Log)
	if err != nil {
		return nil, err
	}
	h.Image = img
	h.logf("root filesystem %s (%s, %d MB) in %v", img.Key, map[bool]string{true: "built", false: "cached"}[img.Built], img.Size>>20, time.Since(start).Round(time.Millisecond))

	h.NS, err = netns.New(filepath.Join(h.Dir, "netns"))
	if err != nil {
		return nil, err
	}
	if err := MakeBridge(h.NS); err != nil {
		return nil, err
	}
	for _, c := range [][]string{
		{"ip", "addr", "add", EndpointAddr + "/32", "dev", Bridge},
		{"ip", "addr", "add", imds.Addr + "/32", "dev", Bridge},
	} {
		if err := h.NS.Run(c[0], c[1:]...); err != nil {
			return nil, err
		}
	}
	h.reader = cloud.NewReader(opts.AWS)
	h.mender = cloud.NewMender(opts.AWS, h.logf)
	if h.account, err = h.reader.AccountID(ctx); err != nil {
		return nil, err
	}
	// The AWS API: everything a machine sends to AWS_ENDPOINT_URL goes
	// to moto on the host's loopback (dialled from the host namespace).
	l, err := h.NS.Listen("tcp", EndpointAddr+":80")
	if err != nil {
		return nil, err
	}
	fwd := tcpproxy.New(l, func() []string { return []string{opts.Moto} }, nil)
	go fwd.Serve()
	h.closers = append(h.closers, fwd.Close)
	// The instance metadata service.
	l, err = h.NS.Listen("tcp", imds.Addr+":80")
	if err != nil {
		return nil, err
	}
	mctx, mcancel := context.WithCancel(context.Background())
	go imds.New(metadata{h}).Serve(mctx, l)
	h.closers = append(h.closers, func() error { mcancel(); return nil })

	if h.vols, err = volumes.NewStore(filepath.Join(h.Dir, "volumes")); err != nil {
		return nil, err
	}
	h.player = player.New(player.Config{
		Read: h.read, Region: opts.AWS.Region, NetNS: h.NS.Path, Bridge: Bridge,
		Lower: img.Dir, Dir: filepath.Join(h.Dir, "machines"), Cgroup: CgroupRoot + "/" + h.ID,
		Volumes: h.vols, Logs: h.Logs, Prepare: h.prepare, Poll: opts.Poll, Logf: h.logf,
	})
	// The first poll runs here, so a broken setup fails Start.
	if err := h.player.Step(ctx); err != nil {
		return nil, err
	}
	lctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.loops.Add(1)
	go func() { defer h.loops.Done(); h.player.Run(lctx) }()
	if h.disk, err = diskspace.NewWatch(opts.WorkDir, lowDiskWarning, h.logf); err != nil {
		return nil, err
	}
	h.loops.Add(1)
	go func() {
		defer h.loops.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-lctx.Done():
				return
			case <-t.C:
				h.disk.Sample()
			}
		}
	}()
	ok = true
	h.logf("run %s ready in %v: folder %s", h.ID, time.Since(start).Round(time.Millisecond), h.Dir)
	return h, nil
}

// read is the player's view of the cloud: moto's, once the mender has
// added what moto leaves out (cloud.Mender), so that machines find what
// they would find on AWS.
func (h *Harness) read(ctx context.Context) (*cloud.Snapshot, error) {
	s, err := h.reader.Read(ctx)
	if err != nil {
		return nil, err
	}
	changed, err := h.mender.Mend(ctx, s)
	if err != nil || !changed {
		return s, err
	}
	return h.reader.Read(ctx)
}

// inotifyFloors are the least inotify limits a run needs. They are per user
// on the whole host, and every machine's systemd, journald, containerd and
// kubelet take instances as root: at the kernel's default 128, containerd's
// CRI plugin of the eighth machine failed to start ("too many open files").
var inotifyFloors = map[string]int{
	"/proc/sys/fs/inotify/max_user_instances": 8192,
	"/proc/sys/fs/inotify/max_user_watches":   524288,
}

// raiseInotifyLimits raises the host's inotify limits to inotifyFloors where
// they are lower (never lowers one), as kind asks of its hosts.
func raiseInotifyLimits(logf func(string, ...any)) error {
	for path, floor := range inotifyFloors {
		b, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("reading %s: %w", path, err)
		}
		cur, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if cur >= floor {
			continue
		}
		if err := os.WriteFile(path, []byte(strconv.Itoa(floor)), 0o644); err != nil {
			return fmt.Errorf("raising %s from %d to %d (machines need it): %w", path, cur, floor, err)
		}
		logf("raised %s from %d to %d", path, cur, floor)
	}
	return nil
}

// MakeBridge makes the bridge every machine's veth joins, with its fixed
// address (BridgeMAC), in ns, and lets ns route between the subnets whose
// gateways it will hold.
func MakeBridge(ns *netns.NS) error {
	for _, c := range [][]string{
		{"ip", "link", "add", Bridge, "address", BridgeMAC, "type", "bridge"},
		{"ip", "link", "set", Bridge, "up"},
		{"sysctl", "-qw", "net.ipv4.ip_forward=1"},
	} {
		if err := ns.Run(c[0], c[1:]...); err != nil {
			return err
		}
	}
	return nil
}

// DropUnrouted makes the run's network drop what machines send it for
// prefix, silently, as EC2's VPC router drops a packet its route table has
// no route for. Without it the run's network, which routes between the
// subnets, answers "network unreachable", and a client's connect fails at
// once where on EC2 its SYN is sent again a second later. The example's pod
// network is such a prefix: a node sends a pod's packet to its gateway when
// its own route to the pod's node is not in place yet (flannel programs it
// as the node appears).
func (h *Harness) DropUnrouted(prefix netip.Prefix) error { return DropUnrouted(h.NS, prefix) }

// DropUnrouted is Harness.DropUnrouted for the network namespace ns that
// holds the bridge (MakeBridge).
func DropUnrouted(ns *netns.NS, prefix netip.Prefix) error {
	return ns.Run("ip", "route", "replace", "blackhole", prefix.Masked().String())
}

// Player returns the EC2 player (machines, snapshots, waiting).
func (h *Harness) Player() *player.Player { return h.player }

// Account is the AWS account id moto reports.
func (h *Harness) Account() string { return h.account }

// prepare makes the network ready for a snapshot before machines boot:
// every subnet's gateway on the bridge, every VPC's resolver, every load
// balancer's listeners.
func (h *Harness) prepare(s *cloud.Snapshot) error {
	h.snap.Store(s)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return errors.New("the harness is closing")
	}
	var errs []error
	subnets := make([]cloud.Subnet, 0, len(s.Subnets))
	for _, sn := range s.Subnets {
		subnets = append(subnets, sn)
	}
	sort.Slice(subnets, func(i, j int) bool { return subnets[i].ID < subnets[j].ID })
	for _, sn := range subnets {
		p := netip.PrefixFrom(sn.Gateway(), sn.CIDR.Bits())
		if h.addrs[p] {
			continue
		}
		if err := h.NS.Run("ip", "addr", "add", p.String(), "dev", Bridge); err != nil {
			errs = append(errs, err)
			continue
		}
		h.addrs[p] = true
	}
	for _, v := range s.VPCs {
		a := v.DNS()
		if _, ok := h.dnsUp[a]; ok {
			continue
		}
		stop, err := h.serveDNS(a)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		h.dnsUp[a] = stop
	}
	for _, lb := range s.LoadBalancers {
		errs = append(errs, h.serveLB(lb))
	}
	// Connections to a machine that is gone (a terminated instance) end
	// now: nobody would send a reset for it. A target deregistered while
	// its machine runs (an instance in Terminating:Wait, drained) keeps
	// its open connections, as a load balancer's deregistration delay
	// lets them finish; it gets no new ones (targets).
	alive := h.alive()
	keys := make([]string, 0, len(h.lbPorts))
	for k := range h.lbPorts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		lp := h.lbPorts[k]
		if n := lp.p.RetainIf(alive); n > 0 {
			h.logf("load balancer %s port %d: closed %d connections to machines that are gone", lp.lb, lp.port, n)
		}
	}
	return errors.Join(errs...)
}

// alive says whether a target address (ip:port) is on a running instance
// that has a machine.
func (h *Harness) alive() func(target string) bool {
	ips := map[netip.Addr]bool{}
	if s := h.snap.Load(); s != nil {
		for _, in := range s.Instances {
			if !in.Running() {
				continue
			}
			if h.player != nil {
				if _, ok := h.player.Machine(in.ID); !ok {
					continue
				}
			}
			ips[in.PrivateIP] = true
		}
	}
	return func(target string) bool {
		ap, err := netip.ParseAddrPort(target)
		return err == nil && ips[ap.Addr()]
	}
}

// lbPort is one listener of a load balancer.
type lbPort struct {
	p    *tcpproxy.Proxy
	lb   string
	port int32
}

// serveDNS starts the resolver of one VPC at addr (udp and tcp port 53).
func (h *Harness) serveDNS(a netip.Addr) (func(), error) {
	if err := h.NS.Run("ip", "addr", "add", a.String()+"/32", "dev", Bridge); err != nil {
		return nil, err
	}
	srv := dns.New(h.dnsData)
	pc, err := h.NS.ListenPacket("udp", a.String()+":53")
	if err != nil {
		return nil, err
	}
	l, err := h.NS.Listen("tcp", a.String()+":53")
	if err != nil {
		pc.Close()
		return nil, err
	}
	go srv.ServeUDP(pc)
	go srv.ServeTCP(l)
	h.logf("resolver of the VPC at %s", a)
	return func() { pc.Close(); l.Close() }, nil
}

// serveLB gives a load balancer an address on the run's network and a
// forwarder per listener port, spreading over its registered targets as
// the latest snapshot has them (each instance's private address).
func (h *Harness) serveLB(lb cloud.LoadBalancer) error {
	a, ok := h.lbAddr[lb.Name]
	if !ok {
		a = lbBase
		for i := 0; i < len(h.lbAddr); i++ {
			a = a.Next()
		}
		if err := h.NS.Run("ip", "addr", "add", a.String()+"/32", "dev", Bridge); err != nil {
			return err
		}
		h.lbAddr[lb.Name] = a
		h.logf("load balancer %s (%s) at %s", lb.Name, lb.DNSName, a)
	}
	var errs []error
	for _, li := range lb.Listeners {
		key := netip.AddrPortFrom(a, uint16(li.Port)).String()
		if _, ok := h.lbPorts[key]; ok {
			continue
		}
		l, err := h.NS.Listen("tcp", key)
		if err != nil {
			errs = append(errs, fmt.Errorf("load balancer %s port %d: %w", lb.Name, li.Port, err))
			continue
		}
		name, port := lb.Name, li.Port
		p := tcpproxy.New(l, func() []string { return h.targets(name, port) }, h.NS.DialContext)
		go p.Serve()
		h.lbPorts[key] = &lbPort{p: p, lb: name, port: port}
	}
	return errors.Join(errs...)
}

// targets are the addresses new connections to a load balancer's port go
// to now: its registered instances that are running, have a machine and are
// not leaving their group. An instance whose machine is gone (killed, or not
// booted yet) is no target, as a load balancer's health check takes it out:
// sending to it would hang each connection until the dial timeout. An
// instance its group is terminating (Terminating:*) is no target either:
// Auto Scaling deregisters it before any termination hook waits (moto does
// too, with the project's patches; this holds if a registration outlived it,
// as one the mender made may until its next poll).
func (h *Harness) targets(lbName string, port int32) []string {
	s := h.snap.Load()
	if s == nil {
		return nil
	}
	var out []string
	for _, lb := range s.LoadBalancers {
		if lb.Name != lbName {
			continue
		}
		for _, li := range lb.Listeners {
			if li.Port != port {
				continue
			}
			for _, t := range li.Targets {
				in, ok := s.Instances[t.InstanceID]
				if !ok || !in.Running() || in.Leaving() {
					continue
				}
				if h.player != nil {
					if _, ok := h.player.Machine(t.InstanceID); !ok {
						continue
					}
				}
				out = append(out, netip.AddrPortFrom(in.PrivateIP, uint16(t.Port)).String())
			}
		}
	}
	return out
}

// LoadBalancerAddr returns the address the load balancer named name (or
// with DNS name name) answers on.
func (h *Harness) LoadBalancerAddr(name string) (netip.Addr, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if a, ok := h.lbAddr[name]; ok {
		return a, true
	}
	if s := h.snap.Load(); s != nil {
		for _, lb := range s.LoadBalancers {
			if strings.EqualFold(lb.DNSName, strings.TrimSuffix(name, ".")) {
				a, ok := h.lbAddr[lb.Name]
				return a, ok
			}
		}
	}
	return netip.Addr{}, false
}

// dnsData turns the snapshot into resolver data: Route 53 zones (alias
// records pointing at a load balancer become its address), each load
// balancer's own name, and instance host names.
func (h *Harness) dnsData() dns.Data {
	s := h.snap.Load()
	if s == nil {
		return dns.Data{}
	}
	h.mu.Lock()
	lbs := map[string]netip.Addr{}
	for _, lb := range s.LoadBalancers {
		if a, ok := h.lbAddr[lb.Name]; ok {
			lbs[strings.ToLower(strings.TrimSuffix(lb.DNSName, "."))] = a
		}
	}
	h.mu.Unlock()
	var d dns.Data
	for name, a := range lbs {
		d.Zones = append(d.Zones, name)
		d.Records = append(d.Records, dns.Record{Name: name, Type: dnsmessage.TypeA, TTL: 60, Values: []string{a.String()}})
	}
	for _, z := range s.Zones {
		d.Zones = append(d.Zones, z.Name)
		for _, r := range z.Records {
			t, ok := rrTypes[r.Type]
			if !ok {
				continue
			}
			rec := dns.Record{Name: r.Name, Type: t, TTL: uint32(r.TTL), Values: r.Values}
			if r.Alias != "" {
				// An alias answers with its target's addresses.
				a, ok := lbs[strings.ToLower(strings.TrimSuffix(r.Alias, "."))]
				if !ok {
					continue
				}
				rec.TTL, rec.Values = 60, []string{a.String()}
			}
			d.Records = append(d.Records, rec)
		}
	}
	dom := player.DomainFor(h.opts.AWS.Region)
	d.Zones = append(d.Zones, dom)
	for _, in := range s.Instances {
		if in.Running() {
			d.Records = append(d.Records, dns.Record{Name: player.Hostname(in.PrivateIP, h.opts.AWS.Region), Type: dnsmessage.TypeA, TTL: 60, Values: []string{in.PrivateIP.String()}})
		}
	}
	return d
}

var rrTypes = map[string]dnsmessage.Type{
	"A": dnsmessage.TypeA, "AAAA": dnsmessage.TypeAAAA, "CNAME": dnsmessage.TypeCNAME, "TXT": dnsmessage.TypeTXT,
}

// Resolver returns a resolver that asks the VPC resolver at addr from
// inside the run's network.
func (h *Harness) Resolver(addr netip.Addr) *net.Resolver {
	return dns.Resolver(netip.AddrPortFrom(addr, 53).String(), h.NS.DialContext)
}

// metadata is the metadata service's view of the run.
type metadata struct{ h *Harness }

func (m metadata) InstanceByIP(ip netip.Addr) (imds.Instance, bool) {
	s := m.h.snap.Load()
	if s == nil {
		return imds.Instance{}, false
	}
	for _, in := range s.Instances {
		if in.PrivateIP != ip || !in.Running() {
			continue
		}
		sn := s.Subnets[in.SubnetID]
		vpc := s.VPCs[sn.VPCID]
		return imds.Instance{
			ID: in.ID, Type: in.Type, ImageID: in.ImageID, AccountID: m.h.account, Region: m.h.opts.AWS.Region,
			Zone: in.Zone, PrivateIP: in.PrivateIP, Hostname: player.Hostname(in.PrivateIP, m.h.opts.AWS.Region),
			MAC: macOf(in.ID), SubnetID: in.SubnetID, SubnetCIDR: sn.CIDR.String(), VPCID: sn.VPCID, VPCCIDR: vpc.CIDR.String(),
			Role: in.Role, ProfileARN: in.ProfileARN, UserData: in.UserData, LaunchedTime: in.LaunchTime, HopLimit: in.HopLimit,
		}, true
	}
	return imds.Instance{}, false
}

func (m metadata) Credentials(ctx context.Context, in imds.Instance) (imds.Credentials, error) {
	s := m.h.snap.Load()
	ci, ok := s.Instances[in.ID]
	if !ok || ci.RoleARN == "" {
		return imds.Credentials{}, fmt.Errorf("instance %s has no role", in.ID)
	}
	c, err := m.h.reader.Credentials(ctx, in.ID, ci.RoleARN)
	if err != nil {
		m.h.logf("%v", err)
		return imds.Credentials{}, err
	}
	return imds.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, Token: c.SessionToken, Expiration: c.Expires}, nil
}

// macOf gives an instance a stable locally administered MAC address for
// the metadata paths that name one.
func macOf(id string) string {
	var b [5]byte
	copy(b[:], id[len(id)-min(len(id), 5):])
	return fmt.Sprintf("02:%02x:%02x:%02x:%02x:%02x", b[0], b[1], b[2], b[3], b[4])
}

// Close tears the run down: stops playing, kills every machine (exporting
// its journal), stops every server, detaches the loop devices, removes the
// namespace, the cgroups and the run's folder. When failed, the logs folder
// is kept and its path printed. Safe to call more than once.
func (h *Harness) Close(failed bool) error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.mu.Unlock()
	unregister(h)
	start := time.Now()
	var errs []error
	if h.cancel != nil {
		h.cancel()
		h.loops.Wait()
	}
	if h.player != nil {
		errs = append(errs, h.player.Close())
	}
	h.mu.Lock()
	for _, lp := range h.lbPorts {
		errs = append(errs, lp.p.Close())
	}
	for _, stop := range h.dnsUp {
		stop()
	}
	h.mu.Unlock()
	for i := len(h.closers) - 1; i >= 0; i-- {
		errs = append(errs, h.closers[i]())
	}
	if h.vols != nil {
		errs = append(errs, h.vols.Close())
	}
	if h.NS != nil {
		errs = append(errs, h.NS.Close())
	}
	cgroups.RemoveEmptyParents(CgroupRoot + "/" + h.ID)
	if h.disk != nil {
		free, low := h.disk.Figures()
		h.logf("disk: %.1f GB free under %s at the start, %.1f GB at the lowest (%.1f GB taken at the peak, by this run and anything else writing there)",
			float64(free)/diskspace.GB, h.opts.WorkDir, float64(low)/diskspace.GB, float64(free-low)/diskspace.GB)
	}
	err := errors.Join(errs...)
	if failed || err != nil || os.Getenv(KeepLogsEnv) != "" {
		// Keep only the logs.
		entries, _ := os.ReadDir(h.Dir)
		for _, e := range entries {
			if e.Name() != "logs" {
				os.RemoveAll(filepath.Join(h.Dir, e.Name()))
			}
		}
		h.logf("run %s torn down in %v; machine logs kept in %s", h.ID, time.Since(start).Round(time.Millisecond), h.Logs)
	} else {
		os.RemoveAll(h.Dir)
		h.logf("run %s torn down in %v", h.ID, time.Since(start).Round(time.Millisecond))
	}
	return err
}
