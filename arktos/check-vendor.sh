#!/usr/bin/env bash
# check-vendor.sh TREE [OUT]: show that `go mod vendor` in the patched Arktos
# tree TREE reproduces tpkit's vendored module (vendor-cores.sh's work): its
# block in vendor/modules.txt, line for line, and every file it vendors, byte
# for byte (the symlink vendor/github.com/tpkit-dev/tpkit -> staging is what
# hack/update-vendor.sh's symlink step, patched by the series, then writes).
#
# TREE is not written: the run is in OUT/src (default $TMPDIR/tpkit-arktos-
# vendor), a hard-linked copy in which go.mod, go.sum and vendor/modules.txt
# are copies of their own (go writes those in place; `go mod vendor` removes
# vendor/ before writing it, so the links to TREE's files are only unlinked).
#
# Three things stock Arktos 6685f14 needs before today's go can vendor it at
# all, none of them tpkit's, are done in that copy, and reported:
#   - go.sum lacks the h1 hashes of a few vendored modules' zips (Go 1.13 did
#     not need them; Go >= 1.16 does): they are added from `go mod download`.
#   - a vendored module the proxy no longer serves (vbom.ml/util) is served
#     from a file proxy holding a zip of its vendored copy, its go.sum hash
#     dropped (that zip is not the original one) and the checksum database
#     skipped for it.
#   - `go mod vendor -e`: sample-apiserver imports its generated openapi
#     package, which Arktos does not commit; the errors -e passes over are
#     listed, and tpkit's packages must not be among them.
set -euo pipefail
tree=${1:?usage: check-vendor.sh TREE [OUT]}
out=${2:-${TMPDIR:-/tmp}/tpkit-arktos-vendor}
mod=github.com/tpkit-dev/tpkit
grep -q '^module k8s.io/kubernetes' "$tree/go.mod" 2>/dev/null || { echo "check-vendor.sh: $tree is not an Arktos tree" >&2; exit 2; }
grep -q "^# $mod " "$tree/vendor/modules.txt" || { echo "check-vendor.sh: $tree does not vendor $mod (vendor-cores.sh)" >&2; exit 2; }
tree=$(cd "$tree" && pwd)
mkdir -p "$out" && out=$(cd "$out" && pwd)
case "$out/" in "$tree"/*) echo "check-vendor.sh: OUT ($out) must not be inside $tree" >&2; exit 2 ;; esac
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
realgo=$(command -v go)

s=$out/src
echo "== a linked copy of $tree in $s"
rm -rf "$s" "$out/proxy" && cp -al "$tree" "$s"
for f in go.mod go.sum vendor/modules.txt; do cp --remove-destination "$tree/$f" "$s/$f"; done
cd "$s"

# go.sum: every vendored module, downloaded once (the module cache keeps
# them); the zip hash of each that go.sum lacks is added.
proxy=$out/proxy
nosum=() nosumv=()
mapfile -t mods < <(awk '$1 == "#" && $3 ~ /^v/ { if ($4 == "=>") { if ($6 ~ /^v/) print $5 "@" $6 } else print $2 "@" $3 }' vendor/modules.txt)
echo "== go mod download: ${#mods[@]} vendored modules"
# One module at a time: go stops a batch at the first checksum mismatch.
: >"$out/download.tsv"
for m in "${mods[@]}"; do
	if j=$(go mod download -json "$m" 2>"$out/download.err"); then
		jq -r '[.Path, .Version, (.Sum // "-"), (.Error // "-" | gsub("\\s+"; " "))] | @tsv' <<<"$j" >>"$out/download.tsv"
	else
		printf '%s\t%s\t-\t%s\n' "${m%@*}" "${m#*@}" "$( (jq -r '.Error // empty' <<<"$j" 2>/dev/null; cat "$out/download.err") | tr -s '\n\t ' ' ' | cut -c1-200)" >>"$out/download.tsv"
	fi
done
while IFS=$'\t' read -r path version sum err; do
	if [ "$err" = - ]; then
		grep -q "^$path $version h1:" go.sum && continue
		echo "   go.sum: adding $path $version $sum"
		echo "$path $version $sum" >>go.sum
		continue
	fi
	echo "   $path $version: not from the module proxy ($err); serving the vendored copy"
	base=$(awk -v p="$path" '$1 == "#" && ($5 == p || $2 == p) {print $2; exit}' vendor/modules.txt)
	[ -d "$tree/vendor/$base" ] || { echo "check-vendor.sh: no vendored copy of $path in $tree/vendor/$base" >&2; exit 1; }
	d=$proxy/$path/@v
	mkdir -p "$d" "$out/zip/$path@$version"
	cp -rL "$tree/vendor/$base/." "$out/zip/$path@$version/"
	find "$out/zip/$path@$version" -name BUILD -delete
	(cd "$out/zip" && rm -f "$d/$version.zip" && zip -qr "$d/$version.zip" "$path@$version")
	printf 'module %s\n' "$path" >"$d/$version.mod"
	printf '{"Version":"%s"}\n' "$version" >"$d/$version.info"
	echo "$version" >>"$d/list"
	sed -i "\|^$path $version h1:|d" go.sum
	nosum+=("$path")
	nosumv+=("$path@$version")
done <"$out/download.tsv"
[ "$(wc -l <"$out/download.tsv")" -eq ${#mods[@]} ] || { echo "check-vendor.sh: go mod download answered for $(wc -l <"$out/download.tsv") of ${#mods[@]} modules" >&2; exit 1; }
if [ ${#nosum[@]} -gt 0 ]; then
	GOPROXY="$(go env GOPROXY | sed 's/,direct$//; s/|direct$//')|file://$proxy"
	GONOSUMDB=$(IFS=,; echo "${nosum[*]}")
	export GOPROXY GONOSUMDB
	go mod download "${nosumv[@]}"
fi

echo "== go mod vendor -e ($("$realgo" env GOVERSION))"
go mod vendor -e >"$out/vendor.log" 2>&1 || { cat "$out/vendor.log" >&2; echo "check-vendor.sh: go mod vendor failed" >&2; exit 1; }
if [ -s "$out/vendor.log" ]; then
	echo "   errors go mod vendor -e passed over ($out/vendor.log):"
	grep -v '^go: downloading' "$out/vendor.log" | sed 's/^/     /' | head -20
	if grep -q "$mod" "$out/vendor.log"; then echo "check-vendor.sh: go mod vendor reports errors in $mod's packages" >&2; exit 1; fi
fi

fail=0
block() { awk -v m="$mod" '$1 == "#" {on = ($2 == m)} on' "$1"; }
if diff <(block "$tree/vendor/modules.txt") <(block vendor/modules.txt) >"$out/modules.diff"; then
	echo "   modules.txt: $mod's block is the same ($(block vendor/modules.txt | wc -l) lines)"
else
	echo "FAIL modules.txt: $mod's block differs:"; sed 's/^/     /' "$out/modules.diff"; fail=1
fi
if ! cmp -s "$tree/go.mod" go.mod; then echo "FAIL go.mod: go mod vendor changed it:"; diff "$tree/go.mod" go.mod | sed 's/^/     /'; fail=1; fi
# Every file go mod vendor wrote for the module is the tree's; every file
# of the tree's module that go would vendor (Go files, and the LICENSE) it
# wrote. BUILD files and the module's go.mod are not vendored by go.
v=vendor/$mod
[ -d "$v" ] && [ ! -L "$v" ] || { echo "FAIL go mod vendor wrote no $v"; exit 1; }
n=0
while read -r f; do
	n=$((n + 1))
	cmp -s "$f" "$tree/$f" || { echo "FAIL $f differs from the tree's"; fail=1; }
done < <(find "$v" -type f | LC_ALL=C sort)
while read -r f; do
	[ -f "$f" ] || { echo "FAIL $f: in the tree, not vendored by go mod vendor"; fail=1; }
done < <(cd "$tree" && find -L "$v" -type f \( -name '*.go' -o -name LICENSE \) | LC_ALL=C sort)
[ $fail = 0 ] || { echo "check-vendor.sh: go mod vendor does not reproduce $mod in $tree" >&2; exit 1; }
echo "   $v: go mod vendor wrote the same $n files"
echo "== ok: go mod vendor reproduces $mod ($(awk -v m="$mod" '$1 == "#" && $2 == m {print $3}' vendor/modules.txt))"
