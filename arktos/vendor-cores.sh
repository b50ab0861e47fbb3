#!/usr/bin/env bash
# vendor-cores.sh TREE: make tpkit's cores a module of the Arktos tree TREE (a
# copy, never the source tree), laid out the way Arktos carries its own
# staging modules (k8s.io/api and the rest):
#
#   staging/src/github.com/tpkit-dev/tpkit   the module: the non-test files
#                                            of the cores the series imports
#                                            (and what they import), tpkit's
#                                            LICENSE, a go.mod (go 1.13), and
#                                            Bazel BUILD files
#   vendor/github.com/tpkit-dev/tpkit        a symlink to it
#   go.mod                                   require github.com/tpkit-dev/tpkit
#                                            <pseudo-version of tpkit's HEAD>,
#                                            replace => ./staging/src/...
#   vendor/modules.txt                       "# github.com/tpkit-dev/tpkit
#                                            <version> => ./staging/src/..."
#                                            and its packages
#
# which is what `go mod vendor` (then hack/update-vendor.sh's symlink step)
# writes for it: check-vendor.sh proves that on the patched tree. The replace
# is needed: the module in Arktos is the cores alone, with a go.mod Arktos's
# Go 1.13 can use; no proxy serves that (tpkit's own go.mod at the same
# commit names Go 1.26 and today's client-go). docs/vendoring.md, "The
# module", says more.
set -euo pipefail
tree=${1:?usage: vendor-cores.sh ARKTOS_TREE}
root=$(cd "$(dirname "$0")/.." && pwd)
mod=github.com/tpkit-dev/tpkit
rel=staging/src/$mod
grep -q '^module k8s.io/kubernetes' "$tree/go.mod" 2>/dev/null || { echo "vendor-cores.sh: $tree is not an Arktos tree" >&2; exit 2; }
grep -q "$mod" "$tree/vendor/modules.txt" && { echo "vendor-cores.sh: $tree already vendors tpkit" >&2; exit 2; }
[ -f "$root/LICENSE" ] || { echo "vendor-cores.sh: $root/LICENSE is missing: the module must carry tpkit's license" >&2; exit 1; }
export GOTOOLCHAIN=local

# The version: a pseudo-version naming tpkit's HEAD commit (tpkit has no
# release tags yet), as `go get github.com/tpkit-dev/tpkit@<commit>` would.
git -C "$root" rev-parse --verify -q HEAD >/dev/null || { echo "vendor-cores.sh: $root is not a git checkout: the module's version names a tpkit commit" >&2; exit 1; }
version=v0.0.0-$(TZ=UTC git -C "$root" log -1 --format=%cd --date=format-local:%Y%m%d%H%M%S HEAD)-$(git -C "$root" rev-parse --short=12 HEAD)

