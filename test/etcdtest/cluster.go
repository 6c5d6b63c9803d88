package etcdtest

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
)

// Cluster is a cluster of members on this machine, named etcd0, etcd1...,
// sharing one PKI under a root (Start's), each started when a test says:
// a cluster with a member not started yet is one whose replacement has not
// come back.
type Cluster struct {
	t       testing.TB
	cfgs    []*embed.Config
	Members []*Member
}

// NewCluster issues the PKI under root and configures n members; none runs
// until Start. Members that are started are stopped at the end of the test.
func NewCluster(t testing.TB, root string, n int) *Cluster {
	t.Helper()
	issuePKI(t, root)
	c := &Cluster{t: t}
	var initial []string
	for i := 0; i < n; i++ {
		cfg := embed.NewConfig()
		cfg.Name = fmt.Sprintf("etcd%d", i)
		cfg.Dir = filepath.Join(t.TempDir(), "data")
		cfg.LogLevel = "error"
		cfg.LogOutputs = []string{filepath.Join(t.TempDir(), "etcd.log")}
		client, _ := url.Parse(fmt.Sprintf("https://127.0.0.1:%d", freePort(t)))
		peer, _ := url.Parse(fmt.Sprintf("http://127.0.0.1:%d", freePort(t)))
		cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*client}, []url.URL{*client}
		cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
		cfg.InitialClusterToken = "etcdtest"
		cfg.ClientTLSInfo = transport.TLSInfo{
			CertFile: root + ServerCert, KeyFile: root + ServerKey, TrustedCAFile: root + CACert, ClientCertAuth: true,
		}
		initial = append(initial, cfg.Name+"="+peer.String())
		c.cfgs = append(c.cfgs, cfg)
		c.Members = append(c.Members, &Member{ClientURL: client.String()})
	}
	for _, cfg := range c.cfgs {
		cfg.InitialCluster = strings.Join(initial, ",")
	}
	return c
}

// Start starts the members at those indexes and waits until each serves,
// which needs a quorum of the cluster started.
func (c *Cluster) Start(members ...int) {
	c.t.Helper()
	for _, i := range members {
		e, err := embed.StartEtcd(c.cfgs[i])
		if err != nil {
			c.t.Fatalf("starting etcd member %s: %v", c.cfgs[i].Name, err)
		}
		c.t.Cleanup(e.Close)
		c.Members[i].Etcd = e
	}
	for _, i := range members {
		select {
		case <-c.Members[i].Etcd.Server.ReadyNotify():
		case <-time.After(30 * time.Second):
			c.t.Fatalf("etcd member %s did not get ready within 30s", c.cfgs[i].Name)
		}
	}
}
