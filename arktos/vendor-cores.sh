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

# Bazel BUILD files, as Arktos's hack/update-bazel.sh (gazelle, then kazel)
# writes them for every vendored package: a go_library with importmap under
# k8s.io/kubernetes/vendor, deps on //staging/src/... for Arktos's staging
# repositories and //vendor/... otherwise, the package-srcs/all-srcs
# filegroups, and the packages' all-srcs in vendor/BUILD. verify-bazel
# (arktos/verify.sh) checks them against what update-bazel.sh generates.
blist() { # NAME ITEMS...: a Starlark list attribute in buildifier's layout
	local name=$1; shift
	if [ $# -eq 1 ]; then printf '    %s = ["%s"],\n' "$name" "$1"; return; fi
	printf '    %s = [\n' "$name"; printf '        "%s",\n' "$@"; printf '    ],\n'
}
# The standard library is what the tree's own gazelle knows as such: Arktos's
# gazelle (v0.19) predates Go 1.18, so it labels net/netip
# //vendor/net/netip, and verify-bazel wants exactly gazelle's output. (A
# Bazel build of the cores would need a Go >= 1.19 SDK, and so a newer
# rules_go and gazelle, anyway.)
stdlist=$tree/vendor/github.com/bazelbuild/bazel-gazelle/language/go/std_package_list.go
[ -f "$stdlist" ] || { echo "vendor-cores.sh: $stdlist is missing: cannot tell the standard library as Arktos's gazelle does" >&2; exit 1; }
std=$(sed -n 's/^[[:space:]]*"\([^"]*\)": true,$/\1/p' "$stdlist")
for p in "${cores[@]}"; do
	ip=github.com/tpkit-dev/tpkit/$p
	mapfile -t srcs < <(cd "$v/$p" && ls -1 -- *.go | LC_ALL=C sort)
	deps=()
	while read -r imp; do
		grep -qxF "$imp" <<<"$std" && continue
		if [ -d "$tree/staging/src/$imp" ]; then deps+=("//staging/src/$imp:go_default_library"); else deps+=("//vendor/$imp:go_default_library"); fi
	done < <(cat "$v/$p"/*.go | awk '/^import \(/{b=1; next} b && /^\)/{b=0} b || /^import "/' | grep -o '"[^"]*"' | tr -d '"' | LC_ALL=C sort -u)
	subs=()
	for q in "${cores[@]}"; do
		case $q in "$p"/*) case ${q#"$p"/} in */*) ;; *) subs+=("//vendor/github.com/tpkit-dev/tpkit/$q:all-srcs") ;; esac ;; esac
	done
	{
		printf 'load("@io_bazel_rules_go//go:def.bzl", "go_library")\n\ngo_library(\n    name = "go_default_library",\n'
		blist srcs "${srcs[@]}"
		printf '    importmap = "k8s.io/kubernetes/vendor/%s",\n    importpath = "%s",\n    visibility = ["//visibility:public"],\n' "$ip" "$ip"
		[ ${#deps[@]} -eq 0 ] || blist deps "${deps[@]}"
		printf ')\n\nfilegroup(\n    name = "package-srcs",\n    srcs = glob(["**"]),\n    tags = ["automanaged"],\n    visibility = ["//visibility:private"],\n)\n\n'
		printf 'filegroup(\n    name = "all-srcs",\n'
		blist srcs ":package-srcs" "${subs[@]}"
		printf '    tags = ["automanaged"],\n    visibility = ["//visibility:public"],\n)\n'
	} >"$v/$p/BUILD"
done
# vendor/BUILD: the outermost core packages' all-srcs, in kazel's sorted place.
tops=()
for p in "${cores[@]}"; do
	top=1
	for q in "${cores[@]}"; do case $p in "$q"/*) top=0 ;; esac; done
	[ $top = 0 ] || tops+=("        \"//vendor/github.com/tpkit-dev/tpkit/$p:all-srcs\",")
done
{
	awk '/^filegroup\(/{f=1} f && /name = "all-srcs"/{a=1} a && /^        "\/\/vendor\//{print > "/dev/stderr"; next} {print}' "$tree/vendor/BUILD" 2>"$tree/vendor/BUILD.entries" >"$tree/vendor/BUILD.rest"
	printf '%s\n' "${tops[@]}" >>"$tree/vendor/BUILD.entries"
	LC_ALL=C sort -u "$tree/vendor/BUILD.entries" >"$tree/vendor/BUILD.sorted"
	awk -v entries="$tree/vendor/BUILD.sorted" '{print} /^        ":package-srcs",$/ && !done {while ((getline l < entries) > 0) print l; done=1}' "$tree/vendor/BUILD.rest"
} >"$tree/vendor/BUILD.new"
mv "$tree/vendor/BUILD.new" "$tree/vendor/BUILD" && rm -f "$tree/vendor/BUILD.entries" "$tree/vendor/BUILD.rest" "$tree/vendor/BUILD.sorted"

# Godeps/LICENSES: the module's license entry, as hack/update-vendor-licenses.sh
# writes it (verify-vendor-licenses compares): its LICENSE under vendor/, its
# md5, in the place of the module path among the others (sort -f).
if [ -f "$root/LICENSE" ]; then
	lic=vendor/github.com/tpkit-dev/tpkit/LICENSE
	entry=$(mktemp)
	{
		echo
		echo "================================================================================"
		echo "= vendor/github.com/tpkit-dev/tpkit licensed under: ="
		echo
		cat "$tree/$lic"
		echo
		echo "= $lic $(md5sum <"$tree/$lic" | awk '{print $1}')"
		echo "================================================================================"
		echo
	} >"$entry"
	# Each entry starts with an empty line and the ===== line before its
	# "= vendor/PATH licensed under: =" line; insert before the first PATH
	# that sorts after ours the way sort -f does (case folded, C order).
	awk -v entry="$entry" -v me="github.com/tpkit-dev/tpkit" '
		function flush(   i) { for (i = 1; i <= n; i++) print held[i]; n = 0 }
		{ held[++n] = $0 }
		/^= vendor\/.* licensed under: =$/ && !done {
			p = $2; sub(/^vendor\//, "", p)
			if (toupper(p) > toupper(me)) {
				last2 = held[n-2]; last1 = held[n-1]; cur = held[n]; n -= 3; flush()
				while ((getline l < entry) > 0) print l
				done = 1
				print last2; print last1; print cur; next
			}
		}
		!/^$/ && !/^=+$/ { flush() }
		END { flush(); if (!done) while ((getline l < entry) > 0) print l }
	' "$tree/Godeps/LICENSES" >"$tree/Godeps/LICENSES.new" && mv "$tree/Godeps/LICENSES.new" "$tree/Godeps/LICENSES"
	rm -f "$entry"
else
	echo "vendor-cores.sh: warning: tpkit has no LICENSE file, so Godeps/LICENSES gets no entry for it; Arktos's hack/update-vendor-licenses.sh (verify-vendor-licenses) aborts on a vendored module without a license" >&2
fi
