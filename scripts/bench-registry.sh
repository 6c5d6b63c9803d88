#!/usr/bin/env bash
# Plugins from a registry (docs/benchmarks.md, "Plugins from a registry"):
# a warm `kube-aws render` of the example with the six contrib plugins run
# from the plugin cache (registry stopped, no kube-aws-oci helper) against
# the same render with the six in plugins/, alternating in one run, and a
# cold `kube-aws plugins install` of the six from a registry on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${RUNS:-30}"
go test -count=1 -run '^$' -bench '^BenchmarkRegistryPlugins$' -benchtime "${RUNS}x" -timeout 30m ./cmd/kube-aws
