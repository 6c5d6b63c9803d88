// Package imds serves the EC2 instance metadata service (IMDSv2 only) to
// local machines: a session token from PUT /latest/api/token, then the
// instance's identity, addresses, placement, network interface, its
// instance profile role's credentials and its user data. Which instance is
// asking is told by the request's source address, as on EC2.
//
// As on EC2, the token reply goes out with an IP TTL of the instance's hop
// limit (its launch template's HttpPutResponseHopLimit): every router on
// the way back decrements it, so with 1 the node receives it and a pod
// behind the node's bridge (a routed hop further) never does.
package imds

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"net/netip"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Addr is where EC2's metadata service answers.
const Addr = "169.254.169.254"

// Instance is what the service tells one instance about itself.
type Instance struct {
	ID           string
	Type         string
	ImageID      string
	AccountID    string
	Region       string
	Zone         string
	PrivateIP    netip.Addr
	Hostname     string
	MAC          string
	SubnetID     string
	SubnetCIDR   string
	VPCID        string
	VPCCIDR      string
	Role         string // the instance profile's role name; "" for none
	ProfileARN   string
	UserData     []byte
	LaunchedTime time.Time
	// HopLimit is the IP TTL of the token replies it is sent; 0 is EC2's
	// default, 1.
	HopLimit int
}

// Credentials are an instance role's temporary credentials.
type Credentials struct {
	AccessKeyID     string
	SecretAccessKey string
	Token           string
	Expiration      time.Time
}

// Backend is what the server reads.
type Backend interface {
	// InstanceByIP returns the instance with this private address.
	InstanceByIP(ip netip.Addr) (Instance, bool)
	// Credentials returns credentials for the instance's role.
	Credentials(ctx context.Context, in Instance) (Credentials, error)
}

// Server is the metadata service.
type Server struct {
	b      Backend
	mu     sync.Mutex
	tokens map[string]token
	now    func() time.Time
}

type token struct {
	ip      netip.Addr
	expires time.Time
}

// New returns a metadata service reading b.
func New(b Backend) *Server {
	return &Server{b: b, tokens: map[string]token{}, now: time.Now}
}

const (
	hdrToken = "X-Aws-Ec2-Metadata-Token"
	hdrTTL   = "X-Aws-Ec2-Metadata-Token-Ttl-Seconds"
)

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		http.Error(w, "bad remote address", http.StatusBadRequest)
		return
	}
	ip := ap.Addr().Unmap()
	if r.URL.Path == "/latest/api/token" {
		s.issueToken(w, r, ip)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if !s.validToken(r.Header.Get(hdrToken), ip) {
		// IMDSv2 only, as kube-aws's launch templates require
		// (HttpTokens: required).
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	in, ok := s.b.InstanceByIP(ip)
	if !ok {
		http.Error(w, "no instance has address "+ip.String(), http.StatusNotFound)
		return
	}
	body, typ, code := s.lookup(r.Context(), in, r.URL.Path)
	if code != http.StatusOK {
		http.Error(w, http.StatusText(code), code)
		return
	}
	w.Header().Set("Content-Type", typ)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		w.Write(body)
	}
}

