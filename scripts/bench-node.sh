#!/usr/bin/env bash
# Size and start-up of kube-aws-node, the program every machine downloads and
# runs at boot (docs/benchmarks.md): the size of each architecture's binary,
# and for this machine's, package init (GODEBUG=inittrace=1, summed over every
# package) and max RSS of `kube-aws-node version` over RUNS runs.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-20}
dir=bin/kube-aws-plugins/libexec
for f in "$dir"/kube-aws-node-linux-*; do
  stat -c '%n %s' "$f" | awk '{n = split($1, p, "/"); printf "%s: %d bytes (%.1f MiB)\n", p[n], $2, $2 / 1048576}' 
done
bin="$dir/kube-aws-node-linux-$(go env GOARCH)"
inits=() rss=()
for _ in $(seq "$RUNS"); do
  inits+=("$(GODEBUG=inittrace=1 "$bin" version 2>&1 >/dev/null |
    awk '/^init / {ms += $5; b += $8; n += $10} END {printf "%.2f %.1f %d", ms, b / 1048576, n}')")
  rss+=("$( { /usr/bin/time -f '%M' "$bin" version >/dev/null; } 2>&1 | tail -1)")
done
printf '%s\n' "${inits[@]}" | sort -n | awk -v runs="$RUNS" '
  {ms[NR] = $1; mb = $2; allocs = $3}
  END {printf "package init of %s runs: min %.1f ms, median %.1f ms, max %.1f ms; %.1f MiB and %d allocations\n", runs, ms[1], ms[int((NR + 1) / 2)], ms[NR], mb, allocs}'
printf '%s\n' "${rss[@]}" | sort -n | awk '{r[NR] = $1} END {printf "max RSS of `kube-aws-node version`: median %.1f MiB\n", r[int((NR + 1) / 2)] / 1024}'
