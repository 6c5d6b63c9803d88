#!/usr/bin/env bash
# Whole-command timings of `kube-aws up` against moto (docs/benchmarks.md,
# "Whole commands against moto"): up from nothing on cluster.yaml.example
# (moto reset before each run) and a no-op up (nothing changed, nothing
# uploaded). Prints the median, min and max wall time of each. Needs
# `make build` and `make venv`; `make bench` runs it.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

RUNS="${RUNS:-10}"
KUBE_AWS="${KUBE_AWS:-$root/bin/kube-aws}"
VENV="${KUBE_AWS_VENV:-$root/.venv}"
PY="$VENV/bin/python"
for f in "$KUBE_AWS" "$VENV/bin/moto_server" "$PY"; do
	if [ ! -x "$f" ]; then
		echo "bench-up: $f not found: run 'make build' and 'make venv' first" >&2
		exit 1
	fi
done

work="$(mktemp -d)"
# shellcheck source=lib/moto.sh
. "$root/scripts/lib/moto.sh"
cleanup() {
	moto_stop
	rm -rf "$work"
}
trap cleanup EXIT
moto_start

export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_EC2_METADATA_DISABLED=true CI=1
export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
region="$(awk '/^region:/ {print $2; exit}' cluster.yaml.example)"
bucket="$(awk '/^s3URI:/ {sub("s3://", "", $2); split($2, a, "/"); print a[1]; exit}' cluster.yaml.example)"
mkdir -p "$work/cluster"
moto_cluster_yaml cluster.yaml.example "$work/cluster/cluster.yaml"

fresh() {
	moto_reset
	moto_bucket "$bucket" "$region"
	moto_kms_key "$work/cluster/cluster.yaml" "$region"
	rm -rf "$work/cluster/.kube-aws" "$work/cluster/rendered"
}
up() { (cd "$work/cluster" && "$KUBE_AWS" up --endpoint-url "$endpoint" >"$work/out.txt" 2>&1); }
ms() { echo $((($2 - $1) / 1000000)); }
stats() { sort -n | awk '{a[NR]=$1} END {m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2; printf "median %d ms, min %d ms, max %d ms over %d runs\n", m, a[1], a[NR], NR}'; }

echo "kube-aws: $("$KUBE_AWS" version)"
echo "machine:  $(nproc) CPU(s), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -sr), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "command:  kube-aws up --endpoint-url <moto>   (cluster.yaml = cluster.yaml.example, apiLoadBalancer: classic)"

first=()
for _ in $(seq "$RUNS"); do
	fresh
	s=$(date +%s%N); up || { cat "$work/out.txt" >&2; exit 1; }; e=$(date +%s%N)
	first+=("$(ms "$s" "$e")")
done
echo "up from nothing: $(printf '%s\n' "${first[@]}" | stats)"
grep -E '^\[deploy\] deployed' "$work/out.txt" | sed 's/^/  /'

noop=()
for _ in $(seq "$RUNS"); do
	s=$(date +%s%N); up || { cat "$work/out.txt" >&2; exit 1; }; e=$(date +%s%N)
	noop+=("$(ms "$s" "$e")")
done
echo "no-op up:        $(printf '%s\n' "${noop[@]}" | stats)"
grep -E '^\[deploy\] deployed' "$work/out.txt" | sed 's/^/  /'
