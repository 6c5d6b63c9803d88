#!/usr/bin/env bash
# Whole-command timings of `bin/kube-aws render` on cluster.yaml.example:
# wall time (median) and kube-aws's max RSS. Uses hyperfine when installed,
# else a loop timed with date and /usr/bin/time -v. Run from `make bench`
# (which builds first) or directly after `make build`.
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS="${RUNS:-20}"
KUBE_AWS="${KUBE_AWS:-$PWD/bin/kube-aws}"
EXAMPLE="${EXAMPLE:-$PWD/cluster.yaml.example}"

if [ ! -x "$KUBE_AWS" ]; then
	echo "bench: $KUBE_AWS not found: run 'make build' first" >&2
	exit 1
fi
if [ ! -f "$EXAMPLE" ]; then
	echo "bench: $EXAMPLE not found yet: nothing to time (whole-command timings skipped)"
	exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cp "$EXAMPLE" "$work/cluster.yaml"
# Files the example refers to (plugin config files, charts) sit beside it.
for f in "$(dirname "$EXAMPLE")"/*-values.yaml; do
	[ -f "$f" ] && cp "$f" "$work/"
done
cmd=("$KUBE_AWS" render -c "$work/cluster.yaml" --out "$work/rendered")

echo "kube-aws: $("$KUBE_AWS" version)"
echo "machine:  $(nproc) CPU(s), $(uname -sr)"
echo "command:  kube-aws render -c cluster.yaml --out rendered   (cluster.yaml = cluster.yaml.example)"

# One run first: it must succeed, and it warms the page cache.
if ! "${cmd[@]}" >"$work/out.txt" 2>&1; then
	echo "bench: kube-aws render failed on cluster.yaml.example:" >&2
	cat "$work/out.txt" >&2
	exit 1
fi
echo "plugins:  $(grep -E '^render:' "$work/out.txt" || true)"

if command -v hyperfine >/dev/null 2>&1; then
	hyperfine --warmup 2 --runs "$RUNS" --style basic \
		--export-json "$work/hyperfine.json" "${cmd[*]}"
	python3 - "$work/hyperfine.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))["results"][0]
print(f"median {r['median']*1000:.1f} ms, mean {r['mean']*1000:.1f} ms, min {r['min']*1000:.1f} ms, max {r['max']*1000:.1f} ms over {len(r['times'])} runs")
PY
else
	times=()
	for _ in $(seq "$RUNS"); do
		s=$(date +%s%N)
		"${cmd[@]}" >/dev/null 2>&1
		e=$(date +%s%N)
		times+=($(((e - s) / 1000)))
	done
	printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {
		m = (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2
		printf "median %.1f ms, min %.1f ms, max %.1f ms over %d runs\n", m/1000, a[1]/1000, a[NR]/1000, NR }'
fi

if [ -x /usr/bin/time ]; then
	/usr/bin/time -v "${cmd[@]}" >/dev/null 2>"$work/time.txt" || true
	rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.txt")
	echo "kube-aws max RSS: ${rss} KiB (plugins are separate processes, not included)"
else
	echo "kube-aws max RSS: /usr/bin/time not installed (apt-get install -y time)"
fi
