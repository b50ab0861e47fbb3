#!/usr/bin/env bash
# vendor-cores.sh TREE: put tpkit's cores into the Arktos tree TREE (a copy,
# never the source tree) as `go mod vendor` would place them: their non-test
# files under vendor/github.com/tpkit-dev/tpkit/, a block in
# vendor/modules.txt and a require in go.mod. Arktos's `go 1.13` line stays:
# the cores compile there as vendored code (docs/vendoring.md, "Adding the
# module"). `go mod vendor` itself cannot run offline: some of Arktos's
# modules are not on the module proxy.
set -euo pipefail
tree=${1:?usage: vendor-cores.sh ARKTOS_TREE}
root=$(cd "$(dirname "$0")/.." && pwd)
grep -q '^module k8s.io/kubernetes' "$tree/go.mod" 2>/dev/null || { echo "vendor-cores.sh: $tree is not an Arktos tree" >&2; exit 2; }
grep -q 'github.com/tpkit-dev/tpkit' "$tree/vendor/modules.txt" && { echo "vendor-cores.sh: $tree already vendors tpkit" >&2; exit 2; }

# The cores: test/vendorable/cores_test.go is the one list.
mapfile -t cores < <(sed -n 's/^[[:space:]]*{Path: "\(pkg[^"]*\)".*/\1/p' "$root/test/vendorable/cores_test.go")
[ ${#cores[@]} -gt 0 ] || { echo "vendor-cores.sh: no cores found in test/vendorable/cores_test.go" >&2; exit 1; }
echo "== vendoring ${cores[*]} into $tree"
v=$tree/vendor/github.com/tpkit-dev/tpkit
for p in "${cores[@]}"; do
	mkdir -p "$v/$p"
	for f in "$root/$p"/*.go; do
		case $f in *_test.go) ;; *) cp "$f" "$v/$p/" ;; esac
	done
done
cp "$root/LICENSE" "$v/" 2>/dev/null || true

# vendor/modules.txt: the module's block, in sorted position; go.mod: a require.
block=$(printf '# github.com/tpkit-dev/tpkit v0.0.0\n'; printf 'github.com/tpkit-dev/tpkit/%s\n' "${cores[@]}" | sort)
awk -v block="$block" 'BEGIN{done=0} /^# /{ if (!done && $2 > "github.com/tpkit-dev/tpkit") { print block; done=1 } } {print} END{ if (!done) print block }' \
	"$tree/vendor/modules.txt" > "$tree/vendor/modules.txt.new" && mv "$tree/vendor/modules.txt.new" "$tree/vendor/modules.txt"
sed -i '0,/^require (/s//require (\n\tgithub.com\/tpkit-dev\/tpkit v0.0.0/' "$tree/go.mod"
