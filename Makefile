# kube-aws build, test, demo and benchmarks. Everything a fresh machine needs
# is installed by these targets: Go modules by go itself, Python packages
# (moto, cfn-lint, grpcio) into .venv.

GO          ?= go
PYTHON      ?= python3
VENV        := .venv
VENV_PY     := $(VENV)/bin/python
BIN         := bin
PLUGIN_BIN  := $(BIN)/kube-aws-plugins
# The semantic version is core/version.Release (docs/design.md); the build adds
# the commit as build metadata: kube-aws 0.1.0+cfc6527, or +cfc6527.dirty.
COMMIT      ?= $(shell c=$$(git rev-parse --short=7 HEAD 2>/dev/null) && { git diff --quiet HEAD -- 2>/dev/null && echo $$c || echo $$c.dirty; })
LDFLAGS     := -s -w -X github.com/kube-aws/kube-aws/core/version.Commit=$(COMMIT)

# Pinned tool versions: `make proto` must produce the committed code byte for byte.
PROTOC_GEN_GO_VERSION      := v1.36.12
PROTOC_GEN_GO_GRPC_VERSION := v1.6.2
GRPCIO_TOOLS_VERSION       := 1.76.0

# Each built-in is a package, builtin/<name>/plugin.go; one executable,
# cmd/kube-aws-builtins, serves them all from one process, and each name in
# the built-in folder links to it (docs/design.md). builtin/internal holds
# code the built-ins share; it is not a plugin.
BUILTIN_PLUGINS := $(patsubst builtin/%/plugin.go,%,$(wildcard builtin/*/plugin.go))
CONTRIB_PLUGIN_PKGS := $(patsubst %/main.go,%,$(wildcard contrib/plugins/*/main.go))

# Each fuzz target runs a fixed number of inputs (about 10 s each here), not a
# duration: with a duration, Go 1.26's fuzzing coordinator can fail a run that
# found nothing with "context deadline exceeded" when the time runs out while a
# worker is mid-input on a busy machine (go.dev/issue/75804, fixed in Go 1.27).
# FUZZTIME (a duration or a count, e.g. 30s or 1000000x) overrides it for all.
FUZZTIME ?=

.PHONY: all build test test-tools cis-tools unit e2e fuzz lint demo bench bench-render bench-boot proto venv clean help e2e-cluster

all: build

help:
	@echo "make demo   build, render cluster.yaml.example and deploy it to a local AWS emulator (moto)"
	@echo "make test   vet, unit, subprocess, race, fuzz and end-to-end tests"
	@echo "make e2e-cluster  boot what moto's Auto Scaling groups launch as local machines (root; RUN=regexp picks tests)"
	@echo "make build  build bin/kube-aws, every built-in and contrib plugin and kube-aws-node (linux/amd64, arm64) under bin/kube-aws-plugins/"
	@echo "make bench  the render (and, as root, the machines' boot) against BASELINE=$(BASELINE) paired in one run, Go benchmarks and whole-command timings (docs/benchmarks.md)"
	@echo "make proto  regenerate plugins/proto/v1 from plugin.proto with pinned tools"
	@echo "make lint   gofmt, go vet, no tracked binary or file over 1 MiB, third_party/ as patched"

# Static binaries (CGO_ENABLED=0): no dynamic linker at start-up, about 2 ms
# less CPU per plugin launch. One go build per folder links its binaries in
# parallel.
GOBUILD := CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)'

# kube-aws-node runs on the machines, one static binary per architecture
# kube-aws builds machines for; kube-aws uploads it as an asset.
NODE_ARCHS := amd64 arm64

