package nodeplan

import (
	"fmt"
	"slices"
	"strings"
	"sync"
)

// The steps of kube-aws-node: each name is its subcommand,
// `kube-aws-node <name>`, and the name of its package (without the dash).
const (
	StepBoot         = "boot"
	StepVolumes      = "volumes"
	StepSecrets      = "secrets"
	StepArtifacts    = "artifacts"
	StepCertificates = "certificates"
	StepDNS          = "dns"
	StepAddons       = "addons"
	StepWait         = "wait"
	StepWaitAPI      = "wait-api"
	StepEtcdSnapshot = "etcd-snapshot"
	StepApproveCSRs  = "approve-csrs"
	StepDrainer      = "drainer"
	// StepPodIdentityWebhook is the controllers' pod identity webhook.
	StepPodIdentityWebhook = "pod-identity-webhook"
)

// Units is no step of kube-aws-node but the point of the boot where runcmd
// reloads systemd and starts the role's units (systemctl daemon-reload,
// try-restart, enable, start). Steps need it as they need a step: what
// comes before it prepares what the units use, what comes after it waits
// on what the units do.
const Units = "units"

// Step declares one of kube-aws-node's steps (or Units): what it reads and
// what must have happened before it runs. The userdata plugin calls the
// steps in runcmd in the order Steps derives from these declarations, and
// kube-aws-node lists them in that order.
type Step struct {
	// Name is the step's name (a Step* constant, or Units).
	Name string
	// Plan is the plan file it reads, "" when it reads none (boot reads the
	// userdata, wait-api its flags).
	Plan string
	// RunCmd says the role's runcmd calls the step when the role has its
	// Plan. The others are started otherwise: boot by the launch template's
	// bootstrap, the rest by the role's units (a timer, a service, a unit's
	// ExecStartPre).
	RunCmd bool
	// Needs says what must have happened before the step runs, and why. A
	// need orders two steps; it does not ask that the role have the other
	// step's plan (etcd members have no addons plan, and wait still comes
	// after addons).
	Needs []Need
	// Summary says what the step does, in one line.
	Summary string
}

// Need is one thing a step needs: a step (or Units) that comes before it.
type Need struct {
	Step string
	Why  string
}

// declared is every step, in the order a machine runs them wherever their
// needs leave a choice. Each reason is what breaks if the order is not kept.
var declared = []Step{
	{Name: StepBoot, Summary: "fetch the role's userdata from S3, check its sha256, apply write_files and runcmd"},
	{Name: StepVolumes, Plan: VolumesPath, RunCmd: true,
		Summary: "attach, format (only when blank) and mount the volumes plan's EBS volumes"},
	{Name: StepSecrets, Plan: SecretsPath, RunCmd: true,
		Summary: "decrypt the secrets plan's markers with KMS and substitute them by file format",
		Needs: []Need{
			{StepVolumes, "a ((fact:<name>)) marker may name a fact a volume's tag gives ({member})"},
		}},
	{Name: StepArtifacts, Plan: ArtifactsPath, RunCmd: true,
		Summary: "install the artifacts plan's binaries and import its images into containerd",
		Needs: []Need{
			{StepVolumes, "binaries and images go where a volume may be mounted (containerd's root): mounted later, it would hide them"},
		}},
	{Name: StepCertificates, Plan: CertificatesPath, RunCmd: true,
		Summary: "issue the certificates plan's leaf certificates from the CAs on this machine",
		Needs: []Need{
			{StepVolumes, "a certificate's names may name a fact a volume's tag gives ({member})"},
			{StepSecrets, "a CA key is a secret: secrets decrypts it"},
		}},
	{Name: StepDNS, Plan: DNSPath, RunCmd: true,
		Summary: "upsert the DNS plan's Route 53 records with this machine's facts",
		Needs: []Need{
			{StepVolumes, "a record's name may name a fact a volume's tag gives ({member})"},
		}},
	{Name: Units,
		Needs: []Need{
			{StepVolumes, "units keep their data on the volumes (etcd on its data volume)"},
			{StepSecrets, "units read the files whose markers secrets substitutes"},
			{StepArtifacts, "units run the binaries and images artifacts installs"},
			{StepCertificates, "units serve and authenticate with the certificates"},
			{StepDNS, "etcd members find their peers by the names dns upserts"},
		}},
	{Name: StepAddons, Plan: AddonsPath, RunCmd: true,
		Summary: "once the API server answers, install the add-ons plan's Helm releases, then apply its manifests",
		Needs: []Need{
			{Units, "the API server, which a unit runs, must answer"},
		}},
	{Name: StepWait, Plan: GoalPath, RunCmd: true,
		Summary: "wait for the goal plan's goal (node Ready or etcd member healthy) and report it",
		Needs: []Need{
			{Units, "the kubelet or etcd, which units run, reach the goal"},
			{StepAddons, "a node is Ready only once its network add-on runs, a release addons installs"},
		}},
	{Name: StepWaitAPI,
		Summary: "wait until the API server answers a kubeconfig's credential (a worker's kubelet, before it starts)",
		Needs: []Need{
			{Units, "the kubelet's unit runs it before the kubelet (ExecStartPre)"},
		}},
	{Name: StepEtcdSnapshot, Plan: GoalPath,
		Summary: "snapshot this etcd member (when leader) to etcd/snapshots/ in S3, KMS-encrypted",
		Needs: []Need{
			{Units, "a timer runs it, on a running etcd member"},
		}},
	{Name: StepApproveCSRs, Plan: ApproverPath,
		Summary: "run the approver of kubelet serving CSRs whose names are their node's instance's (until stopped)",
		Needs: []Need{
			{Units, "a unit runs it; it asks the API server, which a unit runs"},
		}},
	{Name: StepDrainer, Plan: DrainerPath,
		Summary: "run the drainer of the nodes whose instances wait on the termination hook or carry kube-aws's drain request (until stopped)",
		Needs: []Need{
			{Units, "a unit runs it; it drains through the API server, which a unit runs"},
		}},
	{Name: StepPodIdentityWebhook, Plan: PodIdentityWebhookPath,
		Summary: "serve the webhook that gives a pod whose service account names an IAM role its token and AWS environment (until stopped)",
		Needs: []Need{
			{Units, "a unit runs it; it reads service accounts from the API server, which a unit runs, and the cluster CA certificates writes"},
		}},
}

