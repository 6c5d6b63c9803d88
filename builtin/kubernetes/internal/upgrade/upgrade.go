// Package upgrade keeps a cluster's Kubernetes version changes within the
// upstream version skew policy (core/kubeversion.CheckUpgrade): it records
// the version a deploy of the cluster succeeded with in the kubernetes
// plugin's store, refuses at initialise a kubernetesVersion that version
// cannot move to, and puts the version on the control-plane stack as an
// output, where the deploy plugin reads what the running cluster has.
package upgrade

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/awslabs/goformation/v4/cloudformation"

	"github.com/kube-aws/kube-aws/builtin/internal/cfn"
	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
	"github.com/kube-aws/kube-aws/core/kubeversion"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/stage"
)

// Store is the plugin's key-value store, which kube-aws keeps between runs
// (.kube-aws/store/kubernetes.json beside cluster.yaml).
type Store interface {
	Get(name string) ([]byte, bool, error)
	Put(name string, value []byte) error
}

// StoreDeployedVersion is the store key of the Kubernetes version the
// cluster's last successful deploy ran with ("v1.34.4").
const StoreDeployedVersion = "deployed-kubernetes-version"

// StorePath is where the operator finds the store, for messages.
const StorePath = ".kube-aws/store/kubernetes.json"

// Check refuses a kubernetesVersion the cluster's last deployed version
// cannot change to: a fatal at kubernetesVersion naming both versions, the
// rule and what to do. A cluster never deployed (nothing recorded) may take
// any supported version. An unreadable record is an error of kube-aws's
// own state, named with the key and file.
func Check(s Store, configured kubeversion.Version) (diag.List, error) {
	b, ok, err := s.Get(StoreDeployedVersion)
	if err != nil {
		return nil, fmt.Errorf("reading the Kubernetes version the cluster last deployed (%s in %s): %w", StoreDeployedVersion, StorePath, err)
	}
	if !ok {
		return nil, nil
	}
	deployed, err := kubeversion.Parse(string(b))
	if err != nil {
		return diag.List{diag.Fatalf("the Kubernetes version the cluster last deployed, %q (%s in %s), does not parse: %v",
			string(b), StoreDeployedVersion, StorePath, err).At("kubernetesVersion").
			WithHint("set it to the version the cluster runs (kube-aws writes it after every successful up), or remove the key: the deploy plugin still checks the running cluster")}, nil
	}
	err = kubeversion.CheckUpgrade(deployed, configured)
	if err == nil {
		return nil, nil
	}
	var skew *kubeversion.SkewError
	if !errors.As(err, &skew) {
		return nil, err
	}
	return diag.List{diag.Fatalf("this cluster last deployed Kubernetes %s (%s); %s -> %s %s",
		deployed, StorePath, deployed, configured, skew.Rule).At("kubernetesVersion").WithHint(skew.Hint)}, nil
}

// Record keeps the cluster's Kubernetes version as the one it last
// deployed, when the deploy result shows the control-plane stack deployed:
// it is called in the validate stage, which kube-aws runs only after a
// deploy stage that succeeded in every plugin, with that stage's result and
// the configuration it deployed (a state made from another cluster.yaml is
// refused as stale). A render, a diff or a failed deploy never gets here,
// so they never move the record. It reports whether it recorded.
func Record(s Store, d *stage.DeployResult, cluster string, v kubeversion.Version) (bool, error) {
	if d == nil {
		return false, nil
	}
	want := names.StackName(cluster, names.StackControlPlane)
	deployed := false
	for _, st := range d.Stacks {
		if st.Name == want {
			deployed = true
		}
	}
	if !deployed {
		// A deploy without the control plane's stack (the deploy plugin
		// disabled) deployed no Kubernetes version.
		return false, nil
	}
	old, ok, err := s.Get(StoreDeployedVersion)
	if err != nil {
		return false, fmt.Errorf("reading %s in %s: %w", StoreDeployedVersion, StorePath, err)
	}
	if ok && string(old) == v.String() {
		return false, nil
	}
	if err := s.Put(StoreDeployedVersion, []byte(v.String())); err != nil {
		return false, fmt.Errorf("recording the deployed Kubernetes version in %s: %w", StorePath, err)
	}
	return true, nil
}

// Output adds the Kubernetes version to the control-plane stack as the
// output names.OutputKubernetesVersion: a literal, which changes nothing
// but the output when the version changes (a stack tag would be copied to
// every resource of the stack and update them all).
func Output(set *construct.Set, v kubeversion.Version) {
	set.Stacks = append(set.Stacks, construct.Stack{
		Name: names.StackControlPlane,
		Outputs: map[string]json.RawMessage{
			names.OutputKubernetesVersion: cfn.MustRaw(cloudformation.Output{
				Value:       v.String(),
				Description: "Kubernetes version of the control plane (kubernetes plugin)",
			}),
		},
	})
}
