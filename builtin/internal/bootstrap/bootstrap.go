// Package bootstrap builds the user data of every machine stack's launch
// template: a small POSIX shell script, run by cloud-init as its user
// script, that gets the instance role's credentials from the instance
// metadata service (IMDSv2), downloads kube-aws-node from the cluster's
// bucket with curl --aws-sigv4 (path-style; endpoint AWS_ENDPOINT_URL_S3,
// else AWS_ENDPOINT_URL, else https://s3.<region>.amazonaws.com), checks its
// sha256 against the content-addressed key (<prefix>/assets/<sha256>), and
// execs `kube-aws-node boot` with the KUBE_AWS_* settings (docs/node-agent.md)
// in its environment. Everything else a machine does is kube-aws-node's.
//
// The cloudformation plugin's machine stacks and the etcd plugin's stack use
// it, so every machine boots the same way. A stack declares Parameters (deploy
// fills them) and sets the launch template's UserData to UserData(...).
package bootstrap

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kube-aws/kube-aws/builtin/internal/cfn"
	"github.com/kube-aws/kube-aws/core/names"
	"github.com/kube-aws/kube-aws/core/nodeplan"
)

// Parameter is a stack parameter the bootstrap reads.
type Parameter struct {
	Name        string
	Description string
}

// Parameters are what every stack using the bootstrap declares, all of type
// String and filled by deploy: the bucket and prefix of cluster.yaml's
// s3URI, the key of the role's userdata and the keys of kube-aws-node.
var Parameters = []Parameter{
	{names.ParamAssetsBucket, "S3 bucket holding the cluster's assets (filled by deploy)"},
	{names.ParamAssetsPrefix, "Key prefix of the cluster's objects in the bucket, may be empty (filled by deploy)"},
	{names.ParamUserDataKey, "S3 key of this role's userdata, <prefix>/roles/<role>/userdata/<sha256> (filled by deploy)"},
	{names.ParamNodeAgentKeyAMD64, "S3 key of kube-aws-node for amd64, <prefix>/assets/<sha256> (filled by deploy)"},
	{names.ParamNodeAgentKeyARM64, "S3 key of kube-aws-node for arm64, <prefix>/assets/<sha256> (filled by deploy)"},
}

// Fact is a fact the machines of the stack get from a stack parameter, as
// KUBE_AWS_FACT_<NAME> in kube-aws-node's environment: the API load
// balancer's DNS name, say, for the API server certificate's names. The
// stack declares the parameter (usually wired to another stack's output).
type Fact struct {
	// Name is the fact's name, as plans name it ({apiLoadBalancerDNS}).
	Name string
	// Parameter is the stack parameter holding its value, or a resource's
	// attribute as Fn::Sub names it (APILoadBalancer.DNSName).
	Parameter string
}

// Path is where the bootstrap installs kube-aws-node on the machine.
const Path = nodeplan.BinaryPath

// Script is the bootstrap of the machines of role (controller, etcd,
// nodepool-<name>) of cluster, as the template of a Fn::Sub: every ${...}
// in it is a parameter of Parameters, a fact's parameter or AWS::Region, and
// the shell itself never writes ${ (CloudFormation would take it). Values
// are single-quoted: bucket names, keys, DNS names and the region hold no
// quote.
func Script(cluster, role string, facts []Fact) (string, error) {
	if err := checkWord("cluster name", cluster); err != nil {
		return "", err
	}
	if err := checkWord("role", role); err != nil {
		return "", err
	}
	facts = append([]Fact(nil), facts...)
	sort.Slice(facts, func(i, j int) bool { return facts[i].Name < facts[j].Name })
	var factLines strings.Builder
	for i, f := range facts {
		if !nodeplan.ValidFactName(f.Name) {
			return "", fmt.Errorf("bootstrap of %s: fact name %q is not letters and digits starting with a letter", role, f.Name)
		}
		if i > 0 && strings.EqualFold(facts[i-1].Name, f.Name) {
			return "", fmt.Errorf("bootstrap of %s: fact %s is given twice", role, f.Name)
		}
		if err := checkWord("fact parameter", f.Parameter); err != nil {
			return "", err
		}
		fmt.Fprintf(&factLines, "export %s='${%s}'\n", nodeplan.FactEnvName(f.Name), f.Parameter)
	}
	return fmt.Sprintf(script, role, cluster, role, names.ParamAssetsBucket, names.ParamAssetsPrefix, names.ParamUserDataKey,
		factLines.String(), names.ParamNodeAgentKeyAMD64, names.ParamNodeAgentKeyARM64, Path, Path), nil
}

// UserData is Script as the launch template's UserData: Fn::Base64 of
// Fn::Sub.
func UserData(cluster, role string, facts []Fact) (string, error) {
	s, err := Script(cluster, role, facts)
	if err != nil {
		return "", err
	}
	return cfn.Base64Sub(s), nil
}

func checkWord(what, s string) error {
	if s == "" {
		return fmt.Errorf("bootstrap: empty %s", what)
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("bootstrap: %s %q has a character other than letters, digits, '-', '_' and '.'", what, s)
		}
	}
	return nil
}

