// Command kube-aws-builtins serves every built-in kube-aws plugin from one
// process. `make build` puts it in kube-aws-plugins/libexec and links each
// built-in's name in kube-aws-plugins/builtin to it; kube-aws starts it once
// for all the built-ins of a run and calls each plugin by its name
// (sdk.ServeAll), where one process per plugin cost about 10 ms of CPU each
// (docs/design.md, "One process for the built-ins").
//
// Each built-in stays a plugin of its own: its own folder and package, Info,
// values schema, stages, store and secrets, and kube-aws merges what each
// contributes as it merges any plugin's.
package main

import (
	"github.com/kube-aws/kube-aws/builtin"
	// The runtime's settings for a process that lives a fraction of a
	// second, from the start of package initialisation.
	_ "github.com/kube-aws/kube-aws/plugins/sdk/shortlived"
)

func main() { builtin.Serve() }
