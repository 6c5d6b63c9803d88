// Package builtin lists the built-in kube-aws plugins, one folder each
// (builtin/<name>), which cmd/kube-aws-builtins serves from one process.
// Adding a built-in is adding its folder and its line here; `make build`
// links a name in kube-aws-plugins/builtin for every entry.
package builtin

import (
	"github.com/kube-aws/kube-aws/builtin/apiserver"
	"github.com/kube-aws/kube-aws/builtin/cloudformation"
	"github.com/kube-aws/kube-aws/builtin/deploy"
	"github.com/kube-aws/kube-aws/builtin/etcd"
	"github.com/kube-aws/kube-aws/builtin/flannel"
	"github.com/kube-aws/kube-aws/builtin/helm"
	"github.com/kube-aws/kube-aws/builtin/iam"
	"github.com/kube-aws/kube-aws/builtin/kubernetes"
	"github.com/kube-aws/kube-aws/builtin/pki"
	"github.com/kube-aws/kube-aws/builtin/userdata"
	"github.com/kube-aws/kube-aws/plugins/sdk"
)

// Plugins returns every built-in plugin.
func Plugins() []sdk.Plugin {
	return []sdk.Plugin{
		apiserver.Plugin(),
		cloudformation.Plugin(),
		deploy.Plugin(),
		etcd.Plugin(),
		flannel.Plugin(),
		helm.Plugin(),
		iam.Plugin(),
		kubernetes.Plugin(),
		pki.Plugin(),
		userdata.Plugin(),
	}
}

// Serve serves every built-in until kube-aws ends the process.
func Serve() {
	sdk.ServeAll(Plugins()...)
}
