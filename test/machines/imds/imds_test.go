package imds

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"
)

type backend struct{ fail bool }

var inst = Instance{
	ID: "i-0abc", Type: "t3.micro", ImageID: "ami-1", AccountID: "123456789012", Region: "us-east-1", Zone: "us-east-1a",
	PrivateIP: netip.MustParseAddr("10.0.1.4"), Hostname: "ip-10-0-1-4.ec2.internal", MAC: "02:00:00:00:00:01",
	SubnetID: "subnet-1", SubnetCIDR: "10.0.1.0/24", VPCID: "vpc-1", VPCCIDR: "10.0.0.0/16",
	Role: "worker", ProfileARN: "arn:aws:iam::123456789012:instance-profile/p", UserData: []byte("#!/bin/sh\n"),
}

func (b backend) InstanceByIP(ip netip.Addr) (Instance, bool) { return inst, ip == inst.PrivateIP }
func (b backend) Credentials(context.Context, Instance) (Credentials, error) {
	if b.fail {
		return Credentials{}, errors.New("sts down")
	}
	return Credentials{AccessKeyID: "ASIA1", SecretAccessKey: "s", Token: "t", Expiration: time.Unix(2e9, 0)}, nil
}

// do sends a request as if from addr.
func do(s *Server, method, path, from string, hdr map[string]string) (int, string, http.Header) {
	r := httptest.NewRequest(method, path, nil)
	r.RemoteAddr = from + ":40000"
	for k, v := range hdr {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	b, _ := io.ReadAll(w.Result().Body)
	return w.Code, string(b), w.Result().Header
}

func TestIMDS(t *testing.T) {
	s := New(backend{})
	_, tok, h := do(s, "PUT", "/latest/api/token", "10.0.1.4", map[string]string{hdrTTL: "300"})
	if h.Get(hdrTTL) != "300" || len(tok) < 16 {
		t.Fatalf("token %q, ttl header %q", tok, h.Get(hdrTTL))
	}
	auth := map[string]string{hdrToken: tok}
	cases := []struct {
		name, method, path, from string
		hdr                      map[string]string
		code                     int
		body                     string // substring
	}{
		{"no token: IMDSv1 refused", "GET", "/latest/meta-data/instance-id", "10.0.1.4", nil, 401, ""},
		{"token from another address", "GET", "/latest/meta-data/instance-id", "10.0.1.5", auth, 401, ""},
		{"wrong token", "GET", "/latest/meta-data/instance-id", "10.0.1.4", map[string]string{hdrToken: "x"}, 401, ""},
		{"token without ttl", "PUT", "/latest/api/token", "10.0.1.4", nil, 400, ""},
		{"token ttl too long", "PUT", "/latest/api/token", "10.0.1.4", map[string]string{hdrTTL: "21601"}, 400, ""},
		{"token by GET", "GET", "/latest/api/token", "10.0.1.4", map[string]string{hdrTTL: "60"}, 405, ""},
		{"instance-id", "GET", "/latest/meta-data/instance-id", "10.0.1.4", auth, 200, "i-0abc"},
		{"local-ipv4", "GET", "/latest/meta-data/local-ipv4", "10.0.1.4", auth, 200, "10.0.1.4"},
		{"local-hostname", "GET", "/latest/meta-data/local-hostname", "10.0.1.4", auth, 200, "ip-10-0-1-4.ec2.internal"},
		{"zone", "GET", "/latest/meta-data/placement/availability-zone", "10.0.1.4", auth, 200, "us-east-1a"},
		{"region", "GET", "/latest/meta-data/placement/region", "10.0.1.4", auth, 200, "us-east-1"},
		{"mac paths", "GET", "/latest/meta-data/network/interfaces/macs/02:00:00:00:00:01/subnet-id", "10.0.1.4", auth, 200, "subnet-1"},
		{"vpc cidr", "GET", "/latest/meta-data/network/interfaces/macs/02:00:00:00:00:01/vpc-ipv4-cidr-block", "10.0.1.4", auth, 200, "10.0.0.0/16"},
		{"root listing", "GET", "/latest/meta-data/", "10.0.1.4", auth, 200, "iam/\ninstance-id"},
		{"role listing", "GET", "/latest/meta-data/iam/security-credentials/", "10.0.1.4", auth, 200, "worker"},
		{"credentials", "GET", "/latest/meta-data/iam/security-credentials/worker", "10.0.1.4", auth, 200, `"AccessKeyId": "ASIA1"`},
		{"another role", "GET", "/latest/meta-data/iam/security-credentials/admin", "10.0.1.4", auth, 404, ""},
		{"user-data", "GET", "/latest/user-data", "10.0.1.4", auth, 200, "#!/bin/sh"},
		{"identity document", "GET", "/latest/dynamic/instance-identity/document", "10.0.1.4", auth, 200, `"region": "us-east-1"`},
		{"unknown path", "GET", "/latest/meta-data/nope", "10.0.1.4", auth, 404, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, body, _ := do(s, tc.method, tc.path, tc.from, tc.hdr)
			if code != tc.code || !strings.Contains(body, tc.body) {
				t.Fatalf("%s %s from %s = %d %q, want %d containing %q", tc.method, tc.path, tc.from, code, body, tc.code, tc.body)
			}
		})
	}
}

