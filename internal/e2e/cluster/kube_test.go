//go:build e2ecluster

package cluster

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-aws/kube-aws/internal/machines/player"
)

// vpcResolver is the VPC resolver of cluster.yaml.example's 10.0.0.0/16.
var vpcResolver = netip.MustParseAddr("10.0.0.2")

// stackOutput returns the value of the first stack output named key.
func (e *example) stackOutput(ctx context.Context, key string) (string, error) {
	out, err := cloudformation.NewFromConfig(e.cfg).DescribeStacks(ctx, &cloudformation.DescribeStacksInput{})
	if err != nil {
		return "", err
	}
	for _, s := range out.Stacks {
		for _, o := range s.Outputs {
			if aws.ToString(o.OutputKey) == key {
				return aws.ToString(o.OutputValue), nil
			}
		}
	}
	return "", fmt.Errorf("no stack has an output %s", key)
}

// kube returns a client of the cluster from the admin kubeconfig that
// `kube-aws kubeconfig` writes, reaching the API by apiEndpoint.dnsName
// (the load balancer) from the host side of the run's network (names resolved by the VPC
// resolver, connections made inside the run's namespace).
func (e *example) kube(ctx context.Context) (*kubernetes.Clientset, *rest.Config, error) {
	path := filepath.Join(e.dir, "admin.kubeconfig")
	if out, err := e.kubeAWS(ctx, "kubeconfig", "--out", path); err != nil {
		return nil, nil, fmt.Errorf("kube-aws kubeconfig: %w\n%s", err, out)
	}
	if fi, err := os.Stat(path); err != nil {
		return nil, nil, err
	} else if fi.Mode().Perm() != 0o600 {
		return nil, nil, fmt.Errorf("kube-aws kubeconfig wrote %s with mode %v, want 0600", path, fi.Mode().Perm())
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, nil, err
	}
	resolver := e.h.Resolver(vpcResolver)
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if _, err := netip.ParseAddr(host); err != nil {
			ips, err := resolver.LookupHost(ctx, host)
			if err != nil {
				return nil, err
			}
			host = ips[0]
		}
		return e.h.NS.DialContext(ctx, network, net.JoinHostPort(host, port))
	}
	cfg.Timeout = 15 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	return cs, cfg, err
}

// eventually retries f every second until it succeeds or ctx ends.
func eventually(ctx context.Context, what string, f func() error) error {
	var last error
	for {
		if last = f(); last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last: %v)", what, ctx.Err(), last)
		case <-time.After(time.Second):
		}
	}
}

// machineOf returns the running machine of instance id.
func (e *example) machineOf(id string) (*player.Machine, error) {
	m, ok := e.h.Player().Machine(id)
	if !ok {
		return nil, fmt.Errorf("instance %s has no running machine", id)
	}
	return m, nil
}

// inMachine runs a command in instance id's machine and returns its output.
func (e *example) inMachine(ctx context.Context, id string, args ...string) (string, error) {
	m, err := e.machineOf(id)
	if err != nil {
		return "", err
	}
	c, err := m.Exec(args[0], args[1:]...)
	if err != nil {
		return "", err
	}
	// Its standard output only: etcdctl logs warnings on standard error.
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	if err := c.Run(); err != nil {
		return out.String(), fmt.Errorf("%s in %s: %w: %s%s", strings.Join(args, " "), id, err, out.String(), errOut.String())
	}
	return out.String(), nil
}

// etcdctl runs etcdctl on an etcd member with the member's health-check
// client certificate (kubeadm's layout).
func (e *example) etcdctl(ctx context.Context, id string, args ...string) (string, error) {
	base := []string{"env", "ETCDCTL_API=3", "/usr/local/bin/etcdctl",
		"--endpoints", "https://127.0.0.1:2379",
		"--cacert", "/etc/kubernetes/pki/etcd/ca.crt",
		"--cert", "/etc/kubernetes/pki/etcd/healthcheck-client.crt",
		"--key", "/etc/kubernetes/pki/etcd/healthcheck-client.key"}
	return e.inMachine(ctx, id, append(base, args...)...)
}
