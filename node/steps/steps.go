// Package steps lists kube-aws-node's steps, one package each below this
// folder, named as the step it is (without the dash: wait-api is waitapi).
// core/nodeplan declares each step's name, the plan it reads, what it
// needs and why, and derives the order a machine runs them in; each package
// keeps the contract of package step.
package steps

import (
	"github.com/kube-aws/kube-aws/core/nodeplan"
	"github.com/kube-aws/kube-aws/node/step"
	"github.com/kube-aws/kube-aws/node/steps/addons"
	"github.com/kube-aws/kube-aws/node/steps/approvecsrs"
	"github.com/kube-aws/kube-aws/node/steps/artifacts"
	"github.com/kube-aws/kube-aws/node/steps/boot"
	"github.com/kube-aws/kube-aws/node/steps/certificates"
	"github.com/kube-aws/kube-aws/node/steps/dns"
	"github.com/kube-aws/kube-aws/node/steps/drainer"
	"github.com/kube-aws/kube-aws/node/steps/etcdsnapshot"
	"github.com/kube-aws/kube-aws/node/steps/podidentitywebhook"
	"github.com/kube-aws/kube-aws/node/steps/secrets"
	"github.com/kube-aws/kube-aws/node/steps/volumes"
	"github.com/kube-aws/kube-aws/node/steps/wait"
	"github.com/kube-aws/kube-aws/node/steps/waitapi"
)

// implementations makes each step, by its declared name.
var implementations = map[string]func() step.Step{
	nodeplan.StepBoot:               func() step.Step { return boot.New() },
	nodeplan.StepVolumes:            func() step.Step { return volumes.New() },
	nodeplan.StepSecrets:            func() step.Step { return secrets.New() },
	nodeplan.StepArtifacts:          func() step.Step { return artifacts.New() },
	nodeplan.StepCertificates:       func() step.Step { return certificates.New() },
	nodeplan.StepDNS:                func() step.Step { return dns.New() },
	nodeplan.StepAddons:             func() step.Step { return addons.New() },
	nodeplan.StepWait:               func() step.Step { return wait.New() },
	nodeplan.StepWaitAPI:            func() step.Step { return waitapi.New() },
	nodeplan.StepEtcdSnapshot:       func() step.Step { return etcdsnapshot.New() },
	nodeplan.StepApproveCSRs:        func() step.Step { return approvecsrs.New() },
	nodeplan.StepDrainer:            func() step.Step { return drainer.New() },
	nodeplan.StepPodIdentityWebhook: func() step.Step { return podidentitywebhook.New() },
}

// All returns a new instance of every step, as kube-aws-node runs it, in
// the order a machine runs them (nodeplan.Steps).
func All() []step.Step {
	var out []step.Step
	for _, d := range nodeplan.Steps() {
		if newStep, ok := implementations[d.Name]; ok {
			out = append(out, newStep())
		}
	}
	return out
}
