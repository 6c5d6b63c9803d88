#!/usr/bin/env bash
# make demo: render cluster.yaml.example and deploy it to a local AWS
# emulator (moto in server mode), one stage at a time the way a CI pipeline
# would, then validate it. Needs `make build` and `make venv` (make demo runs
# both). Everything happens in a temporary folder; moto is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

KUBE_AWS="$root/bin/kube-aws"
VENV="${KUBE_AWS_VENV:-$root/.venv}"
MOTO="$VENV/bin/moto_server"
PY="$VENV/bin/python"
for f in "$KUBE_AWS" "$MOTO" "$PY"; do
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
moto_pid=""
cleanup() {
	if [ -n "$moto_pid" ]; then
		kill -TERM -- "-$moto_pid" 2>/dev/null || kill -TERM "$moto_pid" 2>/dev/null || true
		wait "$moto_pid" 2>/dev/null || true
	fi
	rm -rf "$work"
}
trap cleanup EXIT

port="$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
endpoint="http://127.0.0.1:$port"
# Its own process group, so cleanup stops every process moto forks.
setsid "$MOTO" -H 127.0.0.1 -p "$port" >"$work/moto.log" 2>&1 &
moto_pid=$!
for _ in $(seq 100); do
	if "$PY" -c "import urllib.request,sys; urllib.request.urlopen('$endpoint/moto-api/', timeout=1)" 2>/dev/null; then
		break
	fi
	sleep 0.1
done

# Fixed test credentials: moto accepts any; nothing leaves this machine.
export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_SESSION_TOKEN=testing
export AWS_REGION="$(awk '/^region:/ {print $2; exit}' cluster.yaml.example)"
export AWS_DEFAULT_REGION="$AWS_REGION" AWS_EC2_METADATA_DISABLED=true
export KUBE_AWS_ENDPOINT_URL="$endpoint" CI=1

cp cluster.yaml.example "$work/cluster.yaml"
cp -r "$(dirname "$root/cluster.yaml.example")"/*-values.yaml "$work/" 2>/dev/null || true
bucket="$(awk '/^s3URI:/ {sub("s3://", "", $2); split($2, a, "/"); print a[1]; exit}' cluster.yaml.example)"
# What an AWS account would already have: the assets bucket. moto cannot
# take the example's Route 53 hosted zone id (it picks ids of its own, which
# cluster.yaml validation rightly rejects), so the demo's copy goes without
# the DNS record: clients use the load balancer's name.
"$PY" - "$endpoint" "$bucket" "$AWS_REGION" <<'PY'
import sys, boto3
endpoint, bucket, region = sys.argv[1:]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name=region)
kw = {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}
s3.create_bucket(Bucket=bucket, **kw)
PY
sed -i '/^  hostedZoneId: /d' "$work/cluster.yaml"

cd "$work"
step() { echo; echo "\$ kube-aws $*"; "$KUBE_AWS" "$@"; }
echo "demo folder: $work (removed at the end); AWS emulator: moto at $endpoint"
step version
step plugins list
step stage initialise
step stage render
echo; echo "rendered/:"; (cd rendered && find . -type f | sort | sed 's|^\./|  |')
step stage deploy
step stage validate
echo
echo "demo: rendered, deployed to moto and validated."