// script is the bootstrap. The %s are, in order: the role (comment), the
// cluster, the role, the bucket, prefix and userdata key parameters, the
// fact exports, the two kube-aws-node key parameters, and Path twice.
//
// Why each piece: the instance profile's credentials come from IMDSv2
// (tokens required by the launch template); curl signs the request itself
// (--aws-sigv4), so the image needs no AWS CLI; the payload hash header is
// given because S3 wants it signed; AWS_ENDPOINT_URL* come from the
// environment systemd gives cloud-init, or /etc/environment (a private
// endpoint, or an emulator); the object's sha256 is the last element of its
// key, checked before the file is made executable. openssl computes it where
// it is installed (Debian's ca-certificates depends on it), sha256sum where
// not: openssl uses the CPU's SHA instructions, and for the 100 MB download
// on every machine's way to its goal it took a quarter of sha256sum's CPU
// (0.08 against 0.30 CPU-seconds on the e2e machines).
const script = `#!/bin/sh
# kube-aws bootstrap (%s): fetch kube-aws-node from the cluster's bucket, check it, run "kube-aws-node boot".
set -e
export KUBE_AWS_CLUSTER='%s' KUBE_AWS_ROLE='%s' KUBE_AWS_REGION='${AWS::Region}'
export KUBE_AWS_BUCKET='${%s}' KUBE_AWS_PREFIX='${%s}' KUBE_AWS_USERDATA_KEY='${%s}'
%scase "$(uname -m)" in
x86_64) key='${%s}' ;;
aarch64) key='${%s}' ;;
*) echo "kube-aws bootstrap: no kube-aws-node for $(uname -m)" >&2; exit 1 ;;
esac
if [ -z "$AWS_ENDPOINT_URL" ] && [ -z "$AWS_ENDPOINT_URL_S3" ] && [ -r /etc/environment ]; then
  set -a; . /etc/environment; set +a
fi
endpoint="$AWS_ENDPOINT_URL_S3"
[ -n "$endpoint" ] || endpoint="$AWS_ENDPOINT_URL"
[ -n "$endpoint" ] || endpoint="https://s3.$KUBE_AWS_REGION.amazonaws.com"
endpoint="$(printf '%%s' "$endpoint" | sed 's:/*$::')"
imds="$AWS_EC2_METADATA_SERVICE_ENDPOINT"
[ -n "$imds" ] || imds=http://169.254.169.254
imds="$(printf '%%s' "$imds" | sed 's:/*$::')"
retry="--retry 30 --retry-all-errors --retry-delay 2 --connect-timeout 5 --max-time 120"
token="$(curl -sSf $retry -X PUT -H 'X-aws-ec2-metadata-token-ttl-seconds: 3600' "$imds/latest/api/token")"
md() { curl -sSf $retry -H "X-aws-ec2-metadata-token: $token" "$imds/latest/meta-data/$1"; }
profile="$(md iam/security-credentials/ | head -n 1)"
creds="$(md "iam/security-credentials/$profile")"
field() { printf '%%s' "$creds" | tr -d '\n' | sed -n "s/.*\"$1\" *: *\"\([^\"]*\)\".*/\1/p"; }
ak="$(field AccessKeyId)"; sk="$(field SecretAccessKey)"; st="$(field Token)"
if [ -z "$ak" ] || [ -z "$sk" ]; then
  echo "kube-aws bootstrap: the instance metadata service gave no credentials for profile '$profile'" >&2; exit 1
fi
mkdir -p /opt/kube-aws/bin
tmp=/opt/kube-aws/bin/.kube-aws-node.download
curl -sSf $retry --aws-sigv4 "aws:amz:$KUBE_AWS_REGION:s3" --user "$ak:$sk" -H "x-amz-security-token: $st" \
  -H 'x-amz-content-sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855' \
  -o "$tmp" "$endpoint/$KUBE_AWS_BUCKET/$key"
sum="$(openssl dgst -sha256 -r "$tmp" 2>/dev/null | cut -d' ' -f1)"
[ -n "$sum" ] || sum="$(sha256sum "$tmp" 2>/dev/null | cut -d' ' -f1)"
if [ "$sum" != "$(basename "$key")" ]; then
  echo "kube-aws bootstrap: s3://$KUBE_AWS_BUCKET/$key does not have the sha256 its key names: deploy again" >&2; exit 1
fi
chmod 0755 "$tmp"
mv -f "$tmp" %s
exec %s boot
`

// Launched is what a launch template's bootstrap, with its parameters
// filled in (as EC2 keeps a launch template version), says a machine boots:
// the key of its role's userdata and of kube-aws-node for amd64 and arm64.
type Launched struct {
	UserDataKey, NodeAgentAMD64, NodeAgentARM64 string
}

// ReadLaunched reads a filled-in bootstrap script (the decoded user data
// of a launch template version); a script that is not the bootstrap gives
// an empty Launched.
func ReadLaunched(script string) Launched {
	var l Launched
	for _, f := range []struct {
		marker string
		dst    *string
	}{
		{"KUBE_AWS_USERDATA_KEY='", &l.UserDataKey},
		{"x86_64) key='", &l.NodeAgentAMD64},
		{"aarch64) key='", &l.NodeAgentARM64},
	} {
		if _, rest, ok := strings.Cut(script, f.marker); ok {
			*f.dst, _, _ = strings.Cut(rest, "'")
		}
	}
	return l
}
