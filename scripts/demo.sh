#!/usr/bin/env bash
# make demo: render cluster.yaml.example and bring it up on a local AWS
# emulator (moto in server mode) with `kube-aws up`, print the stack outputs,
# validate it and show that a diff finds nothing left to do.
# Needs `make build` and `make venv` (make demo runs both). Everything
# happens in a temporary folder; moto is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

# KUBE_AWS picks another kube-aws (with its kube-aws-plugins beside it):
# the test that keeps README's transcript true runs the demo with its own build.
KUBE_AWS="${KUBE_AWS:-$root/bin/kube-aws}"
VENV="${KUBE_AWS_VENV:-$root/.venv}"
PY="$VENV/bin/python"
for f in "$KUBE_AWS" "$VENV/bin/moto_server" "$PY"; do
	if [ ! -x "$f" ]; then
		echo "demo: $f not found: run 'make demo' (it builds kube-aws and installs moto into .venv)" >&2
		exit 1
	fi
done
if [ ! -f cluster.yaml.example ]; then
	echo "demo: cluster.yaml.example not found" >&2
	exit 1
fi

work="$(mktemp -d)"
# shellcheck source=lib/moto.sh
. "$root/scripts/lib/moto.sh"
cleanup() {
	moto_stop
	rm -rf "$work"
}
trap cleanup EXIT
moto_start

# Fixed test credentials: moto accepts any; nothing leaves this machine.
export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_SESSION_TOKEN=testing
export AWS_REGION="$(awk '/^region:/ {print $2; exit}' cluster.yaml.example)"
export AWS_DEFAULT_REGION="$AWS_REGION" AWS_EC2_METADATA_DISABLED=true
export CI=1

moto_cluster_yaml cluster.yaml.example "$work/cluster.yaml"
cp -r "$(dirname "$root/cluster.yaml.example")"/*-values.yaml "$work/" 2>/dev/null || true
bucket="$(awk '/^s3URI:/ {sub("s3://", "", $2); split($2, a, "/"); print a[1]; exit}' cluster.yaml.example)"
moto_bucket "$bucket" "$AWS_REGION"
moto_kms_key "$work/cluster.yaml" "$AWS_REGION"

cd "$work"
step() { echo; echo "\$ kube-aws $*"; "$KUBE_AWS" "$@"; }
echo "demo folder: $work (removed at the end); AWS emulator: moto at $endpoint"
step version
step plugins list
step render
echo; echo "rendered/:"; (cd rendered && find . -type f | sort | sed 's|^\./|  |')
step up --endpoint-url "$endpoint" --outputs-file deploy.json
echo; echo "deploy.json (what CI reads), first lines:"; head -n 12 deploy.json | sed 's/^/  /'
step validate --endpoint-url "$endpoint"
step diff --exit-code --endpoint-url "$endpoint"
echo
echo "demo: rendered, brought up on moto, validated and diffed (nothing left to change)."
echo "(kube-aws destroy --yes removes the stacks; the demo just stops moto, which forgets them.)"