build:
	@mkdir -p $(PLUGIN_BIN)/builtin $(PLUGIN_BIN)/contrib $(PLUGIN_BIN)/libexec
	$(GOBUILD) -o $(BIN)/ ./cmd/kube-aws
	$(GOBUILD) -o $(PLUGIN_BIN)/libexec/ ./cmd/kube-aws-oci
	$(GOBUILD) -o $(PLUGIN_BIN)/libexec/ ./cmd/kube-aws-builtins
	rm -f $(PLUGIN_BIN)/builtin/*
	$(foreach n,$(BUILTIN_PLUGINS),ln -s ../libexec/kube-aws-builtins $(PLUGIN_BIN)/builtin/$(n) &&) true
	$(GOBUILD) -o $(PLUGIN_BIN)/contrib/ $(addprefix ./,$(CONTRIB_PLUGIN_PKGS))
	$(foreach a,$(NODE_ARCHS),GOOS=linux GOARCH=$(a) $(GOBUILD) -o $(PLUGIN_BIN)/libexec/kube-aws-node-linux-$(a) ./cmd/kube-aws-node &&) true

venv: $(VENV)/.installed
$(VENV)/.installed: requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r requirements-dev.txt
	touch $@

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	./scripts/check-tracked.sh
	./scripts/check-third-party.sh

# The OCI registry and cosign CLI that plugin distribution is tested against,
# built from the Go module proxy at the versions test/registrytest pins
# (once per machine: the first cosign build takes minutes), and cis-tools.
test-tools:
	$(GO) test -count=1 -timeout 30m -run '^TestTools$$' ./test/registrytest ./test/cisbench

# kube-bench (the CIS Kubernetes Benchmark), and the kubectl and jq its policy
# checks run, built from the Go module proxy at the versions the scratch
# modules of test/cisbench/tools pin, for the booted cluster's machines (once
# per machine, kept with the test tools).
cis-tools:
	$(GO) test -count=1 -timeout 30m -run '^TestTools$$' ./test/cisbench

# The whole suite: what CI runs.
test: venv build lint test-tools
	KUBE_AWS_VENV=$(abspath $(VENV)) $(GO) test -count=1 -timeout 20m ./...
	KUBE_AWS_VENV=$(abspath $(VENV)) $(GO) test -count=1 -race -timeout 20m ./stages/... ./plugins/... ./core/merge/... ./core/config/values/... ./builtin/deploy/... ./builtin/helm/... ./node/... ./test/... ./release/...
	$(MAKE) fuzz

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzLoad$$' -fuzztime $(or $(FUZZTIME),25000x) ./core/config
	$(GO) test -run '^$$' -fuzz '^FuzzMerge$$' -fuzztime $(or $(FUZZTIME),200000x) ./core/merge
	$(GO) test -run '^$$' -fuzz '^FuzzFocusOperations$$' -fuzztime $(or $(FUZZTIME),400000x) ./core/merge
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(or $(FUZZTIME),100000x) ./core/nodeplan
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(or $(FUZZTIME),150000x) ./node/cloudinit
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(or $(FUZZTIME),800000x) ./node/envfile
	$(GO) test -run '^$$' -fuzz '^FuzzFile$$' -fuzztime $(or $(FUZZTIME),70000x) ./node/substitute

# Local machines (test/machines) need root and these Debian packages:
# systemd-nspawn (systemd-container), mmdebstrap for the machines' root
# filesystem, nsenter and losetup (util-linux), ip (iproute2). The test
# binary is exec'ed by the recipe's shell, so make's SIGTERM (and Ctrl-C)
# reach it directly and it tears every machine down before it exits.
E2E_CLUSTER_PKGS    := systemd-container mmdebstrap util-linux iproute2 e2fsprogs
E2E_CLUSTER_TIMEOUT ?= 80m
RUN                 ?= .

# The cluster cases deploy cluster.yaml.example with the real binaries and
# its machines take every binary and image from the artifact folder.
e2e-cluster: venv build artifacts cis-tools
	@if [ "$$(id -u)" != 0 ]; then echo "make e2e-cluster: local machines need root (mounts, network namespaces, cgroups, loop devices): run it as root" >&2; exit 2; fi
	@missing=$$(for p in $(E2E_CLUSTER_PKGS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed$$' || echo $$p; done); \
	if [ -n "$$missing" ]; then echo "installing $$missing"; apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; fi
	$(GO) test -c -tags e2ecluster -o $(BIN)/e2e-cluster.test ./test/e2e/cluster
	exec env KUBE_AWS_VENV=$(abspath $(VENV)) $(ARTIFACTS_ENV) $(BIN)/e2e-cluster.test -test.v -test.count=1 -test.timeout $(E2E_CLUSTER_TIMEOUT) -test.run '$(RUN)'

bench-render:
	BASELINE=$(BASELINE) ./scripts/bench-render-ratio.sh $(BENCH_RUNS)

# The example's machines booted by this tree and by BASELINE, alternately in
# one run (BOOT_PAIRS boots of each), as `make e2e-cluster` boots them: each
# role's slowest goal and CPU-seconds, medians and ratios. Root only, 2 to 4
# minutes a boot. Each tree boots its own builder's artifacts: this tree's
# ARTIFACTS_DIR, the baseline's BASELINE_ARTIFACTS_DIR (default
# ~/.cache/kube-aws/bench-boot/<commit>/artifacts, built on first use).
bench-boot: venv
	BASELINE=$(BASELINE) ./scripts/bench-boot-ratio.sh $(BOOT_PAIRS)

demo: venv build
	KUBE_AWS_VENV=$(abspath $(VENV)) ./scripts/demo.sh

# The render is measured against BASELINE, paired in one run (wall, CPU and
# max RSS as ratios); BASELINE is built in a temporary git worktree.
# `make bench-render` runs that comparison alone.
BASELINE   ?= aea22a0
BENCH_RUNS ?= 15
BOOT_PAIRS ?= 2

bench: venv build test-tools bench-render
	$(GO) test -run '^$$' -bench . -benchmem -count 1 ./core/... ./plugins/... ./stages/... ./release/artifacts
	KUBE_AWS_VENV=$(abspath $(VENV)) ./scripts/bench-up.sh
	./scripts/bench-node.sh
	./scripts/bench-registry.sh
	@if [ "$$(id -u)" = 0 ]; then $(MAKE) --no-print-directory bench-boot; \
	else echo "make bench: the boot comparison (make bench-boot) boots machines and needs root: not run"; fi

proto: venv
	GOBIN=$(abspath $(BIN))/tools $(GO) install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
	GOBIN=$(abspath $(BIN))/tools $(GO) install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VERSION)
	$(VENV_PY) -m grpc_tools.protoc -I plugins/proto/v1 \
		--plugin=protoc-gen-go=$(BIN)/tools/protoc-gen-go \
		--plugin=protoc-gen-go-grpc=$(BIN)/tools/protoc-gen-go-grpc \
		--go_out=plugins/proto/v1 --go_opt=paths=source_relative \
		--go-grpc_out=plugins/proto/v1 --go-grpc_opt=paths=source_relative \
		plugins/proto/v1/plugin.proto
	$(VENV_PY) -m grpc_tools.protoc -I plugins/proto/v1 \
		--python_out=examples/python-plugin/kube_aws_plugin \
		--grpc_python_out=examples/python-plugin/kube_aws_plugin \
		plugins/proto/v1/plugin.proto

clean:
	rm -rf $(BIN) rendered .kube-aws

# Air-gapped artifact folder (docs/artifacts.md): every binary and image a
# machine runs beyond its image, built from the Go module proxy and Debian
# packages, for every supported Kubernetes version (ARTIFACTS_KUBERNETES=v1.34.4
# picks some). Not part of `make test`: see docs/artifacts.md for the times.
# ARTIFACTS_DIR defaults to $KUBE_AWS_ARTIFACTS, else ~/.cache/kube-aws/artifacts.
# The checks chroot and make PID namespaces: run them as root.
ARTIFACTS_ARCH ?= amd64
ARTIFACTS_ENV  := $(if $(ARTIFACTS_DIR),KUBE_AWS_ARTIFACTS=$(abspath $(ARTIFACTS_DIR))) KUBE_AWS_ARTIFACTS_ARCH=$(ARTIFACTS_ARCH) \
	$(if $(ARTIFACTS_KUBERNETES),KUBE_AWS_ARTIFACTS_KUBERNETES=$(ARTIFACTS_KUBERNETES))

.PHONY: artifacts artifacts-test artifacts-deps
artifacts-deps:
	@command -v mmdebstrap >/dev/null && command -v gcc >/dev/null || \
		{ apt-get update -qq && apt-get install -y -qq --no-install-recommends mmdebstrap gcc libc6-dev; }

artifacts: artifacts-deps
	$(ARTIFACTS_ENV) $(GO) run ./cmd/kube-aws-artifacts -arch $(ARTIFACTS_ARCH)

artifacts-test: artifacts
	$(ARTIFACTS_ENV) $(GO) test -count=1 -tags artifacts ./release/artifacts
