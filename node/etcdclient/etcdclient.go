// Package etcdclient makes the etcd client configuration of a machine from
// the goal plan's etcd section: the member's client URLs (facts expanded)
// and a client certificate the member trusts.
package etcdclient

import (
	"fmt"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
)

// Config is the client configuration for g; file paths are under the
// Env's root.
func Config(e *agent.Env, g *nodeplan.EtcdGoal) (clientv3.Config, error) {
	var endpoints []string
	for i, ep := range g.Endpoints {
		v, err := e.Expand(fmt.Sprintf("etcd.endpoints[%d]", i), ep)
		if err != nil {
			return clientv3.Config{}, err
		}
		endpoints = append(endpoints, v)
	}
	tlsInfo := transport.TLSInfo{CertFile: e.Path(g.Cert), KeyFile: e.Path(g.Key), TrustedCAFile: e.Path(g.CACert)}
	tls, err := tlsInfo.ClientConfig()
	if err != nil {
		return clientv3.Config{}, fmt.Errorf("etcd client certificate: %w", err)
	}
	return clientv3.Config{
		Endpoints: endpoints, TLS: tls, DialTimeout: 5 * time.Second,
		// The client's own logging would repeat on the console what the
		// step reports anyway.
		Logger: zap.NewNop(),
	}, nil
}
