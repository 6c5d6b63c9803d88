#!/usr/bin/env bash
# How long the example cluster's machines take to reach their goal, this tree
# against a baseline commit, measured in ONE run: boots of the two trees
# alternate, so a machine whose load changes affects them alike, and only the
# ratios within the run are compared.
#
#   scripts/bench-boot-ratio.sh [PAIRS]          (make bench-boot; PAIRS defaults to 2)
#   BASELINE=<commit> scripts/bench-boot-ratio.sh
#
# Each boot is `make e2e-cluster RUN='TestCluster/^$'` in its tree: the whole
# example deployed to moto and booted as local machines (systemd-nspawn),
# every machine's goal awaited, then torn down, with none of the fault or
# day-2 cases. The baseline (default aea22a0, the last commit before the boot
# was made faster) is checked out in a temporary git worktree and shares this
# tree's Python environment. Each tree boots the artifacts its own builder
# makes (the two may differ: layer compression, image format): this tree its
# usual folder (ARTIFACTS_DIR, else make's default), the baseline a folder of
# its own that is kept between runs, ~/.cache/kube-aws/bench-boot/<commit>/
# artifacts (BASELINE_ARTIFACTS_DIR overrides it). The first boot of a new
# baseline builds that folder, one to two minutes with a warm Go build cache,
# before its clock starts. Reported per boot and role: the goal of the role's slowest
# machine, in seconds from its machine's start (what the e2e log's "reached
# their goal" line gives), and the host's busy share when the tree logs it;
# then the medians and the ratios of this tree to the baseline. Needs root and
# what `make e2e-cluster` needs (README.md); one boot takes 2 to 4 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
PAIRS="${1:-${PAIRS:-2}}"
BASELINE="${BASELINE:-aea22a0}"

if [ "$(id -u)" != 0 ]; then
	echo "bench-boot-ratio: booting machines needs root (mounts, network namespaces, cgroups): run it as root" >&2
	exit 2
fi
base="$(git rev-parse --short=7 "$BASELINE^{commit}")"
base_artifacts="${BASELINE_ARTIFACTS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-aws/bench-boot/$base/artifacts}"
work="$(mktemp -d)"
cleanup() {
	git worktree remove --force "$work/baseline" >/dev/null 2>&1 || true
	rm -rf "$work"
}
trap cleanup EXIT
git worktree add --quiet --detach "$work/baseline" "$base"
make -s venv >/dev/null
ln -s "$root/.venv" "$work/baseline/.venv"

echo "machine:  $(nproc) CPU(s), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(uname -sr), $(go version | cut -d' ' -f3)"
echo "command:  BASELINE=$BASELINE scripts/bench-boot-ratio.sh $PAIRS   (make bench-boot BASELINE=$BASELINE BOOT_PAIRS=$PAIRS)"
echo "trees:    baseline $base, tree $(git rev-parse --short=7 HEAD)$(git diff --quiet HEAD -- 2>/dev/null || echo ' with uncommitted changes')"
echo "artifacts: baseline $base_artifacts, tree ${ARTIFACTS_DIR:-the default folder}"
echo "date:     $(date -u '+%Y-%m-%d %H:%M UTC'), load $(cut -d' ' -f1-3 /proc/loadavg) at the start"
logs=()
for i in $(seq 1 "$PAIRS"); do
	for t in baseline tree; do
		dir="$root" artifacts=()
		[ -n "${ARTIFACTS_DIR:-}" ] && artifacts=(ARTIFACTS_DIR="$ARTIFACTS_DIR")
		[ "$t" = baseline ] && dir="$work/baseline" artifacts=(ARTIFACTS_DIR="$base_artifacts")
		log="$work/$t-$i.log"
		start=$(date +%s)
		if ! make -C "$dir" -o .venv/.installed e2e-cluster RUN='TestCluster/^$' "${artifacts[@]}" >"$log" 2>&1; then
			echo "bench-boot-ratio: boot $i of $t failed; the end of its log:" >&2
			tail -40 "$log" >&2
			exit 1
		fi
		echo "boot $i of $t: $(($(date +%s) - start)) s, load $(cut -d' ' -f1 /proc/loadavg) at its end"
		logs+=("$t" "$log")
	done
done
python3 - "${logs[@]}" <<'PY'
import re, statistics, sys

goal = re.compile(r"(\S+): \d+ machines reached their goal ([\d.]+)s to ([\d.]+)s after their machines started")
cpu = re.compile(r"(\S+): \d+ machines reached their goal .*?; ([\d.]+) to ([\d.]+) CPU-seconds each by then")
busy = re.compile(r"host CPU from the end of kube-aws up to the last goal: (\d+)% busy")
roles = ["etcd", "controller", "nodepool-general", "nodepool-spot"]
rows = []  # (tree, {role: slowest goal}, busy, {role: most CPU-seconds of a machine at its goal})
args = sys.argv[1:]
for t, path in zip(args[::2], args[1::2]):
    text = open(path, errors="replace").read()
    g = {m.group(1): float(m.group(3)) for m in goal.finditer(text)}
    b = busy.search(text)
    c = {m.group(1): float(m.group(3)) for m in cpu.finditer(text)}
    rows.append((t, g, b.group(1) + " %" if b else "not logged", c))
print()
print("| boot | tree | " + " | ".join(roles) + " | host busy |")
print("|---|---|" + "---:|" * len(roles) + "---|")
for i, (t, g, b, _) in enumerate(rows):
    print(f"| {i // 2 + 1} | {t} | " + " | ".join(f"{g[r]:.1f}" if r in g else "-" for r in roles) + f" | {b} |")
def medians(title, per_boot):
    """Prints title and, per role, the medians of per_boot (a {role: value}
    per row) for each tree and their ratio."""
    print()
    print(title)
    print()
    print("| role | baseline | tree | tree/baseline |")
    print("|---|---:|---:|---:|")
    for r in roles:
        med = {}
        for t in ("baseline", "tree"):
            v = [per_boot(row)[r] for row in rows if row[0] == t and r in per_boot(row)]
            med[t] = statistics.median(v) if v else None
        if med["baseline"] and med["tree"]:
            print(f"| {r} | {med['baseline']:.1f} | {med['tree']:.1f} | {med['tree'] / med['baseline']:.2f}x |")


medians("Seconds from a machine's start to its goal, the role's slowest machine; medians over the boots:",
        lambda row: row[1])
if any(row[3] for row in rows):
    medians("CPU-seconds a machine of the role had used by its goal (the most of the role's machines; logged by\n"
            "make e2e-cluster from the machine's cgroup); medians over the boots:", lambda row: row[3])
PY
