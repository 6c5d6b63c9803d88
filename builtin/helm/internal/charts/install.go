package charts

import "github.com/kube-aws/kube-aws/core/construct"

// On the controllers. The rendered charts/ folder (packaged charts and
// releases.json) is placed in NodeDir by the bootstrap along with the
// userdata; the helm, kubectl and jq binaries come with the controller image.
const (
	NodeDir      = "/etc/kube-aws/charts"
	UnitName     = "kube-aws-helm-install.service"
	ScriptPath   = "/opt/kube-aws/bin/helm-install"
	KubeconfigOn = "/etc/kubernetes/admin.kubeconfig"
)

// installUnit runs once per boot; helm upgrade --install makes a second run
// (a replaced controller, a reboot) a no-op for unchanged releases.
const installUnit = `[Unit]
Description=Install the Helm releases rendered by kube-aws, in plugin order
Wants=network-online.target
After=network-online.target
ConditionPathExists=` + NodeDir + `/releases.json

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

// installScript waits for the API server, then installs every release of
// releases.json in order. It stops at the first failure: a later release may
// depend on an earlier one (CRDs before their users).
const installScript = `#!/bin/bash
# Installs the Helm releases kube-aws rendered (charts/releases.json), in order.
set -euo pipefail

dir=${KUBE_AWS_CHARTS_DIR:-` + NodeDir + `}
releases="$dir/releases.json"

until kubectl get --raw=/readyz >/dev/null 2>&1; do
  echo "waiting for the API server"
  sleep 5
done

count=$(jq 'length' "$releases")
for ((i = 0; i < count; i++)); do
  release=$(jq -c ".[$i]" "$releases")
  name=$(jq -r '.name' <<<"$release")
  namespace=$(jq -r '.namespace' <<<"$release")
  values=$(mktemp)
  trap 'rm -f "$values"' EXIT
  jq '.values // {}' <<<"$release" >"$values"
  if file=$(jq -er '.chartFile // empty' <<<"$release"); then
    # Install only the chart render checked and packaged.
    want=$(jq -r '.sha256' <<<"$release")
    if [ "$(sha256sum "$dir/$file" | cut -d' ' -f1)" != "$want" ]; then
      echo "$dir/$file is not the chart kube-aws rendered (sha256 differs)" >&2
      exit 1
    fi
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
  rm -f "$values"
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
