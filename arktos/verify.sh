#!/usr/bin/env bash
# verify.sh STOCK_TREE PATCHED_TREE [OUT]: Arktos's own quick checks (the
# QUICK_PATTERNS of hack/make-rules/verify.sh, what `make quick-verify` runs
# on Arktos's pull requests) on a stock Arktos tree and on the patched tree,
# side by side. Fails when a check fails on the patched tree that passes on
# the stock tree, or when a check that already fails on the stock tree
# reports something new on the patched tree (a new file without a license
# header, say: most of these checks already fail on stock Arktos 6685f14, and
# a plain PASS/FAIL would hide what the series adds to them).
#
# Neither tree is written. Each is copied to OUT/{stock,patched}/go/src/
# k8s.io/kubernetes, the GOPATH layout Arktos's CI checks out into (some
# scripts, verify-api-groups for one, depend on it), as a fresh git
# repository (verify-spelling and verify-pkg-names read `git ls-files`/`git
# grep`, verify-readonly-packages diffs against the base): the stock copy is
# one commit; the patched copy is that same commit as its base
# (PULL_BASE_SHA) and the patched tree as one commit on top, the way a pull
# request looks to Arktos's CI. pkg/generated/openapi/zz_generated.openapi.go
# is left out of both: Arktos does not commit it (make arktos-src generates
# it), and verify-bazel deletes it anyway.
#
# The tools the scripts `go install` from Arktos's vendor/ (gazelle,
# buildozer, kazel for verify-bazel; misspell for verify-spelling) are built
# once from the Go module proxy at the versions the stock tree's
# vendor/modules.txt pins, with its go.mod's replace pins for their
# dependencies, into $TPKIT_CACHE (default ~/.cache/tpkit/arktos-verify); a
# `go` shim first on PATH answers those `go install`s by copying the cached
# binary, and runs the real go for everything else (importverifier is
# Arktos's own cmd/importverifier and is built from each tree by the script).
#
# Output: OUT/<tree>/<check>.log per run; a table on stdout; OUT/new-findings
# lists, per check, the lines only the patched tree's output has (paths
# normalized to the tree root).
set -euo pipefail

stock_src=${1:?usage: verify.sh STOCK_TREE PATCHED_TREE [OUT]}
patched_src=${2:?usage: verify.sh STOCK_TREE PATCHED_TREE [OUT]}
out=${3:-${TMPDIR:-/tmp}/tpkit-arktos-verify}
here=$(cd "$(dirname "$0")" && pwd)
for t in "$stock_src" "$patched_src"; do
	grep -q '^module k8s.io/kubernetes' "$t/go.mod" 2>/dev/null || { echo "verify.sh: $t is not an Arktos tree" >&2; exit 2; }
