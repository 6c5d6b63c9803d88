package approvecsrs

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	certv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certinformers "k8s.io/client-go/informers/certificates/v1"
	"k8s.io/client-go/kubernetes"
	certlisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/agent"
	"github.com/kube-aws/kube-aws/node/kube"
	"github.com/kube-aws/kube-aws/node/step"
)

// Step is the step.
type Step struct {
	// Connect reaches the API server with a kubeconfig.
	Connect func(kubeconfig string) (kubernetes.Interface, error)
}

// New is the step as kube-aws-node runs it.
func New() *Step { return &Step{Connect: kube.Clientset} }

func (*Step) Name() string { return nodeplan.StepApproveCSRs }

func (*Step) Flags(*flag.FlagSet) {}

// Check reads the approver plan, which the role must have, and decides the
// requests waiting now, as the approver will: its run, until stopped, is
// the change, and those decisions are the first it makes.
func (s *Step) Check(ctx context.Context, e *agent.Env) (step.Changes, error) {
	var plan nodeplan.ApproverPlan
	found, err := e.Plan(nodeplan.ApproverPath, &plan)
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, agent.BadInput(fmt.Errorf("no approver plan (%s): it names the kubeconfig to approve with", nodeplan.ApproverPath))
	}
	cs, err := s.Connect(e.Path(plan.Kubeconfig))
	if err != nil {
		return nil, err
	}
	changes := step.Changes{{Action: "run", Target: "the kubelet serving CSR approver", Data: cs,
		Detail: fmt.Sprintf("until stopped, with %s: approve the requests whose names and addresses are their node's EC2 instance's, deny the others", plan.Kubeconfig)}}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	list, err := cs.CertificatesV1().CertificateSigningRequests().List(lctx, metav1.ListOptions{})
	if err != nil {
		// The API server may not answer yet: the approver waits for it.
		e.Logf("the requests waiting now are unknown: %v", err)
		return changes, nil
	}
	lookup := EC2Lookup(ctx, ec2.NewFromConfig(e.AWS), e.Settings.Cluster)
	for i := range list.Items {
		csr := &list.Items[i]
		verdict, reason := Decide(csr, lookup)
		if verdict != Skip {
			changes = append(changes, step.Change{Action: verdict.String(), Target: "CSR " + csr.Name, Detail: reason})
		}
	}
	return changes, nil
}

// Apply approves until ctx ends (SIGTERM from systemd), which is no error.
func (s *Step) Apply(ctx context.Context, e *agent.Env, changes step.Changes) error {
	cs := changes[0].Data.(kubernetes.Interface)
	lookup := EC2Lookup(ctx, ec2.NewFromConfig(e.AWS), e.Settings.Cluster)
	a := &approver{cs: cs, lookup: lookup, logf: e.Logf}
	return a.run(ctx)
}

type approver struct {
	cs     kubernetes.Interface
	lookup Lookup
	logf   func(string, ...any)
}

func (a *approver) run(ctx context.Context) error {
	// The one informer it needs, not the factory: the factory links every
	// API group's informers into the binary.
	inf := certinformers.NewCertificateSigningRequestInformer(a.cs, 0, cache.Indexers{})
	lister := certlisters.NewCertificateSigningRequestLister(inf.GetIndexer())
	queue := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](time.Second, time.Minute),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "kubelet-serving-csrs"})
	defer queue.ShutDown()
	enqueue := func(obj any) {
		if csr, ok := obj.(*certv1.CertificateSigningRequest); ok && csr.Spec.SignerName == certv1.KubeletServingSignerName {
			queue.Add(csr.Name)
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		return err
	}
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		if ctx.Err() != nil {
			return nil
		}
		return errors.New("listing certificate signing requests failed")
	}
	a.logf("approving kubelet serving certificate requests whose names and addresses are their node's EC2 instance's")
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	for {
		name, quit := queue.Get()
		if quit {
			return nil
		}
		retry := a.process(ctx, lister.Get, name)
		if retry {
			queue.AddRateLimited(name)
		} else {
			queue.Forget(name)
		}
		queue.Done(name)
	}
}

