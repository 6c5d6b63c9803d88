# shellcheck shell=bash
# Sourced by scripts/demo.sh and scripts/bench-up.sh: moto in server mode on a
# free 127.0.0.1 port, and the copy of cluster.yaml.example that moto can
# take. The caller sets root (the repository), PY (the .venv python, with
# moto) and work (a temporary folder), and calls moto_stop from its EXIT trap.
# moto runs through the project's launcher, test/awstest/motoaws.py, as every
# test's moto does: moto with the patches that make it behave as AWS where
# kube-aws's rolls depend on it (docs/e2e-cluster.md).

moto_pid=""
endpoint=""

# moto_start starts moto in its own process group (so moto_stop ends every
# process it forks) and waits until it answers; sets endpoint.
moto_start() {
	local port
	port="$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
	endpoint="http://127.0.0.1:$port"
	setsid "$PY" "$root/test/awstest/motoaws.py" -H 127.0.0.1 -p "$port" >"$work/moto.log" 2>&1 &
	moto_pid=$!
	for _ in $(seq 100); do
		if "$PY" -c "import urllib.request; urllib.request.urlopen('$endpoint/moto-api/', timeout=1)" 2>/dev/null; then
			return 0
		fi
		sleep 0.1
	done
	echo "moto did not answer on $endpoint within 10 s; its log:" >&2
	tail -n 20 "$work/moto.log" >&2
	return 1
}

moto_stop() {
	if [ -n "$moto_pid" ]; then
		kill -TERM -- "-$moto_pid" 2>/dev/null || kill -TERM "$moto_pid" 2>/dev/null || true
		wait "$moto_pid" 2>/dev/null || true
		moto_pid=""
	fi
}

# moto_bucket BUCKET REGION creates what an AWS account would already have:
# the assets bucket.
moto_bucket() {
	"$PY" - "$endpoint" "$1" "$2" <<'PY'
import sys, boto3
endpoint, bucket, region = sys.argv[1:]
s3 = boto3.client("s3", endpoint_url=endpoint, region_name=region)
kw = {} if region == "us-east-1" else {"CreateBucketConfiguration": {"LocationConstraint": region}}
s3.create_bucket(Bucket=bucket, **kw)
PY
}

# moto_kms_key FILE REGION creates the cluster's KMS key, which an AWS account
# would already have, and points FILE's kmsKeyArn at it: deploy encrypts every
# secret with it (the kubernetes built-in generates two).
moto_kms_key() {
	"$PY" - "$endpoint" "$1" "$2" <<'PY'
import re, sys, boto3
endpoint, path, region = sys.argv[1:]
arn = boto3.client("kms", endpoint_url=endpoint, region_name=region).create_key(Description="kube-aws demo")["KeyMetadata"]["Arn"]
text, n = re.subn(r"(?m)^kmsKeyArn: .*$", "kmsKeyArn: " + arn, open(path).read())
if n != 1:
    sys.exit("%s has no kmsKeyArn line to point at the emulator's key" % path)
open(path, "w").write(text)
PY
}

# moto_reset forgets everything moto holds (a deploy from nothing again).
moto_reset() {
	"$PY" -c "import urllib.request; urllib.request.urlopen(urllib.request.Request('$endpoint/moto-api/reset', method='POST'))"
}

# moto_cluster_yaml SRC DST writes SRC with the two changes moto needs:
# - no Route 53 hostedZoneId: moto picks zone ids of its own, which cluster.yaml
#   validation rightly rejects; clients use the load balancer's name;
# - plugins.cloudformation.values.apiLoadBalancer: classic: moto takes every
#   ELBv2 load balancer for an application one and rejects the API's TCP
#   listener. Real AWS uses the network load balancer of the example.
moto_cluster_yaml() {
	"$PY" - "$1" "$2" <<'PY'
import re, sys
src, dst = sys.argv[1:]
text = re.sub(r"(?m)^  hostedZoneId: .*\n", "", open(src).read())
anchor = "\n  cloudformation:\n    values:\n"
if anchor not in text:
    sys.exit("%s has no plugins.cloudformation.values to add apiLoadBalancer to" % src)
text = text.replace(anchor, anchor +
    "      # moto only: moto takes every ELBv2 load balancer for an application one and\n"
    "      # rejects the API's TCP listener; real AWS uses the network load balancer.\n"
    "      apiLoadBalancer: classic\n", 1)
open(dst, "w").write(text)
PY
}
