#!/usr/bin/env bash
# make lint: every patched copy of a dependency under third_party/ is its
# release with the patch beside it applied, and nothing else: the release is
# taken from the Go module proxy, its test files and testdata folders dropped
# (they are not copied, nor are its dotfiles), the patch applied, and the result compared
# with the copy.
#
# To move to a new release: copy it over the folder (without *_test.go,
# testdata folders, go.work* and dotfiles), apply the patch again, and change
# the version here and in go.mod's require line.
set -euo pipefail
cd "$(dirname "$0")/.."

# module@version  folder under third_party/  patch under third_party/
copies=(
	"github.com/santhosh-tekuri/jsonschema/v6@v6.0.3 github.com/santhosh-tekuri/jsonschema/v6 jsonschema-lazy-metaschemas.patch"
	"helm.sh/helm/v3@v3.22.0 helm.sh/helm/v3 helm-offline-chart-rendering.patch"
)

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
bad=0
for c in "${copies[@]}"; do
	read -r modver folder patch <<<"$c"
	src="$(go mod download -json "$modver" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
	if [ -z "$src" ]; then
		echo "third_party: cannot download $modver from the module proxy" >&2
		exit 1
	fi
	want="$work/$folder"
	mkdir -p "$want"
	cp -R "$src/." "$want/"
	chmod -R u+w "$want"
	find "$want" -name testdata -type d -prune -exec rm -rf {} +
	rm -rf "$want"/go.work* "$want"/.[!.]*
	find "$want" -name '*_test.go' -delete
	(cd "$want" && git apply -p1 "$OLDPWD/third_party/$patch")
	if ! diff -r "$want" "third_party/$folder" >"$work/diff"; then
		echo "third_party/$folder is not $modver with third_party/$patch applied:" >&2
		cat "$work/diff" >&2
		bad=1
	fi
done
exit $bad
