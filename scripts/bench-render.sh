#!/usr/bin/env bash
# Whole-command figures for render and the plugin platform, all measured in
# ONE hyperfine run so that ratios between them are fair on a noisy machine:
#   builtins   kube-aws render of cluster.yaml.example (the built-ins in their one subprocess)
#   contrib    the same with every contrib plugin enabled as well
#   pools10    cluster.yaml.example with 10 node pools
#   pools100   cluster.yaml.example with 100 node pools (target: under 10x pools10)
#   trivial20  kube-aws up with the built-ins off and 20 trivial user plugins through
#              all four stages (target: under 0.3 s; kube-aws max RSS under 40 MB)
# Then kube-aws's own max RSS per scenario (/usr/bin/time -v, plugins are
# separate processes and not included). Needs `make build` and `make venv`.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
RUNS="${RUNS:-15}"
KUBE_AWS="$root/bin/kube-aws"
PY="${KUBE_AWS_VENV:-$root/.venv}/bin/python"
for f in "$KUBE_AWS" "$PY"; do
	[ -x "$f" ] || { echo "bench-render: $f not found: run 'make build venv'" >&2; exit 1; }
done
command -v hyperfine >/dev/null || { echo "bench-render: needs hyperfine (apt-get install -y hyperfine)" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "bench-render: needs /usr/bin/time (apt-get install -y time)" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

"$PY" - "$root/cluster.yaml.example" "$work" <<'PY'
import copy, os, sys
import yaml

src, work = sys.argv[1], sys.argv[2]
base = yaml.safe_load(open(src))

def write(name, doc):
    d = os.path.join(work, name)
    os.makedirs(d)
    with open(os.path.join(d, "cluster.yaml"), "w") as f:
        yaml.safe_dump(doc, f, sort_keys=False)

write("builtins", base)

# The values contrib/internal/together uses: every contrib plugin doing its job.
contrib = {
    "datadog-agent": {"apiKey": "0123456789abcdef", "tags": ["env:bench"]},
    "dex": {"issuerURL": "https://dex.example.com", "staticClients": [
        {"id": "kubectl", "secret": "client-secret", "redirectURIs": ["http://localhost:8000"]}]},
    "kube2iam": {"roleARNs": ["arn:aws:iam::123456789012:role/k8s-*"]},
    "bastion": {"allowedCIDRs": ["203.0.113.0/24"], "keyName": "ops"},
    "cluster-autoscaler": {},
    "customise": {"tags": {"cost-center": "1234"}, "apiAccessCIDRs": ["203.0.113.0/24"]},
}
c = copy.deepcopy(base)
for name, values in contrib.items():
    c["plugins"][name] = {"enabled": True, "values": values}
write("contrib", c)

pool = base["nodePools"][0]
for n in (10, 100):
    c = copy.deepcopy(base)
    c["nodePools"] = [dict(pool, name="pool%03d" % i) for i in range(n)]
    write("pools%d" % n, c)

c = copy.deepcopy(base)
c["plugins"] = {k: {"enabled": False} for k in
                ["cloudformation", "iam", "userdata", "apiserver", "helm", "deploy"]}
for i in range(20):
    c["plugins"]["trivial%02d" % i] = {"enabled": True}
write("trivial20", c)
PY

CGO_ENABLED=0 go build -trimpath -o "$work/trivial" ./plugins/testdata/trivial
for i in $(seq -w 0 19); do
	mkdir -p "$work/trivial20/plugins/trivial$i"
	cp "$work/trivial" "$work/trivial20/plugins/trivial$i/trivial$i"
done

scenarios=(builtins contrib pools10 pools100 trivial20)
cmd_for() {
	if [ "$1" = trivial20 ]; then
		echo "$KUBE_AWS up -c $work/$1/cluster.yaml"
	else
		echo "$KUBE_AWS render -c $work/$1/cluster.yaml --out $work/$1/rendered"
	fi
}
args=()
for s in "${scenarios[@]}"; do
	# Each must succeed before it is timed.
	$(cmd_for "$s") >"$work/$s.out" 2>&1 || { echo "bench-render: $s failed:" >&2; cat "$work/$s.out" >&2; exit 1; }
	args+=(--command-name "$s" "$(cmd_for "$s")")
done

echo "kube-aws: $("$KUBE_AWS" version | head -1)"
echo "machine:  $(nproc) CPU(s), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -sr), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "command:  RUNS=$RUNS scripts/bench-render.sh"
hyperfine -N --warmup 2 --runs "$RUNS" --style none --export-json "$work/h.json" "${args[@]}" >/dev/null

for s in "${scenarios[@]}"; do
	rss=()
	for _ in 1 2 3 4 5; do
		/usr/bin/time -v $(cmd_for "$s") >/dev/null 2>"$work/time.txt"
		rss+=("$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.txt")")
	done
	printf '%s\n' "${rss[@]}" | sort -n | sed -n 3p >"$work/$s.rss"
done

"$PY" - "$work" "${scenarios[@]}" <<'PY'
import json, os, sys
work, names = sys.argv[1], sys.argv[2:]
res = {r["command"]: r for r in json.load(open(os.path.join(work, "h.json")))["results"]}
med = {n: res[n]["median"] * 1000 for n in names}
print("| scenario | median ms | min ms | max ms | kube-aws max RSS (median of 5) |")
print("|---|---|---|---|---|")
for n in names:
    r = res[n]
    rss = int(open(os.path.join(work, n + ".rss")).read().strip()) / 1024
    print("| %s | %.0f | %.0f | %.0f | %.1f MiB |" % (n, med[n], r["min"] * 1000, r["max"] * 1000, rss))
print()
print("ratios (medians, same run): contrib/builtins %.2fx; pools100/pools10 %.2fx (target < 10x)"
      % (med["contrib"] / med["builtins"], med["pools100"] / med["pools10"]))
print("v0.16 exported a minimal cluster in 1.66 s (median): builtins is %.1fx faster" % (1660 / med["builtins"]))
PY