func TestUnknownAddressAndFailingCredentials(t *testing.T) {
	s := New(backend{fail: true})
	_, tok, _ := do(s, "PUT", "/latest/api/token", "10.9.9.9", map[string]string{hdrTTL: "60"})
	if code, _, _ := do(s, "GET", "/latest/meta-data/instance-id", "10.9.9.9", map[string]string{hdrToken: tok}); code != 404 {
		t.Fatalf("an address that is no instance got %d, want 404", code)
	}
	_, tok, _ = do(s, "PUT", "/latest/api/token", "10.0.1.4", map[string]string{hdrTTL: "60"})
	if code, _, _ := do(s, "GET", "/latest/meta-data/iam/security-credentials/worker", "10.0.1.4", map[string]string{hdrToken: tok}); code != 500 {
		t.Fatalf("failing credentials got %d, want 500", code)
	}
}

func TestTokenExpires(t *testing.T) {
	s := New(backend{})
	now := time.Unix(1000, 0)
	s.now = func() time.Time { return now }
	_, tok, _ := do(s, "PUT", "/latest/api/token", "10.0.1.4", map[string]string{hdrTTL: "10"})
	if code, _, _ := do(s, "GET", "/latest/meta-data/instance-id", "10.0.1.4", map[string]string{hdrToken: tok}); code != 200 {
		t.Fatalf("fresh token: %d", code)
	}
	now = now.Add(11 * time.Second)
	if code, _, _ := do(s, "GET", "/latest/meta-data/instance-id", "10.0.1.4", map[string]string{hdrToken: tok}); code != 401 {
		t.Fatalf("expired token: %d, want 401", code)
	}
}

func TestCredentialsDocument(t *testing.T) {
	s := New(backend{})
	_, tok, _ := do(s, "PUT", "/latest/api/token", "10.0.1.4", map[string]string{hdrTTL: "60"})
	_, body, _ := do(s, "GET", "/latest/meta-data/iam/security-credentials/worker", "10.0.1.4", map[string]string{hdrToken: tok})
	var doc map[string]string
	if err := json.Unmarshal([]byte(body), &doc); err != nil {
		t.Fatal(err)
	}
	// The fields every AWS SDK reads.
	for _, k := range []string{"Code", "AccessKeyId", "SecretAccessKey", "Token", "Expiration"} {
		if doc[k] == "" {
			t.Errorf("credentials document lacks %s: %v", k, doc)
		}
	}
	if _, err := time.Parse(time.RFC3339, doc["Expiration"]); err != nil {
		t.Error(err)
	}
}