var ordered = sync.OnceValue(func() []Step {
	steps, err := Order(declared)
	if err != nil {
		// A test orders the declarations: this is a broken build.
		panic("nodeplan: the steps' declarations: " + err.Error())
	}
	return steps
})

// Steps returns the declaration of every step, and Units, in the order a
// machine runs them (Order of the declarations).
func Steps() []Step { return slices.Clone(ordered()) }

// StepNamed returns the declaration of the step called name.
func StepNamed(name string) (Step, bool) {
	i := slices.IndexFunc(declared, func(s Step) bool { return s.Name == name })
	if i < 0 {
		return Step{}, false
	}
	return declared[i], true
}

// Order sorts declarations so that every step comes after the steps it
// needs, keeping the declared order wherever the needs leave a choice (a
// stable topological order). A name declared twice, a need of a step that
// is not declared, and needs that go round in a cycle are errors.
func Order(decls []Step) ([]Step, error) {
	index := map[string]int{}
	for i, d := range decls {
		if _, twice := index[d.Name]; twice {
			return nil, fmt.Errorf("step %s is declared twice", d.Name)
		}
		index[d.Name] = i
	}
	for _, d := range decls {
		for _, n := range d.Needs {
			if _, ok := index[n.Step]; !ok {
				return nil, fmt.Errorf("step %s needs %s, which is not declared", d.Name, n.Step)
			}
		}
	}
	done := make([]bool, len(decls))
	ready := func(d Step) bool {
		return !slices.ContainsFunc(d.Needs, func(n Need) bool { return !done[index[n.Step]] })
	}
	out := make([]Step, 0, len(decls))
	for len(out) < len(decls) {
		next := slices.IndexFunc(decls, func(d Step) bool { return !done[index[d.Name]] && ready(d) })
		if next < 0 {
			return nil, cycle(decls, index, done)
		}
		done[next] = true
		out = append(out, decls[next])
	}
	return out, nil
}

// cycle names a cycle among the steps not done, every one of which needs
// another of them: following those needs from any of them comes round.
func cycle(decls []Step, index map[string]int, done []bool) error {
	at := slices.IndexFunc(done, func(d bool) bool { return !d })
	seen := map[int]int{} // step -> its position on the path
	var path []string
	for {
		if start, again := seen[at]; again {
			return fmt.Errorf("the steps' needs go round: %s", strings.Join(path[start:], ", "))
		}
		seen[at] = len(path)
		i := slices.IndexFunc(decls[at].Needs, func(n Need) bool { return !done[index[n.Step]] })
		n := decls[at].Needs[i]
		path = append(path, fmt.Sprintf("%s needs %s (%s)", decls[at].Name, n.Step, n.Why))
		at = index[n.Step]
	}
}
