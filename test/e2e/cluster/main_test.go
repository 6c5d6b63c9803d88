//go:build e2ecluster

// Package cluster boots machines that `kube-aws up` (or any CloudFormation
// stack) launches in moto as local systemd-nspawn machines
// (test/machines) and proves they work. It runs as root, behind the
// e2ecluster build tag, through `make e2e-cluster`; `go test ./...` does
// not compile it.
package cluster

import (
	"fmt"
	"os"
	"testing"

	"github.com/kube-aws/kube-aws/test/machines"
)

func TestMain(m *testing.M) {
	// Refuse, never skip: a run that cannot boot machines proves nothing.
	if err := machines.Preflight(); err != nil {
		fmt.Fprintln(os.Stderr, "e2e-cluster cannot run here:", err)
		os.Exit(2)
	}
	if os.Getenv(childEnv) != "" {
		os.Exit(teardownChild())
	}
	machines.HandleSignals()
	os.Exit(m.Run())
}
