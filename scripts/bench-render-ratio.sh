#!/usr/bin/env bash
# What a change costs a user who renders, as ratios against a baseline commit
# measured in ONE run: figures from different runs on a shared machine are not
# comparable, ratios within one interleaved run are.
#
#   scripts/bench-render-ratio.sh [RUNS]        (make bench; RUNS defaults to 15)
#   BASELINE=<commit> scripts/bench-render-ratio.sh
#
# The baseline (default aea22a0, the last commit before the render was made
# faster) is checked out in a temporary git worktree and built there with
# `make build`; the working tree is built as it is. Each tree renders its own
# cluster.yaml.example, and the same cluster with 10 and with 100 node pools
# (copies of its first pool, made by scripts/nodepools), each in a folder of
# its own. Every render runs once before timing, so the credentials and
# generated secrets are kept and no key is made while timed (warm renders, as
# an operator re-renders). The renders are then run interleaved, in an order
# shuffled each round (seeded, so two runs shuffle alike), so that a machine
# whose load changes affects them alike. (A rotating order made each render
# follow the same one every round, and the tree then measured 1-5 % less CPU
# than the same commit as its baseline; shuffled, 0.99-1.01x.) Reported are medians of the wall time, of the CPU
# time of the whole process tree (kube-aws and every plugin process) and of the
# max RSS of the largest single process of the tree (kube-aws or a plugin),
# then the ratios of this tree to the baseline. Needs git, go, make and
# python3 (standard library only); /usr/bin/time when present for the RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
RUNS="${1:-${RUNS:-15}}"
BASELINE="${BASELINE:-aea22a0}"

base="$(git rev-parse --short=7 "$BASELINE^{commit}")"
work="$(mktemp -d)"
cleanup() {
	git worktree remove --force "$work/baseline" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT

make -s build >/dev/null
git worktree add --quiet --detach "$work/baseline" "$base"
make -s -C "$work/baseline" build COMMIT="$base" >/dev/null

# scenario name, node pools (0: the example as it is)
scenarios=(example:0 pools10:10 pools100:100)
args=()
for s in "${scenarios[@]}"; do
	name="${s%%:*}" pools="${s##*:}"
	for t in baseline tree; do
		src="$root"
		[ "$t" = baseline ] && src="$work/baseline"
		dir="$work/run/$t/$name"
		mkdir -p "$dir"
		cp "$src"/*-values.yaml "$dir/" 2>/dev/null || true
		if [ "$pools" = 0 ]; then
			cp "$src/cluster.yaml.example" "$dir/cluster.yaml"
		else
			go run ./scripts/nodepools -n "$pools" <"$src/cluster.yaml.example" >"$dir/cluster.yaml"
		fi
		# The first render makes the credentials; it is not timed.
		(cd "$dir" && "$src/bin/kube-aws" render >"$dir/first.out" 2>&1) ||
			{ echo "bench-render-ratio: $t does not render $name:" >&2; cat "$dir/first.out" >&2; exit 1; }
		args+=("$t" "$name" "$dir" "$src/bin/kube-aws")
	done
done

echo "machine:  $(nproc) CPU(s), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -sr), $(go version | cut -d' ' -f3)"
echo "command:  BASELINE=$BASELINE scripts/bench-render-ratio.sh $RUNS   (make bench-render BASELINE=$BASELINE BENCH_RUNS=$RUNS)"
echo "trees:    baseline $base, tree $(git rev-parse --short=7 HEAD)$(git diff --quiet HEAD -- 2>/dev/null || echo ' with uncommitted changes')"
echo "date:     $(date -u '+%Y-%m-%d %H:%M UTC')"
python3 - "$RUNS" "$work" "${args[@]}" <<'PY'
import os, random, statistics, subprocess, sys, time

runs, work = int(sys.argv[1]), sys.argv[2]
rest = sys.argv[3:]
cmds = [tuple(rest[i:i + 4]) for i in range(0, len(rest), 4)]
gnutime = os.access("/usr/bin/time", os.X_OK)
rssfile = os.path.join(work, "rss")

def once(folder, exe):
    # Through GNU time when there is one: a child that Python starts with
    # vfork reports Python's own RSS as its maximum when that is larger.
    argv = [exe, "render"]
    if gnutime:
        argv = ["/usr/bin/time", "-f", "%M", "-o", rssfile] + argv
    t = time.perf_counter()
    p = subprocess.Popen(argv, cwd=folder, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = (time.perf_counter() - t) * 1000
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("bench-render-ratio: %s render failed in %s" % (exe, folder))
    rss = ru.ru_maxrss
    if gnutime:
        rss = int(open(rssfile).read().split()[-1])
    return wall, (ru.ru_utime + ru.ru_stime) * 1000, rss / 1024

for _, _, folder, exe in cmds:  # warm-up
    once(folder, exe)
res = {(t, n): [] for t, n, _, _ in cmds}
shuffle = random.Random(24)
load0 = open("/proc/loadavg").read().split()[:3]
for r in range(runs):
    order = cmds[:]
    shuffle.shuffle(order)
    for t, n, folder, exe in order:
        res[(t, n)].append(once(folder, exe))
load1 = open("/proc/loadavg").read().split()[:3]
print("load:     %s at the start, %s at the end; %d interleaved runs each" % (" ".join(load0), " ".join(load1), runs))
print()

def med(t, n, i):
    return statistics.median(x[i] for x in res[(t, n)])

names = []
for _, n, _, _ in cmds:
    if n not in names:
        names.append(n)
print("| scenario | tree | median wall ms | median CPU ms | max RSS MiB (median) |")
print("|---|---|---|---|---|")
for n in names:
    for t in ("baseline", "tree"):
        print("| %s | %s | %.0f | %.0f | %.1f |" % (n, t, med(t, n, 0), med(t, n, 1), med(t, n, 2)))
print()
print("| scenario | wall tree/baseline | CPU tree/baseline | max RSS tree/baseline |")
print("|---|---|---|---|")
for n in names:
    print("| %s | %.2fx | %.2fx | %.2fx |" % (n, med("tree", n, 0) / med("baseline", n, 0),
          med("tree", n, 1) / med("baseline", n, 1), med("tree", n, 2) / med("baseline", n, 2)))
if "pools10" in names and "pools100" in names:
    print()
    for t in ("baseline", "tree"):
        print("%-8s  pools100/pools10: %.2fx wall, %.2fx CPU" % (t, med(t, "pools100", 0) / med(t, "pools10", 0),
              med(t, "pools100", 1) / med(t, "pools10", 1)))
PY
