package charts

import "github.com/kube-aws/kube-aws/core/construct"

// On the controllers. Deploy uploads every rendered file to
// <prefix>/assets/<sha256 of the content>; the controller bootstrap writes
// the bucket and the key of charts/releases.json (stack parameter
// ChartsIndexKey, empty without this plugin) to AssetsEnv. The install
// script downloads releases.json by that key and each chart it lists from
// the same folder by the chart's sha256, into NodeDir. The helm, kubectl, jq
// and aws binaries come with the controller image.
const (
	NodeDir      = "/etc/kube-aws/charts"
	AssetsEnv    = "/etc/kube-aws/assets.env"
	UnitName     = "kube-aws-helm-install.service"
	ScriptPath   = "/opt/kube-aws/bin/helm-install"
	KubeconfigOn = "/etc/kubernetes/admin.kubeconfig"
	// DecryptCommand is the bootstrap's decrypt-secrets: releases.json
	// arrives after the userdata's runcmd decrypted every other file, so the
	// script substitutes the markers in release values itself.
	DecryptCommand = "/opt/kube-aws/bin/decrypt-secrets"
)

// installUnit runs once per boot; helm upgrade --install makes a second run
// (a replaced controller, a reboot) a no-op for unchanged releases. It runs
// when the bootstrap says where the charts are, or when they were put in
// NodeDir some other way ("|": either condition will do).
const installUnit = `[Unit]
Description=Install the Helm releases rendered by kube-aws, in plugin order
Wants=network-online.target
After=network-online.target
ConditionPathExists=|` + AssetsEnv + `
ConditionPathExists=|` + NodeDir + `/releases.json

[Service]
Type=oneshot
RemainAfterExit=true
Environment=KUBECONFIG=` + KubeconfigOn + `
ExecStart=` + ScriptPath + `
# Waiting for the API server on a fresh cluster can take a while.
TimeoutStartSec=30min

[Install]
WantedBy=multi-user.target
`

// installScript fetches and verifies releases.json and every chart first,
// then waits for the API server and installs every release in order. It
// stops at the first failure: a later release may depend on an earlier one
// (CRDs before their users). A chart is installed only if its sha256 is the
// one render recorded, whether it came from S3 or was already in NodeDir.
const installScript = `#!/bin/bash
# Installs the Helm releases kube-aws rendered (charts/releases.json), in order.
set -euo pipefail
# releases.json holds the releases' values, secrets included once decrypted.
umask 077

dir=${KUBE_AWS_CHARTS_DIR:-` + NodeDir + `}
releases="$dir/releases.json"
# From the controller bootstrap: KUBE_AWS_REGION, KUBE_AWS_ASSETS_BUCKET and
# KUBE_AWS_CHARTS_INDEX_KEY, the S3 key deploy uploaded releases.json to.
assets_env=${KUBE_AWS_ASSETS_ENV:-` + AssetsEnv + `}
if [ -f "$assets_env" ]; then
  . "$assets_env"
fi
index_key=${KUBE_AWS_CHARTS_INDEX_KEY:-}
# Deploy stores each rendered file at <prefix>/assets/<sha256 of the content>,
# so the charts releases.json lists are in the folder of its key.
assets=${index_key%/*}

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# fetch KEY DEST downloads s3://<bucket>/KEY to DEST, retrying while S3 or
# the network are not ready at boot, and keeps it only if its sha256 is the
# key's last part, as deploy named it.
fetch() {
  local key=$1 dest=$2 attempt
  for attempt in 1 2 3 4 5 6; do
    if aws s3 cp --region "${KUBE_AWS_REGION:?}" "s3://${KUBE_AWS_ASSETS_BUCKET:?}/$key" "$dest.part"; then
      break
    fi
    rm -f "$dest.part"
    sleep $((attempt * 5))
  done
  if [ ! -f "$dest.part" ]; then
    echo "could not download s3://$KUBE_AWS_ASSETS_BUCKET/$key" >&2
    exit 1
  fi
  if [ "$(sha256_of "$dest.part")" != "${key##*/}" ]; then
    rm -f "$dest.part"
    echo "s3://$KUBE_AWS_ASSETS_BUCKET/$key is not what kube-aws deployed (sha256 differs)" >&2
    exit 1
  fi
  mv "$dest.part" "$dest"
}

if [ -n "$index_key" ]; then
  mkdir -p "$dir"
  fetch "$index_key" "$releases"
fi
if [ ! -f "$releases" ]; then
  echo "no $releases: no Helm releases to install"
  exit 0
fi
# Release values may hold ((secret:...)) markers.
if grep -q '((secret:' "$releases"; then
  "${KUBE_AWS_DECRYPT_SECRETS:-` + DecryptCommand + `}" <(echo "$releases")
fi

count=$(jq 'length' "$releases")
for ((i = 0; i < count; i++)); do
  if file=$(jq -er ".[$i].chartFile // empty" "$releases"); then
    want=$(jq -r ".[$i].sha256" "$releases")
    # A chart an earlier boot fetched is kept if it is still the one.
    if [ -n "$assets" ] && { [ ! -f "$dir/$file" ] || [ "$(sha256_of "$dir/$file")" != "$want" ]; }; then
      fetch "$assets/$want" "$dir/$file"
    fi
    # Install only the chart render checked and packaged.
    if [ ! -f "$dir/$file" ] || [ "$(sha256_of "$dir/$file")" != "$want" ]; then
      echo "$dir/$file is not the chart kube-aws rendered (missing, or sha256 differs)" >&2
      exit 1
    fi
  fi
done
if [ "$count" -eq 0 ]; then
  exit 0
fi

until kubectl get --raw=/readyz >/dev/null 2>&1; do
  echo "waiting for the API server"
  sleep 5
done

values=$(mktemp)
trap 'rm -f "$values"' EXIT
for ((i = 0; i < count; i++)); do
  release=$(jq -c ".[$i]" "$releases")
  name=$(jq -r '.name' <<<"$release")
  namespace=$(jq -r '.namespace' <<<"$release")
  jq '.values // {}' <<<"$release" >"$values"
  if file=$(jq -er '.chartFile // empty' <<<"$release"); then
    chart=("$dir/$file")
  else
    chart=("$(jq -r '.chart' <<<"$release")" --repo "$(jq -r '.repository' <<<"$release")")
    if version=$(jq -er '.version // empty' <<<"$release"); then
      chart+=(--version "$version")
    fi
  fi
  echo "installing release $name in namespace $namespace"
  helm upgrade --install "$name" "${chart[@]}" \
    --namespace "$namespace" --create-namespace \
    --values "$values" --wait --timeout 10m
done
`

// Install is what the helm plugin contributes in initialise: the controller
// unit that installs the releases on boot, and the script it runs.
func Install() construct.Set {
	controller := construct.Target{Role: construct.Controller}
	return construct.Set{
		Units: []construct.Unit{{Target: controller, Name: UnitName, Enable: true, Content: installUnit}},
		Files: []construct.File{{Target: controller, Path: ScriptPath, Mode: "0755", Owner: "root:root", Content: installScript}},
	}
}
