#!/usr/bin/env bash
# apply.sh ARKTOS_SRC WORK: build Arktos with tpkit (make arktos-patch).
#
# Copies the Arktos tree at ARKTOS_SRC (CentaurusInfra/arktos at 6685f14,
# prepared by make arktos-src) into WORK/src, never writing
# ARKTOS_SRC; makes tpkit's cores a module of the tree (vendor-cores.sh);
# applies the series in
# patches/ as commits (`git am`, which is `git apply` with the patch's
# message: no fuzz, no three-way merge), stopping at the first patch that
# does not apply; runs Arktos's own tests of every package the series touches
# (ARKTOS_TEST=0 skips them); builds kube-apiserver, kubelet,
# kube-proxy, hollow-node (cmd/kubemark), kube-controller-manager,
# kube-scheduler and kubectl into WORK/bin; runs `go mod vendor` in WORK/src, which
# must reproduce tpkit's module (check-vendor.sh, in WORK/vendor); and runs
# Arktos's quick checks on
# ARKTOS_SRC and WORK/src side by side, failing when the series makes one
# fail (verify.sh, in WORK/verify; ARKTOS_VERIFY=0 skips it).
#
# -trimpath keeps the build cache's entries independent of WORK, so a second
# WORK (or the stock build of the same tree) reuses every unchanged package.
set -euo pipefail

src=${1:?usage: apply.sh ARKTOS_SRC WORK}
work=${2:?usage: apply.sh ARKTOS_SRC WORK}
here=$(cd "$(dirname "$0")" && pwd)
grep -q '^module k8s.io/kubernetes' "$src/go.mod" 2>/dev/null || { echo "apply.sh: $src is not an Arktos tree (make arktos-src prepares one)" >&2; exit 2; }
[ -f "$src/pkg/generated/openapi/zz_generated.openapi.go" ] || { echo "apply.sh: $src has no pkg/generated/openapi/zz_generated.openapi.go: prepare the tree with make arktos-src" >&2; exit 2; }
src=$(cd "$src" && pwd)
mkdir -p "$work" && work=$(cd "$work" && pwd)
case "$work/" in "$src"/*) echo "apply.sh: WORK ($work) must not be inside ARKTOS_SRC ($src)" >&2; exit 2 ;; esac

echo "== copying $src to $work/src"
rm -rf "$work/src" "$work/bin" && cp -a "$src" "$work/src"
chmod -R u+w "$work/src"
"$here/vendor-cores.sh" "$work/src"

# A repository of its own, so that the patches' paths are the tree's even
# when WORK sits inside another repository, and the series stays visible as
# commits (export.sh WORK/src writes it back).
cd "$work/src"
git init -q . && git add -A >/dev/null && git -c user.name=tpkit -c user.email=tpkit@localhost commit -qm "Arktos with tpkit's cores vendored" --no-verify
shopt -s nullglob
patches=("$here"/patches/*.patch)
[ ${#patches[@]} -gt 0 ] || { echo "apply.sh: no patches in $here/patches" >&2; exit 1; }
for p in "${patches[@]}"; do
	echo "== git am $(basename "$p")"
	git -c user.name=tpkit -c user.email=tpkit@localhost am -q --whitespace=nowarn "$p" || { echo "apply.sh: $(basename "$p") does not apply to $src (a different Arktos commit? docs/vendoring.md says how to carry the series)" >&2; exit 1; }
done

export GOTOOLCHAIN=local GOFLAGS="-mod=vendor -trimpath"
# The packages the series touches: every folder of a patched .go file
# outside vendor/ (a folder with no tests still gets compiled by go test).
mapfile -t pkgs < <(cat "${patches[@]}" | sed -n 's|^+++ b/\(.*\)/[^/]*\.go$|./\1|p' | grep -v '^./vendor/' | sort -u)
if [ "${ARKTOS_TEST:-1}" != 0 ]; then
	echo "== Arktos's tests of the touched packages: ${pkgs[*]}"
	# Arktos's own tests in pkg/kubelet and pkg/proxy/iptables fail today's
	# vet (int-to-string conversions), hence -vet=off.
	CGO_ENABLED=1 go test -vet=off -count=1 "${pkgs[@]}"
fi

echo "== building into $work/bin"
mkdir -p "$work/bin"
# kube-controller-manager and kube-scheduler carry no patch; the cluster
# lab (test/arktos-cluster) runs them as each TP's controllers, from the
# same tree, and Arktos's kubectl (its --tenant reaches a tenant's pods) as
# an Arktos admin types it.
CGO_ENABLED=0 go build -o "$work/bin/" ./cmd/kube-apiserver ./cmd/kube-proxy ./cmd/kube-controller-manager ./cmd/kube-scheduler ./cmd/kubectl
# The kubelet and the hollow node need cgo (cadvisor's NVML binding, the
# fake docker client).
CGO_ENABLED=1 go build -o "$work/bin/" ./cmd/kubelet
CGO_ENABLED=1 go build -o "$work/bin/hollow-node" ./cmd/kubemark
ls -l "$work/bin"

# `go mod vendor` in the patched tree reproduces tpkit's module as
# vendor-cores.sh laid it out (check-vendor.sh; ARKTOS_VENDOR_CHECK=0 skips it).
if [ "${ARKTOS_VENDOR_CHECK:-1}" != 0 ]; then
	echo "== go mod vendor in $work/src"
	"$here/check-vendor.sh" "$work/src" "$work/vendor"
fi

# Arktos's own quick checks (make quick-verify) on the stock and the patched
# tree, side by side: no check may newly fail (verify.sh; ARKTOS_VERIFY=0
# skips it). Last, so that the binaries are there even when it fails.
if [ "${ARKTOS_VERIFY:-1}" != 0 ]; then
	echo "== Arktos's quick checks, stock ($src) and patched ($work/src)"
	"$here/verify.sh" "$src" "$work/src" "$work/verify"
fi
echo "== ok: Arktos with ${#patches[@]} tpkit patches in $work/src, binaries in $work/bin"
