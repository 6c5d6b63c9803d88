//go:build e2ecluster

package cluster

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/kube-aws/kube-aws/test/awstest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kube-aws/kube-aws/test/machines/player"
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

const probeImage = "kube-aws.test/e2e-probe:1"

// probeArchive builds the probe (./probe) and packs it as an image archive
// the way images without a registry are made here (go-containerregistry).
func probeArchive(dir string) (string, error) {
	bin := filepath.Join(dir, "probe")
	c := exec.Command("go", "build", "-trimpath", "-o", bin, "./test/e2e/cluster/probe")
	c.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if root, err := awstest.RepoRoot(); err == nil {
		c.Dir = root
	}
	if out, err := c.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the probe: %w\n%s", err, out)
	}
	b, err := os.ReadFile(bin)
	if err != nil {
		return "", err
	}
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	if err := tw.WriteHeader(&tar.Header{Name: "probe", Mode: 0o755, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
		return "", err
	}
	if _, err := tw.Write(b); err != nil {
		return "", err
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	l, err := tarball.LayerFromReader(bytes.NewReader(layer.Bytes()))
	if err != nil {
		return "", err
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return "", err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return "", err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Config.Entrypoint = []string{"/probe"}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return "", err
	}
	tag, err := name.NewTag(probeImage)
	if err != nil {
		return "", err
	}
	out := filepath.Join(dir, "probe.tar")
	return out, tarball.WriteToFile(out, tag, img)
}

// sideLoad imports the probe archive into a node's containerd: no registry
// is reachable here, so the test's own workload image is put where a pull
// would have put it.
func (e *example) sideLoad(ctx context.Context, id, archive string) error {
	m, err := e.machineOf(id)
	if err != nil {
		return err
	}
	b, err := os.ReadFile(archive)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(m.Root(), "var/tmp/e2e-probe.tar"), b, 0o644); err != nil {
		return err
	}
	_, err = e.inMachine(ctx, id, "ctr", "-n", "k8s.io", "images", "import", "/var/tmp/e2e-probe.tar")
	return err
}

// probeReport is what the probe says in its termination message.
type probeReport struct {
	Resolved []string    `json:"resolved"`
	API      int         `json:"api"`
	Value    *string     `json:"value"`
	IMDS     *imdsReport `json:"imds"`
	AWS      *awsReport  `json:"aws"`
	Err      string      `json:"error"`
}

// awsReport is what the probe's AWS SDK got (PROBE_AWS).
type awsReport struct {
	RoleARN   string   `json:"roleArn"`
	TokenFile string   `json:"tokenFile"`
	Issuer    string   `json:"iss"`
	Audience  []string `json:"aud"`
	Subject   string   `json:"sub"`
	KeyID     string   `json:"kid"`
	STS       string   `json:"sts"`
	Caller    string   `json:"caller"`
	Error     string   `json:"error"`
}

// imdsReport is what the probe got of the instance metadata service
// (PROBE_IMDS).
type imdsReport struct {
	Status      int    `json:"status"`
	TimedOut    bool   `json:"timedOut"`
	Error       string `json:"error"`
	Millis      int64  `json:"ms"`
	Role        string `json:"role"`
	Credentials bool   `json:"credentials"`
}

// runProbe runs the probe as a pod on node and returns its report.
func runProbe(ctx context.Context, cs *kubernetes.Clientset, podName, node string, env []corev1.EnvVar) (*probeReport, error) {
	return runProbeAs(ctx, cs, podName, node, "", env)
}

// runProbeAs runs the probe as a pod of service account sa ("" for the
// namespace's default) on node and returns its report.
func runProbeAs(ctx context.Context, cs *kubernetes.Clientset, podName, node, sa string, env []corev1.EnvVar) (*probeReport, error) {
	pods := cs.CoreV1().Pods("default")
	_ = pods.Delete(ctx, podName, metav1.DeleteOptions{})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName},
		Spec: corev1.PodSpec{
			ServiceAccountName: sa,
			NodeName:           node,
			RestartPolicy:      corev1.RestartPolicyNever,
			Tolerations:        []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{
				Name: "probe", Image: probeImage, ImagePullPolicy: corev1.PullNever, Env: env,
			}},
		},
	}
	if err := eventually(ctx, "creating pod "+podName, func() error {
		_, err := pods.Create(ctx, pod, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return err
		}
		return err
	}); err != nil {
		return nil, err
	}
	var rep *probeReport
	err := eventually(ctx, "pod "+podName+" on "+node+" finishing", func() error {
		p, err := pods.Get(ctx, podName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, s := range p.Status.ContainerStatuses {
			if r, done, err := reportOf(s); done {
				if err != nil {
					r = &probeReport{Err: err.Error()}
				}
				rep = r
				return nil
			}
		}
		return fmt.Errorf("phase %s", p.Status.Phase)
	})
	if err != nil {
		return nil, err
	}
	if rep.Err != "" {
		return rep, errors.New(rep.Err)
	}
	return rep, nil
}

// reportOf is the probe's report in a finished container's termination
// message (done: the container finished); err says the message is not one.
func reportOf(s corev1.ContainerStatus) (rep *probeReport, done bool, err error) {
	t := s.State.Terminated
	if t == nil {
		return nil, false, nil
	}
	var r probeReport
	if err := json.Unmarshal([]byte(t.Message), &r); err != nil {
		return nil, true, fmt.Errorf("exit %d, message %q", t.ExitCode, t.Message)
	}
	return &r, true, nil
}

// jobReport waits for a pod of the Job name to finish and returns the
// probe's report. A pod that could not start its container (the image was
// put on its node after the pod was made) is deleted: the Job makes another.
func jobReport(ctx context.Context, cs *kubernetes.Clientset, ns, name string) (*probeReport, error) {
	pods := cs.CoreV1().Pods(ns)
	var rep *probeReport
	err := eventually(ctx, "a pod of Job "+ns+"/"+name+" finishing", func() error {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + name})
		if err != nil {
			return err
		}
		for _, p := range list.Items {
			for _, s := range p.Status.ContainerStatuses {
				if w := s.State.Waiting; w != nil && w.Reason == "ErrImageNeverPull" {
					_ = pods.Delete(ctx, p.Name, metav1.DeleteOptions{})
				}
				if r, done, err := reportOf(s); done {
					if err != nil {
						return fmt.Errorf("pod %s: %w", p.Name, err)
					}
					rep = r
					return nil
				}
			}
		}
		return fmt.Errorf("%d pods, none finished", len(list.Items))
	})
	return rep, err
}
