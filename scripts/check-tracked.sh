#!/usr/bin/env bash
# make lint: no build output and nothing large is tracked. A compiled binary
# (ELF, Mach-O, PE, a Go archive) or a file over 1 MiB fails, with its name;
# `go build` in a package's folder leaves its binary there (see .gitignore).
set -euo pipefail
cd "$(dirname "$0")/.."
limit=$((1024 * 1024))
bad=0
while IFS= read -r -d '' f; do
	[ -f "$f" ] || continue
	size=$(stat -c %s "$f")
	if [ "$size" -gt "$limit" ]; then
		echo "tracked file over 1 MiB: $f ($size bytes): keep data and build outputs out of git (git rm --cached '$f')" >&2
		bad=1
	fi
	magic=$(head -c 4 "$f" | od -An -tx1 | tr -d ' \n')
	case "$magic" in
	7f454c46 | cffaedfe | cefaedfe | feedfacf | feedface | cafebabe | 4d5a*)
		echo "tracked executable binary: $f: remove it (git rm --cached '$f') and build it with make build" >&2
		bad=1
		;;
	213c6172) # "!<ar": a Go or C archive
		echo "tracked archive: $f: remove it (git rm --cached '$f')" >&2
		bad=1
		;;
	esac
done < <(git ls-files -z)
exit $bad