func (s *Server) issueToken(w http.ResponseWriter, r *http.Request, ip netip.Addr) {
	if r.Method != http.MethodPut {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	// The hop limit holds for every reply to this request, refusals
	// included: EC2 sends nothing from the token endpoint further than
	// the instance allows.
	hops := 1
	if in, ok := s.b.InstanceByIP(ip); ok && in.HopLimit > 0 {
		hops = in.HopLimit
	}
	if c, ok := r.Context().Value(connKey{}).(net.Conn); ok {
		if err := setTTL(c, hops); err != nil {
			http.Error(w, "setting the reply's hop limit: "+err.Error(), http.StatusInternalServerError)
			return
		}
	}
	ttl, err := strconv.Atoi(r.Header.Get(hdrTTL))
	if err != nil || ttl < 1 || ttl > 21600 {
		http.Error(w, "X-aws-ec2-metadata-token-ttl-seconds must be 1 to 21600", http.StatusBadRequest)
		return
	}
	b := make([]byte, 24)
	rand.Read(b)
	t := hex.EncodeToString(b)
	s.mu.Lock()
	now := s.now()
	for k, v := range s.tokens {
		if now.After(v.expires) {
			delete(s.tokens, k)
		}
	}
	s.tokens[t] = token{ip: ip, expires: now.Add(time.Duration(ttl) * time.Second)}
	s.mu.Unlock()
	w.Header().Set(hdrTTL, strconv.Itoa(ttl))
	w.Header().Set("Content-Type", "text/plain")
	w.Write([]byte(t))
}

// validToken: a token is good only from the address it was issued to, as
// a token cannot leave an instance on EC2.
func (s *Server) validToken(t string, ip netip.Addr) bool {
	if t == "" {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.tokens[t]
	return ok && v.ip == ip && s.now().Before(v.expires)
}

// lookup answers one path for one instance.
func (s *Server) lookup(ctx context.Context, in Instance, path string) ([]byte, string, int) {
	const text, js = "text/plain", "application/json"
	switch {
	case path == "/latest/user-data":
		if in.UserData == nil {
			return nil, "", http.StatusNotFound
		}
		return in.UserData, "application/octet-stream", http.StatusOK
	case path == "/latest/dynamic/instance-identity/document":
		b, _ := json.MarshalIndent(map[string]any{
			"accountId": in.AccountID, "architecture": "x86_64", "availabilityZone": in.Zone,
			"imageId": in.ImageID, "instanceId": in.ID, "instanceType": in.Type,
			"pendingTime": in.LaunchedTime.UTC().Format(time.RFC3339), "privateIp": in.PrivateIP.String(),
			"region": in.Region, "version": "2017-09-30",
		}, "", "  ")
		return b, js, http.StatusOK
	}
	rest, ok := strings.CutPrefix(path, "/latest/meta-data")
	if !ok {
		return nil, "", http.StatusNotFound
	}
	rest = strings.Trim(rest, "/")
	role := "iam/security-credentials/" + in.Role
	if in.Role != "" && rest == role {
		c, err := s.b.Credentials(ctx, in)
		if err != nil {
			return nil, "", http.StatusInternalServerError
		}
		b, _ := json.MarshalIndent(map[string]string{
			"Code": "Success", "LastUpdated": s.now().UTC().Format(time.RFC3339), "Type": "AWS-HMAC",
			"AccessKeyId": c.AccessKeyID, "SecretAccessKey": c.SecretAccessKey, "Token": c.Token,
			"Expiration": c.Expiration.UTC().Format(time.RFC3339),
		}, "", "  ")
		return b, js, http.StatusOK
	}
	tree := metadata(in)
	if v, ok := tree[rest]; ok {
		return []byte(v), text, http.StatusOK
	}
	// A folder lists its children, one a line, folders with a slash.
	children := map[string]bool{}
	prefix := rest + "/"
	if rest == "" {
		prefix = ""
	}
	for k := range tree {
		if sub, ok := strings.CutPrefix(k, prefix); ok {
			name, more, isDir := strings.Cut(sub, "/")
			_ = more
			if isDir {
				name += "/"
			}
			children[name] = true
		}
	}
	if len(children) == 0 {
		return nil, "", http.StatusNotFound
	}
	list := make([]string, 0, len(children))
	for k := range children {
		list = append(list, k)
	}
	sort.Strings(list)
	return []byte(strings.Join(list, "\n")), text, http.StatusOK
}

// metadata is the leaf values under /latest/meta-data/ by path.
func metadata(in Instance) map[string]string {
	mac := "network/interfaces/macs/" + in.MAC + "/"
	m := map[string]string{
		"ami-id":                       in.ImageID,
		"instance-id":                  in.ID,
		"instance-type":                in.Type,
		"local-ipv4":                   in.PrivateIP.String(),
		"local-hostname":               in.Hostname,
		"hostname":                     in.Hostname,
		"mac":                          in.MAC,
		"placement/availability-zone":  in.Zone,
		"placement/region":             in.Region,
		mac + "device-number":          "0",
		mac + "local-ipv4s":            in.PrivateIP.String(),
		mac + "local-hostname":         in.Hostname,
		mac + "mac":                    in.MAC,
		mac + "subnet-id":              in.SubnetID,
		mac + "subnet-ipv4-cidr-block": in.SubnetCIDR,
		mac + "vpc-id":                 in.VPCID,
		mac + "vpc-ipv4-cidr-block":    in.VPCCIDR,
		mac + "vpc-ipv4-cidr-blocks":   in.VPCCIDR,
	}
	if in.Role != "" {
		b, _ := json.MarshalIndent(map[string]string{
			"Code": "Success", "InstanceProfileArn": in.ProfileARN, "InstanceProfileId": in.ProfileARN,
		}, "", "  ")
		m["iam/info"] = string(b)
		// The credentials leaf is answered by lookup; listed here so the
		// folder lists the role.
		m["iam/security-credentials/"+in.Role] = ""
	}
	return m
}

// connKey carries a request's connection in its context, for setTTL.
type connKey struct{}

// setTTL sets the IP TTL of everything c sends from now on. It stays for
// the rest of the connection rather than being put back after the token's
// reply: a retransmission of that reply after the reset would carry the
// default TTL and reach where the token may not. A pod that cannot receive
// the token has nothing to ask with on that connection anyway, and the
// node's own later replies need no more than hop limit 1.
func setTTL(c net.Conn, ttl int) error {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil // not a socket: a test's in-memory connection
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_TTL, ttl)
	}); err != nil {
		return err
	}
	return serr
}

// Serve serves the metadata service on l until ctx ends.
//
// The harness listens on the run's bridge, the machines' gateway: a
// machine reaches the service on its own link, with no router between, as
// an instance reaches EC2's. So the TTL a reply leaves with is the hop
// limit itself, with no allowance for hops of the harness's own.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) }}
	go func() { <-ctx.Done(); hs.Close() }()
	err := hs.Serve(l)
	if err == http.ErrServerClosed {
		return nil
	}
	return err
}
