// Command kube-aws-oci is the helper kube-aws starts to install plugins
// from OCI registries and to push them: the only part of kube-aws that
// links the registry client (oras-go) and the signature checks (sigstore),
// kept out of the kube-aws executable so that its start-up stays fast
// (docs/design.md). It reads one request on stdin and writes JSON lines on
// stdout; see plugins/oci/helper.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/kube-aws/kube-aws/plugins/oci"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := oci.Serve(ctx, os.Stdin, os.Stdout)
	stop()
	os.Exit(code)
}
