#!/usr/bin/env bash
# check.sh ARKTOS_SRC [WORKDIR]: vendor tpkit's cores into a copy of an
# Arktos tree (CentaurusInfra/arktos at 6685f14), add the glue that
# docs/vendoring.md describes (testdata/, written for tpkit, not Arktos code)
# and build and test it with Arktos's own build settings. The copy keeps
# Arktos's go.mod "go 1.13": the cores must compile as vendored code there.
#
# The cores are put under vendor/ by hand, as `go mod vendor` would place
# them (it cannot run offline: some of Arktos's modules are not on the
# module proxy). What a real `go mod vendor` changes is in docs/vendoring.md.
set -euo pipefail

src=${1:?usage: check.sh ARKTOS_SRC [WORKDIR]}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
work=${2:-$(mktemp -d /tmp/arktos-vendor.XXXXXX)}
[ -f "$src/go.mod" ] && grep -q '^module k8s.io/kubernetes' "$src/go.mod" || { echo "check.sh: $src is not an Arktos tree" >&2; exit 2; }

echo "== copying $src to $work/src"
rm -rf "$work/src" && mkdir -p "$work" && cp -a "$src" "$work/src"
cd "$work/src"

# The cores: test/vendorable/cores_test.go is the one list.
mapfile -t cores < <(sed -n 's/^[[:space:]]*{Path: "\(pkg[^"]*\)".*/\1/p' "$root/test/vendorable/cores_test.go")
[ ${#cores[@]} -gt 0 ] || { echo "check.sh: no cores found in test/vendorable/cores_test.go" >&2; exit 1; }
echo "== vendoring ${cores[*]}"
v=vendor/github.com/tpkit-dev/tpkit
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
	vendor/modules.txt > vendor/modules.txt.new && mv vendor/modules.txt.new vendor/modules.txt
sed -i '0,/^require (/s//require (\n\tgithub.com\/tpkit-dev\/tpkit v0.0.0/' go.mod

echo "== adding the glue (hack/arktos-vendor/testdata)"
cp -r "$here/testdata/." .

export GOTOOLCHAIN=local GOFLAGS=-mod=vendor
echo "== go vet of the glue"
go vet ./plugin/pkg/admission/systemdaemonset/ ./pkg/kubelet/kubeclientmanager/ ./pkg/proxy/
# Arktos's own tests in pkg/kubelet and pkg/proxy/iptables fail today's vet
# (int-to-string conversions), so their tests run with -vet=off.
echo "== tests: Arktos's own and the glue's"
go test ./plugin/pkg/admission/systemdaemonset/ ./pkg/kubelet/kubeclientmanager/ ./pkg/proxy/
go test -vet=off ./pkg/proxy/iptables/
go test -vet=off -run 'TestTenantPodDNS' ./pkg/kubelet/
echo "== building kube-apiserver, kube-proxy and kubelet into $work/bin"
CGO_ENABLED=0 go build -o "$work/bin/" ./cmd/kube-apiserver ./cmd/kube-proxy
go build -o "$work/bin/" ./cmd/kubelet

# The rebuilt API server, live: tpkit's core is its SystemDaemonSet plugin.
lab=${LAB_SH:-$root/../shared/arktos/lab.sh}
if [ -f "$lab" ]; then
	echo "== one TP from the rebuilt kube-apiserver ($lab)"
	trap 'ARKTOS_BIN="$work/bin" bash "$lab" down "$work/lab" >/dev/null 2>&1 || true' EXIT
	ARKTOS_BIN="$work/bin" bash "$lab" up 1 "$work/lab"
	k() { kubectl --kubeconfig="$work/lab/kc/tp1.kubeconfig" "$@"; }
	k create --raw /api/v1/tenants -f - >/dev/null <<<'{"apiVersion":"v1","kind":"Tenant","metadata":{"name":"acme"},"spec":{"storageClusterId":"0"}}'
	k create --raw /api/v1/tenants/acme/namespaces -f - >/dev/null <<<'{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"web"}}'
	ds='{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"ds"},"spec":{"selector":{"matchLabels":{"app":"ds"}},"template":{"metadata":{"labels":{"app":"ds"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}'
	want='daemonsets.apps "ds" is forbidden: only system tenant is allowed to have DaemonSet'
	if out=$(k create --raw /apis/apps/v1/tenants/acme/namespaces/web/daemonsets -f - <<<"$ds" 2>&1); then
		echo "check.sh: a DaemonSet in tenant acme was admitted" >&2; exit 1
	fi
	grep -qF "$want" <<<"$out" || { echo "check.sh: tenant acme's DaemonSet: got $out, want $want" >&2; exit 1; }
	k create --raw /apis/apps/v1/tenants/system/namespaces/default/daemonsets -f - >/dev/null <<<"$ds"
	echo "refused in acme ($want), admitted in system"
else
	echo "== no lab.sh at $lab: the live check of the API server is skipped"
fi
echo "== ok: the cores build and pass in $work/src (go directive: $(sed -n 's/^go //p' go.mod))"