// process decides one request; it reports whether to try again later.
func (a *approver) process(ctx context.Context, get func(string) (*certv1.CertificateSigningRequest, error), name string) bool {
	csr, err := get(name)
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		a.logf("CSR %s: %v", name, err)
		return true
	}
	verdict, reason := Decide(csr, a.lookup)
	var cond certv1.CertificateSigningRequestCondition
	switch verdict {
	case Skip:
		return false
	case Retry:
		a.logf("CSR %s: %s; trying again later", name, reason)
		return true
	case Approve:
		cond = certv1.CertificateSigningRequestCondition{Type: certv1.CertificateApproved, Reason: "KubeAwsNodeApproved"}
	case Deny:
		cond = certv1.CertificateSigningRequestCondition{Type: certv1.CertificateDenied, Reason: "KubeAwsNodeDenied"}
	}
	cond.Status, cond.Message, cond.LastUpdateTime = corev1.ConditionTrue, "kube-aws-node: "+reason, metav1.Now()
	csr = csr.DeepCopy()
	csr.Status.Conditions = append(csr.Status.Conditions, cond)
	_, err = a.cs.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, name, csr, metav1.UpdateOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return false
	case apierrors.IsConflict(err):
		return true // changed meanwhile: decide again on the new version
	case err != nil:
		a.logf("CSR %s: recording %s: %v", name, verdict, err)
		return true
	}
	a.logf("CSR %s: %s: %s", name, cond.Type, reason)
	return false
}

// EC2Lookup finds a node's instance among the cluster's running ones
// (tagged kubernetes.io/cluster/<cluster>), by private DNS name, the node
// name the AWS cloud provider gives, or by instance id.
func EC2Lookup(ctx context.Context, client *ec2.Client, cluster string) Lookup {
	return func(node string) (*Instance, error) {
		filters := []types.Filter{
			{Name: aws.String("tag-key"), Values: []string{"kubernetes.io/cluster/" + cluster}},
			{Name: aws.String("instance-state-name"), Values: []string{"pending", "running"}},
		}
		in := &ec2.DescribeInstancesInput{Filters: filters}
		if strings.HasPrefix(node, "i-") {
			in.InstanceIds = []string{node}
		} else {
			in.Filters = append(in.Filters, types.Filter{Name: aws.String("private-dns-name"), Values: []string{node}})
		}
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		out, err := client.DescribeInstances(ctx, in)
		if err != nil {
			var api interface{ ErrorCode() string }
			if errors.As(err, &api) && api.ErrorCode() == "InvalidInstanceID.NotFound" {
				return nil, ErrNoInstance
			}
			return nil, err
		}
		var found []types.Instance
		for _, r := range out.Reservations {
			found = append(found, r.Instances...)
		}
		if len(found) != 1 {
			if len(found) == 0 {
				return nil, ErrNoInstance
			}
			return nil, fmt.Errorf("%d instances are node %s", len(found), node)
		}
		return instance(found[0]), nil
	}
}

func instance(i types.Instance) *Instance {
	out := &Instance{ID: aws.ToString(i.InstanceId)}
	addDNS := func(s *string) {
		if v := strings.ToLower(aws.ToString(s)); v != "" {
			out.DNSNames = append(out.DNSNames, v)
		}
	}
	addIP := func(s *string) {
		if ip := net.ParseIP(aws.ToString(s)); ip != nil {
			out.IPs = append(out.IPs, ip)
		}
	}
	addDNS(i.PrivateDnsName)
	addDNS(i.PublicDnsName)
	addIP(i.PrivateIpAddress)
	addIP(i.PublicIpAddress)
	for _, ni := range i.NetworkInterfaces {
		for _, p := range ni.PrivateIpAddresses {
			addIP(p.PrivateIpAddress)
			addDNS(p.PrivateDnsName)
			if p.Association != nil {
				addIP(p.Association.PublicIp)
				addDNS(p.Association.PublicDnsName)
			}
		}
		for _, v6 := range ni.Ipv6Addresses {
			addIP(v6.Ipv6Address)
		}
	}
	return out
}
