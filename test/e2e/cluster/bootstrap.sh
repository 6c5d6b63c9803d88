#!/bin/sh
# The harness's own proof machine: a bootstrap in the style of kube-aws's
# launch templates (credentials from IMDSv2, an asset from S3 by its sha256,
# AWS calls signed by curl through AWS_ENDPOINT_URL). CloudFormation's
# Fn::Sub fills in the capitalised names in braces; shell variables are
# written without braces so that Fn::Sub leaves them alone.
set -eu
t() { date +%s.%N; }
T_START=$(t)
say() { echo "harness-bootstrap: $*"; }
fail() { say "FAILED: $*"; exit 1; }

IMDS=http://169.254.169.254
TOKEN=$(curl -sf -X PUT -H "X-aws-ec2-metadata-token-ttl-seconds: 300" $IMDS/latest/api/token) || fail "no IMDSv2 token"
md() { curl -sf -H "X-aws-ec2-metadata-token: $TOKEN" "$IMDS/latest/meta-data/$1"; }
ID=$(md instance-id)
REGION=$(md placement/region)
ZONE=$(md placement/availability-zone)
IP=$(md local-ipv4)
T_TOKEN=$(t)
ROLE=$(md iam/security-credentials/) || fail "no role in IMDS"
CREDS=$(md iam/security-credentials/$ROLE) || fail "no credentials for $ROLE"
j() { python3 -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
AK=$(echo "$CREDS" | j AccessKeyId)
SK=$(echo "$CREDS" | j SecretAccessKey)
TK=$(echo "$CREDS" | j Token)
T_CREDS=$(t)
say "instance $ID ($IP, $ZONE) role $ROLE"
# A kubelet and runc make cgroups in every hierarchy (the image's setup unit
# makes them writable).
for d in /sys/fs/cgroup/cpuset /sys/fs/cgroup/memory /sys/fs/cgroup/pids; do
	mkdir "$d/harness-probe" 2>/dev/null && rmdir "$d/harness-probe" || fail "cannot make a cgroup in $d"
done
# The standard SDK endpoint settings, then the real S3 endpoint.
EP=$(printenv AWS_ENDPOINT_URL_S3 || printenv AWS_ENDPOINT_URL || echo "https://s3.$REGION.amazonaws.com")

aws() { # SERVICE curl-args...: a request signed with the role's credentials
	svc=$1; shift
	curl -sf --aws-sigv4 "aws:amz:$REGION:$svc" --user "$AK:$SK" -H "x-amz-security-token: $TK" "$@"
}

aws s3 -o /tmp/asset "$EP/${Bucket}/assets/${AssetSHA}" || fail "downloading the asset"
echo "${AssetSHA}  /tmp/asset" | sha256sum -c --status || fail "asset sha256 mismatch"
T_ASSET=$(t)

RESOLVED=$(getent hosts ${RecordName} | awk '{print $1; exit}')
[ -n "$RESOLVED" ] || fail "${RecordName} does not resolve"
T_DNS=$(t)

aws ec2 -X POST "$EP/" -d "Action=AttachVolume&Version=2016-11-15&VolumeId=${Volume}&InstanceId=$ID&Device=/dev/xvdf" >/dev/null || fail "AttachVolume"
T_ATTACH=$(t)
n=0
while [ ! -b /dev/xvdf ]; do
	n=$((n+1)); [ $n -lt 600 ] || fail "/dev/xvdf did not appear"
	sleep 0.1
done
T_DEVICE=$(t)
if ! dumpe2fs -h /dev/xvdf >/dev/null 2>&1; then
	mkfs.ext4 -q /dev/xvdf
fi
mkdir -p /data
mount /dev/xvdf /data
FOUND=none
[ -f /data/owner ] && FOUND=$(cat /data/owner)
[ -f /data/owner ] || echo "written-by $ID" > /data/owner
sync
T_MOUNT=$(t)

systemd-run --quiet --unit=harness-web socat TCP-LISTEN:8080,fork,reuseaddr SYSTEM:"echo hello-from-$ID"
n=0
until ss -Hltn 'sport = :8080' | grep -q .; do
	n=$((n+1)); [ $n -lt 50 ] || fail "nothing listens on 8080"
	sleep 0.1
done
T_SERVE=$(t)

cat > /tmp/status.json <<JSON
{"instance": "$ID", "address": "$IP", "zone": "$ZONE", "role": "$ROLE", "resolved": "$RESOLVED", "found": "$FOUND",
 "times": {"start": $T_START, "token": $T_TOKEN, "credentials": $T_CREDS, "asset": $T_ASSET, "dns": $T_DNS,
           "attach": $T_ATTACH, "device": $T_DEVICE, "mounted": $T_MOUNT, "serving": $T_SERVE}}
JSON
aws s3 -X PUT -T /tmp/status.json "$EP/${Bucket}/status/harness/$ID.json" >/dev/null || fail "writing the status"
say "done"
