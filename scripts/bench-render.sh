#!/usr/bin/env bash
# Whole-command figures for render and the plugin platform, all measured in
# ONE run with the scenarios interleaved (A B C D E, B C D E A, ...), so that
# a shared machine's swings in load fall on every scenario alike and the
# ratios between them are fair:
#   builtins   kube-aws render of cluster.yaml.example (the built-ins in their one subprocess)
#   contrib    the same with every contrib plugin enabled as well
#   pools10    cluster.yaml.example with 10 node pools
#   pools100   cluster.yaml.example with 100 node pools (target: under 10x pools10)
#   trivial20  kube-aws up with the built-ins off and 20 trivial user plugins through
#              all four stages (target: under 0.3 s; kube-aws max RSS under 40 MB)
# For each: wall time (median, min, max), CPU time of the whole process tree
# (kube-aws and the plugin processes it waits for) and the max RSS that
# /usr/bin/time reports: the largest of kube-aws and those plugin processes.
# Needs `make build`, `make venv` and /usr/bin/time (apt-get install time).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
RUNS="${RUNS:-15}"
KUBE_AWS="$root/bin/kube-aws"
PY="${KUBE_AWS_VENV:-$root/.venv}/bin/python"
for f in "$KUBE_AWS" "$PY"; do
	[ -x "$f" ] || { echo "bench-render: $f not found: run 'make build venv'" >&2; exit 1; }
done
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
	args+=("$s" "$(cmd_for "$s")")
done

echo "kube-aws: $("$KUBE_AWS" version | head -1)"
echo "machine:  $(nproc) CPU(s), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -sr)"
echo "command:  RUNS=$RUNS scripts/bench-render.sh"
"$PY" - "$RUNS" "$work" "${args[@]}" <<'PY'
import os, statistics, subprocess, sys, time

runs, work = int(sys.argv[1]), sys.argv[2]
rest = sys.argv[3:]
cmds = [(rest[i], rest[i + 1].split()) for i in range(0, len(rest), 2)]

rssfile = os.path.join(work, "rss")

def once(argv):
    # Through GNU time for the max RSS: a child that Python starts with vfork
    # reports Python's own RSS as its maximum when that is larger.
    t = time.perf_counter()
    p = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", rssfile] + argv,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = (time.perf_counter() - t) * 1000
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        sys.exit("bench-render: %s failed (exit %d)" % (" ".join(argv), code))
    rss = int(open(rssfile).read().split()[-1]) / 1024
    return wall, (ru.ru_utime + ru.ru_stime) * 1000, rss

for _, argv in cmds:  # warm-up
    once(argv)
    once(argv)
res = {n: [] for n, _ in cmds}
load0 = open("/proc/loadavg").read().split()[:3]
for r in range(runs):
    k = r % len(cmds)
    for n, argv in cmds[k:] + cmds[:k]:
        res[n].append(once(argv))
load1 = open("/proc/loadavg").read().split()[:3]
print("load:     %s at the start, %s at the end; %d interleaved runs each" % (" ".join(load0), " ".join(load1), runs))
print()
print("| scenario | median ms | min ms | max ms | median CPU ms | max RSS (median) |")
print("|---|---|---|---|---|---|")
med = {}
for n, _ in cmds:
    wall = [w for w, _, _ in res[n]]
    med[n] = statistics.median(wall)
    print("| %s | %.0f | %.0f | %.0f | %.0f | %.1f MiB |" % (n, med[n], min(wall), max(wall),
          statistics.median(c for _, c, _ in res[n]), statistics.median(m for _, _, m in res[n])))
print()
print("ratios (medians, same run): contrib/builtins %.2fx; pools100/pools10 %.2fx (target < 10x)"
      % (med["contrib"] / med["builtins"], med["pools100"] / med["pools10"]))
PY