# The cores: test/vendorable/cores_test.go is the one list; the module holds
# those the series imports, and the cores they import.
mapfile -t cores < <(sed -n 's/^[[:space:]]*{Path: "\(pkg[^"]*\)".*/\1/p' "$root/test/vendorable/cores_test.go")
[ ${#cores[@]} -gt 0 ] || { echo "vendor-cores.sh: no cores found in test/vendorable/cores_test.go" >&2; exit 1; }
mapfile -t imported < <(grep -h '^+' "$root"/arktos/patches/*.patch | grep -o "\"$mod/pkg/[^\"]*\"" | tr -d '"' | sort -u)
[ ${#imported[@]} -gt 0 ] || { echo "vendor-cores.sh: no patch in arktos/patches imports tpkit" >&2; exit 1; }
mapfile -t pkgs < <(cd "$root" && go list -deps -f '{{if .Module}}{{if eq .Module.Path "'"$mod"'"}}{{.ImportPath}}{{end}}{{end}}' "${imported[@]}" | sed "s|^$mod/||" | LC_ALL=C sort)
for p in "${pkgs[@]}"; do
	printf '%s\n' "${cores[@]}" | grep -qxF "$p" || { echo "vendor-cores.sh: the series imports $mod/$p, which is not a core (test/vendorable/cores_test.go)" >&2; exit 1; }
done
echo "== $mod $version: ${pkgs[*]} into $tree/$rel"
if [ -n "$(git -C "$root" status --porcelain -- "${pkgs[@]}" LICENSE)" ]; then
	echo "vendor-cores.sh: warning: $root has uncommitted changes in the cores; $version names HEAD, not these files" >&2
fi
s=$tree/$rel
for p in "${pkgs[@]}"; do
	mkdir -p "$s/$p"
	for f in "$root/$p"/*.go; do
		case $f in *_test.go) ;; *) cp "$f" "$s/$p/" ;; esac
	done
done
cp "$root/LICENSE" "$s/"
# go.mod: the modules the packages import, at the versions Arktos vendors
# (k8s.io/apimachinery is Arktos's own staging module: v0.0.0).
mapfile -t deps < <(cd "$root" && go list -f '{{if not .Standard}}{{.Module.Path}}{{end}}' $(go list -f '{{join .Imports "\n"}}' "${pkgs[@]/#/$mod/}" | sort -u) | grep -vxF "$mod" | LC_ALL=C sort -u)
{
	printf 'module %s\n\ngo 1.13\n' "$mod"
	if [ ${#deps[@]} -gt 0 ]; then
		printf '\nrequire (\n'
		for d in "${deps[@]}"; do
			v=$(awk -v m="$d" '$1 == "#" && $2 == m {print $3; exit}' "$tree/vendor/modules.txt")
			[ -n "$v" ] || { echo "vendor-cores.sh: the cores need $d, which $tree does not vendor" >&2; exit 1; }
			printf '\t%s %s\n' "$d" "$v"
		done
		printf ')\n'
	fi
} >"$s/go.mod"
mkdir -p "$tree/vendor/github.com/tpkit-dev"
ln -s "../../../$rel" "$tree/vendor/github.com/tpkit-dev/tpkit"

# Arktos's go.mod: the require (go mod edit places it), and the replace in
# sorted place in Arktos's one replace block (go mod edit would append a
# replace statement of its own).
(cd "$tree" && go mod edit -require="$mod@$version")
awk -v me="$mod" -v line="	$mod => ./$rel" '
	/^replace \($/ { inblock = 1 }
	inblock && !done && (/^\)$/ || ($1 > me && $2 == "=>")) { print line; done = 1 }
	inblock && /^\)$/ { inblock = 0 }
	{ print }
	END { if (!done) exit 1 }' "$tree/go.mod" >"$tree/go.mod.new" || { echo "vendor-cores.sh: $tree/go.mod has no replace block" >&2; exit 1; }
mv "$tree/go.mod.new" "$tree/go.mod"
# vendor/modules.txt: the module's block, in sorted position.
block=$(printf '# %s %s => ./%s\n' "$mod" "$version" "$rel"; printf "$mod/%s\n" "${pkgs[@]}")
awk -v block="$block" -v me="$mod" 'BEGIN{done=0} /^# /{ if (!done && $2 > me) { print block; done=1 } } {print} END{ if (!done) print block }' \
	"$tree/vendor/modules.txt" >"$tree/vendor/modules.txt.new" && mv "$tree/vendor/modules.txt.new" "$tree/vendor/modules.txt"

# Bazel BUILD files, as Arktos's hack/update-bazel.sh (gazelle, then kazel)
# writes them for a staging module: a go_library with importmap under
# k8s.io/kubernetes/vendor, deps on //staging/src/... for staging modules
# (Arktos's and this one) and //vendor/... otherwise, the package-srcs and
# all-srcs filegroups, the module root's BUILD (which also keeps vendor/'s
# package-srcs glob from following the symlink, as update-bazel.sh's
# touch does for k8s.io/*), and its all-srcs in staging/src/BUILD.
# verify-bazel (verify.sh) checks them against what update-bazel.sh writes.
blist() { # NAME ITEMS...: a Starlark list attribute in buildifier's layout
	local name=$1; shift
	if [ $# -eq 1 ]; then printf '    %s = ["%s"],\n' "$name" "$1"; return; fi
	printf '    %s = [\n' "$name"; printf '        "%s",\n' "$@"; printf '    ],\n'
}
filegroups() { # ALL-SRCS ITEMS...
	printf 'filegroup(\n    name = "package-srcs",\n    srcs = glob(["**"]),\n    tags = ["automanaged"],\n    visibility = ["//visibility:private"],\n)\n\n'
	printf 'filegroup(\n    name = "all-srcs",\n'
	blist srcs ":package-srcs" "$@"
	printf '    tags = ["automanaged"],\n    visibility = ["//visibility:public"],\n)\n'
}
under() { # A B: package A lies below B ("" is the module root, above all)
	[ -z "$2" ] && return 0
	case $1 in "$2"/*) return 0 ;; *) return 1 ;; esac
}
children() { # DIR: the all-srcs of the packages nearest below DIR ("" is the module root)
	local q r near
	for q in "${pkgs[@]}"; do
		under "$q" "$1" || continue
		near=1
		for r in "${pkgs[@]}"; do
			[ "$r" != "$q" ] && under "$r" "$1" && under "$q" "$r" && near=0
		done
		[ $near = 0 ] || echo "//$rel/$q:all-srcs"
	done
}
# The standard library is what the tree's own gazelle knows as such.
stdlist=$tree/vendor/github.com/bazelbuild/bazel-gazelle/language/go/std_package_list.go
[ -f "$stdlist" ] || { echo "vendor-cores.sh: $stdlist is missing: cannot tell the standard library as Arktos's gazelle does" >&2; exit 1; }
std=$(sed -n 's/^[[:space:]]*"\([^"]*\)": true,$/\1/p' "$stdlist")
for p in "${pkgs[@]}"; do
	ip=$mod/$p
	mapfile -t srcs < <(cd "$s/$p" && ls -1 -- *.go | LC_ALL=C sort)
	ldeps=()
	while read -r imp; do
		grep -qxF "$imp" <<<"$std" && continue
		if [ -d "$tree/staging/src/$imp" ]; then ldeps+=("//staging/src/$imp:go_default_library"); else ldeps+=("//vendor/$imp:go_default_library"); fi
	done < <(cat "$s/$p"/*.go | awk '/^import \(/{b=1; next} b && /^\)/{b=0} b || /^import "/' | grep -o '"[^"]*"' | tr -d '"' | LC_ALL=C sort -u)
	mapfile -t subs < <(children "$p")
	{
		printf 'load("@io_bazel_rules_go//go:def.bzl", "go_library")\n\ngo_library(\n    name = "go_default_library",\n'
		blist srcs "${srcs[@]}"
		printf '    importmap = "k8s.io/kubernetes/vendor/%s",\n    importpath = "%s",\n    visibility = ["//visibility:public"],\n' "$ip" "$ip"
		[ ${#ldeps[@]} -eq 0 ] || blist deps "${ldeps[@]}"
		printf ')\n\n'
		filegroups "${subs[@]}"
	} >"$s/$p/BUILD"
done
mapfile -t tops < <(children "")
filegroups "${tops[@]}" >"$s/BUILD"
# staging/src/BUILD: the module's all-srcs, in kazel's sorted place.
sb=$tree/staging/src/BUILD
awk -v me="        \"//$rel:all-srcs\"," '
	/^        "\/\/staging\/src\// && !done && $0 > me { print me; done = 1 }
	/^    \],$/ && !done && seen { print me; done = 1 }
	/^        ":package-srcs",$/ { seen = 1 }
	{ print }' "$sb" >"$sb.new" && mv "$sb.new" "$sb"
