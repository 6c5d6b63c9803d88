#!/usr/bin/env bash
# Render time of cluster.yaml.example against earlier commits, in ONE run:
# the ratio of this tree's render to a commit's says what a change costs a
# user who re-renders (2ddc56d, the default, is the last commit before the
# cluster built-ins pki, etcd, kubernetes and flannel). Figures from
# different runs on a shared machine are not comparable; ratios within one
# interleaved run are.
#
#   scripts/bench-render-ratio.sh [RUNS] [COMMIT...]   (default: 20 2ddc56d)
#
# Each commit is exported (git archive) and built with `make build` in a
# temporary folder; the working tree is built as it is. Each tree renders its
# own cluster.yaml.example in a folder of its own, once before timing, so the
# credentials and generated secrets are kept and no key is made while timed
# (warm renders, as an operator re-renders). The commands are then run
# interleaved (A B C A B C ...) so that a machine whose load changes affects
# them alike; the figures are medians of wall time and of the CPU time of the
# whole process tree (kube-aws and every plugin). Only the Python standard
# library is needed.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
RUNS="${1:-20}"
shift || true
commits=("$@")
[ ${#commits[@]} -gt 0 ] || commits=(2ddc56d)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

make -s build >/dev/null
names=() cmds=()
for c in "${commits[@]}"; do
	sha="$(git rev-parse --short=7 "$c^{commit}")"
	mkdir -p "$work/src-$sha" "$work/run-$sha"
	git archive "$sha" | tar -x -C "$work/src-$sha"
	make -s -C "$work/src-$sha" build COMMIT="$sha" >/dev/null
	cp "$work/src-$sha/cluster.yaml.example" "$work/run-$sha/cluster.yaml"
	names+=("$sha") cmds+=("$work/src-$sha/bin/kube-aws")
done
mkdir -p "$work/run-tree"
cp cluster.yaml.example "$work/run-tree/cluster.yaml"
names+=("tree") cmds+=("$root/bin/kube-aws")

for i in "${!names[@]}"; do
	# The first render makes the credentials; it is not timed.
	(cd "$work/run-${names[$i]}" && "${cmds[$i]}" render >/dev/null 2>&1) ||
		{ echo "bench-render-ratio: ${names[$i]} does not render" >&2; exit 1; }
done

echo "machine:  $(nproc) CPU(s), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -sr), $(go version | cut -d' ' -f3)"
echo "command:  scripts/bench-render-ratio.sh $RUNS ${commits[*]}"
args=()
for i in "${!names[@]}"; do args+=("${names[$i]}" "$work/run-${names[$i]}" "${cmds[$i]}"); done
python3 - "$RUNS" "${args[@]}" <<'PY'
import os, resource, statistics, subprocess, sys, time

runs = int(sys.argv[1])
rest = sys.argv[2:]
cmds = [(rest[i], rest[i + 1], rest[i + 2]) for i in range(0, len(rest), 3)]

def once(folder, exe):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    rc = subprocess.call([exe, "render"], cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = (time.perf_counter() - t) * 1000
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if rc != 0:
        sys.exit("bench-render-ratio: %s failed" % exe)
    return wall, (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime) * 1000

for _, folder, exe in cmds:  # warm-up
    once(folder, exe)
    once(folder, exe)
wall = {n: [] for n, _, _ in cmds}
cpu = {n: [] for n, _, _ in cmds}
load0 = open("/proc/loadavg").read().split()[:3]
for _ in range(runs):
    for n, folder, exe in cmds:
        w, c = once(folder, exe)
        wall[n].append(w)
        cpu[n].append(c)
load1 = open("/proc/loadavg").read().split()[:3]
print("load:     %s at the start, %s at the end; %d interleaved runs each" % (" ".join(load0), " ".join(load1), runs))
print()
first = cmds[0][0]
mw, mc = statistics.median(wall[first]), statistics.median(cpu[first])
print("| tree | median wall ms | min wall ms | median CPU ms | wall vs %s | CPU vs %s |" % (first, first))
print("|---|---|---|---|---|---|")
for n, _, _ in cmds:
    w, c = statistics.median(wall[n]), statistics.median(cpu[n])
    print("| %s | %.1f | %.1f | %.1f | %.2fx | %.2fx |" % (n, w, min(wall[n]), c, w / mw, c / mc))
PY
