#!/usr/bin/env bash
# make demo: render cluster.yaml.example and bring it up on a local AWS
# emulator (moto in server mode) with `kube-aws up`, print the stack outputs,
# validate it and show that a diff finds nothing left to do.
# Needs `make build` and `make venv` (make demo runs both). Everything
# happens in a temporary folder; moto is stopped at the end.
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
# moto treats every AWS::ElasticLoadBalancingV2::LoadBalancer as an
# application load balancer and rejects the control plane's TCP listener, so
# the demo's copy uses a classic load balancer for the API. Real AWS uses the
# network load balancer of cluster.yaml.example.
"$PY" - "$work/cluster.yaml" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
anchor = "\n  cloudformation:\n    values:\n"
if anchor not in text:
    sys.exit("demo: cluster.yaml.example has no plugins.cloudformation.values to add apiLoadBalancer to")
text = text.replace(anchor, anchor +
    "      # demo only: moto takes every ELBv2 load balancer for an application one and\n"
    "      # rejects the API's TCP listener; real AWS uses the network load balancer.\n"
    "      apiLoadBalancer: classic\n", 1)
open(path, "w").write(text)
PY

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
