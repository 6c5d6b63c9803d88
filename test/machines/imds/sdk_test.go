package imds

import (
	"context"
	"io"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds"
	sdkimds "github.com/aws/aws-sdk-go-v2/feature/ec2/imds"
)

type loopback struct{ backend }

func (loopback) InstanceByIP(ip netip.Addr) (Instance, bool) {
	in := inst
	in.PrivateIP = netip.MustParseAddr("127.0.0.1")
	return in, ip == in.PrivateIP
}

// TestAWSSDK: the AWS SDK's own IMDS client and EC2 role credentials
// provider (what kube-aws-node and the cloud controller manager use) work
// against the server.
func TestAWSSDK(t *testing.T) {
	srv := httptest.NewServer(New(loopback{}))
	defer srv.Close()
	ctx := context.Background()
	c := sdkimds.New(sdkimds.Options{Endpoint: srv.URL})
	reg, err := c.GetRegion(ctx, nil)
	if err != nil || reg.Region != "us-east-1" {
		t.Fatalf("GetRegion = %+v, %v", reg, err)
	}
	doc, err := c.GetInstanceIdentityDocument(ctx, nil)
	if err != nil || doc.InstanceID != "i-0abc" || doc.AvailabilityZone != "us-east-1a" {
		t.Fatalf("GetInstanceIdentityDocument = %+v, %v", doc, err)
	}
	md, err := c.GetMetadata(ctx, &sdkimds.GetMetadataInput{Path: "local-ipv4"})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(md.Content)
	if string(b) != "127.0.0.1" {
		t.Fatalf("local-ipv4 = %q", b)
	}
	ud, err := c.GetUserData(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = io.ReadAll(ud.Content)
	if string(b) != "#!/bin/sh\n" {
		t.Fatalf("user data = %q", b)
	}
	p := ec2rolecreds.New(func(o *ec2rolecreds.Options) { o.Client = c })
	cr, err := p.Retrieve(ctx)
	if err != nil || cr.AccessKeyID != "ASIA1" || cr.SessionToken != "t" || !cr.CanExpire {
		t.Fatalf("role credentials = %+v, %v", cr, err)
	}
}