done
stock_src=$(cd "$stock_src" && pwd)
patched_src=$(cd "$patched_src" && pwd)
mkdir -p "$out" && out=$(cd "$out" && pwd)
for t in "$stock_src" "$patched_src"; do
	case "$out/" in "$t"/*) echo "verify.sh: OUT ($out) must not be inside $t" >&2; exit 2 ;; esac
done
cache=${TPKIT_CACHE:-$HOME/.cache/tpkit/arktos-verify}
export GOTOOLCHAIN=local
realgo=$(command -v go) || { echo "verify.sh: no go on PATH" >&2; exit 2; }

# The quick set, as hack/make-rules/verify.sh names it (QUICK_PATTERNS).
checks=(api-groups bazel boilerplate vendor-licenses gofmt imports pkg-names readonly-packages spelling
	staging-client-go staging-meta-files test-featuregates test-images test-owners)
# ARKTOS_VERIFY_CHECKS="gofmt spelling": only these (while working on one).
if [ -n "${ARKTOS_VERIFY_CHECKS:-}" ]; then read -r -a checks <<<"$ARKTOS_VERIFY_CHECKS"; fi

# --- tools -------------------------------------------------------------
# name:package, and the module whose version the stock tree pins.
tools=(gazelle:github.com/bazelbuild/bazel-gazelle/cmd/gazelle:github.com/bazelbuild/bazel-gazelle
	buildozer:github.com/bazelbuild/buildtools/buildozer:github.com/bazelbuild/buildtools
	kazel:k8s.io/repo-infra/cmd/kazel:k8s.io/repo-infra
	misspell:github.com/client9/misspell/cmd/misspell:github.com/client9/misspell)
build_tools() {
	local mods="" t name pkg mod v
	for t in "${tools[@]}"; do
		IFS=: read -r name pkg mod <<<"$t"
		v=$(awk -v m="$mod" '$1 == "#" && $2 == m {print $3; exit}' "$stock_src/vendor/modules.txt")
		[ -n "$v" ] || { echo "verify.sh: $stock_src/vendor/modules.txt pins no $mod" >&2; exit 1; }
		mods+="	$mod $v"$'\n'
	done
	# Arktos's replace pins, minus its local (staging) ones: the tools'
	# dependencies resolve to the versions Arktos vendors.
	local replaces
	replaces=$(sed -n '/^replace (/,/^)/p' "$stock_src/go.mod" | grep '=>' | grep -v '=> *\.')
	local key
	key=$(printf '%s\n%s\n%s\n' "$mods" "$replaces" "$("$realgo" env GOVERSION)" | sha256sum | cut -c1-16)
	tooldir=$cache/$key
	if [ -x "$tooldir/bin/misspell" ] && [ -x "$tooldir/bin/gazelle" ] && [ -x "$tooldir/bin/kazel" ] && [ -x "$tooldir/bin/buildozer" ]; then
		echo "== tools: cached in $tooldir/bin"
		return
	fi
	echo "== tools: building from the module proxy into $tooldir/bin"
	printf '%s' "$mods" | sed 's/^/   /'
	rm -rf "$tooldir.tmp" && mkdir -p "$tooldir.tmp"
	{
		printf 'module tpkit.local/arktos-verify-tools\n\ngo 1.13\n\nrequire (\n%s)\n\nreplace (\n%s\n)\n' "$mods" "$replaces"
	} >"$tooldir.tmp/go.mod"
	{
		printf '// +build tools\n\npackage tools\n\nimport (\n'
		for t in "${tools[@]}"; do IFS=: read -r name pkg mod <<<"$t"; printf '\t_ "%s"\n' "$pkg"; done
		printf ')\n'
	} >"$tooldir.tmp/tools.go"
	local pkgs=()
	for t in "${tools[@]}"; do IFS=: read -r name pkg mod <<<"$t"; pkgs+=("$pkg"); done
	(cd "$tooldir.tmp" && GOFLAGS=-mod=mod "$realgo" mod tidy && GOFLAGS=-mod=mod GOBIN="$tooldir.tmp/bin" nice -n 10 "$realgo" install "${pkgs[@]}")
	rm -rf "$tooldir" && mv "$tooldir.tmp" "$tooldir"
}
build_tools

# The go shim: `go install` of exactly the cached tools (by any of the import
# paths Arktos's scripts use, k8s.io/kubernetes/vendor/... included) copies
# them to GOBIN (else GOPATH's first bin); anything else is the real go.
shim=$out/shim
mkdir -p "$shim"
cat >"$shim/go" <<EOF
#!/usr/bin/env bash
# written by tpkit's arktos/verify.sh
if [ "\${1:-}" = install ] && [ \$# -ge 2 ]; then
	bins=()
	for a in "\${@:2}"; do
		case "\$a" in
		-*) bins=(); break ;;
		*/bazel-gazelle/cmd/gazelle) bins+=(gazelle) ;;
		*/bazelbuild/buildtools/buildozer) bins+=(buildozer) ;;
		*/repo-infra/cmd/kazel) bins+=(kazel) ;;
		*/client9/misspell/cmd/misspell) bins+=(misspell) ;;
		*) bins=(); break ;;
		esac
	done
	if [ \${#bins[@]} -gt 0 ]; then
		gobin=\${GOBIN:-\$($realgo env GOPATH | cut -d: -f1)/bin}
		mkdir -p "\$gobin"
		for b in "\${bins[@]}"; do cp "$tooldir/bin/\$b" "\$gobin/\$b"; done
		exit 0
	fi
fi
exec $realgo "\$@"
EOF
chmod +x "$shim/go"
# The make shim: verify-imports runs `make -C KUBE_ROOT WHAT=cmd/importverifier`,
# whose generated_files prerequisite first runs Arktos's code generators
# (deepcopy-gen, conversion-gen, openapi-gen, ...) over the whole tree with a
# build cache of its own in _output: tens of minutes per tree here, for a
# tool that imports only the standard library. The shim builds the tree's
# own cmd/importverifier where find-binary looks (_output/bin) with the
# usual build cache; any other make is the real make.
realmake=$(command -v make || echo make)
gocache=$("$realgo" env GOCACHE)
cat >"$shim/make" <<EOF2
#!/usr/bin/env bash
# written by tpkit's arktos/verify.sh
if [ \$# -eq 3 ] && [ "\$1" = -C ] && [ "\$3" = WHAT=cmd/importverifier ]; then
	cd "\$2" && mkdir -p _output/bin && GOCACHE=$gocache GOFLAGS=-mod=vendor GO111MODULE=on exec $realgo build -o _output/bin/importverifier ./cmd/importverifier
fi
exec $realmake "\$@"
EOF2
chmod +x "$shim/make"

# Modules of Arktos's graph that the module proxy refuses: their go.mod as a
# file proxy behind it (GOPROXY "|": the next one on any error). Only
# modules without a go.mod of their own, whose go.mod the go command
# synthesizes as a bare module line; go.sum's /go.mod hash checks it.
# verify-vendor-licenses lists the module graph (go list -m all).
fallback=$cache/goproxy
for m in vbom.ml/util@v0.0.0-20160121211510-db5cfe13f5cc; do
	mkdir -p "$fallback/${m%@*}/@v"
	printf 'module %s\n' "${m%@*}" >"$fallback/${m%@*}/@v/${m#*@}.mod"
	echo "${m#*@}" >"$fallback/${m%@*}/@v/list"
done
gomodcache=$("$realgo" env GOMODCACHE)
goproxy="$("$realgo" env GOPROXY | sed 's/,direct$//; s/,off$//')|file://$fallback"

# --- the two copies ----------------------------------------------------
# gc.auto=0: an automatic gc packing objects in the background would race the
# scripts that copy the tree (verify-bazel's cp -a).
gitq() { git -c user.name=tpkit -c user.email=tpkit@localhost -c core.autocrlf=false -c gc.auto=0 -c maintenance.auto=false "$@"; }
copy_tree() { # SRC DEST
	rm -rf "$2" && mkdir -p "$(dirname "$2")"
	nice -n 10 cp -a "$1" "$2"
	chmod -R u+w "$2"
	rm -rf "$2/.git" "$2/_output" "$2/_tmp" "$2/pkg/generated/openapi/zz_generated.openapi.go"
}
stock=$out/stock/go/src/k8s.io/kubernetes
patched=$out/patched/go/src/k8s.io/kubernetes
echo "== copying the trees into $out"
copy_tree "$stock_src" "$stock"
copy_tree "$patched_src" "$patched"
(cd "$stock" && gitq init -q . && git config gc.auto 0 && git config maintenance.auto false && gitq add -A && gitq commit -qm "Arktos (stock)" --no-verify)
# The patched copy: the stock commit as its base, then the patched tree.
(cd "$patched" && gitq init -q . && git config gc.auto 0 && git config maintenance.auto false && gitq --work-tree="$stock" add -A && gitq commit -qm "Arktos (stock)" --no-verify &&
	gitq reset -q && gitq add -A && gitq commit -qm "Arktos with tpkit's series" --no-verify)
base_stock=$(git -C "$stock" rev-parse HEAD)
base_patched=$(git -C "$patched" rev-parse HEAD~1)
[ "$(git -C "$stock" rev-parse 'HEAD^{tree}')" = "$(git -C "$patched" rev-parse 'HEAD~1^{tree}')" ] || { echo "verify.sh: internal error: the two base commits differ" >&2; exit 1; }

# --- running -------------------------------------------------------------
# Why a check cannot say anything here, the same on both trees; empty when it
# can run.
not_runnable() { # TREE CHECK
	[ -f "$1/hack/verify-$2.sh" ] || { echo "no hack/verify-$2.sh in Arktos 6685f14 (verify.sh lists it, ls finds nothing)"; return; }
	case $2 in
	test-owners) command -v python3 >/dev/null || echo "needs python3" ;;
	esac
}
tab=$'\t'
run_check() { # WHICH(stock|patched) CHECK
	local tree base log rc before f
	if [ "$1" = stock ]; then tree=$stock base=$base_stock; else tree=$patched base=$base_patched; fi
	log=$out/$1/$2.log
	# hack/update-vendor-licenses.sh writes /tmp/Godeps.LICENSES.<pid> and
	# leaves it when it fails: remove what this check leaves there.
	before=$(ls /tmp/Godeps.LICENSES.* 2>/dev/null || true)
	(cd "$tree" && env PATH="$shim:$PATH" GOPATH="$out/$1/go" GOMODCACHE="$gomodcache" GOPROXY="$goproxy" PULL_BASE_SHA="$base" KUBE_VERIFY_GIT_BRANCH=master \
		GOFLAGS= GO111MODULE= KUBE_ROOT= GOBIN= timeout "${ARKTOS_VERIFY_TIMEOUT:-1800}" nice -n 10 bash "hack/verify-$2.sh") >"$log" 2>&1 && rc=0 || rc=$?
	for f in /tmp/Godeps.LICENSES.*; do
		if [ -e "$f" ] && ! grep -qxF "$f" <<<"$before"; then rm -f "$f"; fi
	done
	# the same text for the same finding in either tree: paths, dates, and
	# line numbers (hunk headers, file:line:col), which a patch shifts in a
	# file that already has findings on stock
	sed -e "s|$out/$1/go/src/k8s.io/kubernetes|KUBE_ROOT|g" -e "s|$out/$1/go|GOPATH|g" \
		-e 's|/tmp/verify-bazel\.[A-Za-z0-9]*/go/src/k8s.io/kubernetes|TMPROOT|g' \
		-e 's|_tmp/kube-vendor-licenses\.[A-Za-z0-9]*|_tmp/LICENSES|g' \
		-e "s|^\([-+]\{3\}\) \([^$tab]*\)$tab.*|\1 \2|" \
		-e 's|^[0-9]\{4\}/[0-9][0-9]/[0-9][0-9] [0-9:]\{8\} ||' \
		-e '/^@@ .* @@/d' -e 's|:[0-9]\{1,\}:\([0-9]\{1,\}:\)\{0,1\}|:N:|g' \
		-e "s|$base||g" "$log" >"$log.norm"
	return $rc
}

declare -A st_stock st_patched
newfail=() newfind=()
: >"$out/new-findings"
for c in "${checks[@]}"; do
	why=$(not_runnable "$stock" "$c")
	if [ -n "$why" ]; then
		st_stock[$c]="n/a" st_patched[$c]="n/a"
		echo "$c: not runnable here: $why" >>"$out/not-runnable"
		continue
	fi
	for w in stock patched; do
		s=$(date +%s)
		if run_check "$w" "$c"; then r=PASS; else r=FAIL; fi
		echo "   $c on $w: $r ($(( $(date +%s) - s ))s, $out/$w/$c.log)"
		if [ $w = stock ]; then st_stock[$c]=$r; else st_patched[$c]=$r; fi
	done
	if [ "${st_patched[$c]}" = FAIL ]; then
		if [ "${st_stock[$c]}" = PASS ]; then
			newfail+=("$c")
		fi
		# lines only the patched run printed
		new=$(LC_ALL=C comm -13 <(LC_ALL=C sort -u "$out/stock/$c.log.norm") <(LC_ALL=C sort -u "$out/patched/$c.log.norm"))
		if [ -n "$new" ]; then
			[ "${st_stock[$c]}" = PASS ] || newfind+=("$c")
			{ echo "=== $c"; echo "$new"; } >>"$out/new-findings"
		fi
	fi
done

echo
printf '%-22s %-6s %-8s %s\n' check stock patched note
for c in "${checks[@]}"; do
	note=""
	case " ${newfail[*]} " in *" $c "*) note="NEW FAILURE" ;; esac
	case " ${newfind[*]} " in *" $c "*) note="fails on stock too; NEW FINDINGS on patched" ;; esac
	[ "${st_stock[$c]}" = n/a ] && note="not runnable here: $(sed -n "s/^$c: not runnable here: //p" "$out/not-runnable")"
	[ "$c" = test-owners ] && note="${note:+$note; }verify.sh's EXCLUDED_PATTERNS skip it in make quick-verify"
	printf '%-22s %-6s %-8s %s\n' "$c" "${st_stock[$c]}" "${st_patched[$c]}" "$note"
done
if [ ${#newfail[@]} -gt 0 ] || [ ${#newfind[@]} -gt 0 ]; then
	echo
	echo "verify.sh: the series breaks Arktos's quick checks: ${newfail[*]} ${newfind[*]}; what is new is in $out/new-findings:" >&2
	awk '/^=== /{n=0} n++ < 40' "$out/new-findings" >&2
	exit 1
fi
echo "== ok: no quick check fails or finds more on the patched tree than on the stock tree"
