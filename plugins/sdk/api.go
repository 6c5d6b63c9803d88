// Package sdk is what a Go plugin author imports. Implement Plugin plus only
// the stage interfaces you need (Initialiser, Renderer, Deployer, Validator,
// and the operations Differ, Destroyer, AdminCredentialProvider) and call
// Serve from main; the SDK does the go-plugin handshake, the gRPC
// server, protocol negotiation, event streaming and exits when kube-aws dies.
//
//	type hello struct{}
//	func (hello) Info() stage.PluginInfo { return stage.PluginInfo{Name: "hello", Version: "0.1.0"} }
//	func (hello) Initialise(ctx context.Context, req *sdk.Request) (*stage.Result, error) {
//		req.Log("info", "hello from initialise")
//		return &stage.Result{}, nil
//	}
//	func main() { sdk.Serve(hello{}) }
package sdk

import (
	"context"

	"github.com/kube-aws/kube-aws/core/stage"
)

// Plugin is the one method every plugin implements. Info need not fill
// ProtocolVersions or Stages: Serve fills them from what the plugin implements.
type Plugin interface {
	Info() stage.PluginInfo
}

// Initialiser implements the initialise stage.
type Initialiser interface {
	Initialise(ctx context.Context, req *Request) (*stage.Result, error)
}

// Renderer implements the render stage.
type Renderer interface {
	Render(ctx context.Context, req *Request) (*stage.Result, error)
}

// Deployer implements the deploy stage.
type Deployer interface {
	Deploy(ctx context.Context, req *Request) (*stage.Result, error)
}

// Validator implements the validate stage.
type Validator interface {
	Validate(ctx context.Context, req *Request) (*stage.Result, error)
}

// Differ implements the diff operation: what deploying the render output
// would change, without changing anything (Result.Diff). kube-aws diff calls
// it after initialise and render.
type Differ interface {
	Diff(ctx context.Context, req *Request) (*stage.Result, error)
}

// Destroyer implements the destroy operation: remove what deploy made
// (Result.Destroy). kube-aws destroy calls it after initialise and render,
// one plugin after another in reverse plugin order.
type Destroyer interface {
	Destroy(ctx context.Context, req *Request) (*stage.Result, error)
}

// AdminCredentialProvider implements the admin-credential operation: the
// cluster's admin credential as the plugin keeps it (Result.AdminCredential:
// the CA certificate, a client certificate with cluster-admin rights and its
// key). kube-aws kubeconfig calls it with no stage before it (the input
// carries cluster.yaml and the plugins' values, nothing rendered), in the
// one enabled plugin that implements it (the pki built-in). It must make
// and change nothing; a credential not made yet is a fatal diagnostic that
// says how to make it. kube-aws keeps the credential in memory only.
type AdminCredentialProvider interface {
	AdminCredential(ctx context.Context, req *Request) (*stage.Result, error)
}

// RegistrationObserver is told whether kube-aws accepted the plugin.
type RegistrationObserver interface {
	Registered(reg stage.Registration)
}
