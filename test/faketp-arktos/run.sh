#!/usr/bin/env bash
# run.sh ARKTOS_BIN: stock (or patched) Arktos kube-proxy and hollow-node
# against fake-tp (make check-faketp-arktos). They write iptables rules and
# mounts, so everything runs inside a network namespace of the lab's own
# (hack/lab-netns.sh: fake-tp's TPs listen on, and advertise, its
# 10.254.0.1). `ip netns exec` gives the lab its own mount namespace, where
# tmpfs goes on /var/lib, /var/log and /run, and TMPDIR is under /run: what
# hollow-node writes stays in the lab. FAKE_TP is the fake-tp to run (built
# from this checkout by default). The namespace, its processes and the
# built binaries go at exit.
set -euo pipefail
bin=$(cd "${1:?usage: run.sh ARKTOS_BIN}" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || { echo "run.sh: the lab needs root (network namespaces, iptables)" >&2; exit 2; }
"$root/hack/ensure-tools.sh" iptables ip etcd curl openssl python3

ns=tpkit-faketp-arktos-$$
tmp=$(mktemp -d /tmp/tpkit-faketp-arktos.XXXXXX)
. "$root/hack/lab-netns.sh"
lab_netns_start "$ns" "$tmp"

echo "== building the lab (go test -c -tags arktoslab ./test/faketp-arktos)${FAKE_TP:+, with fake-tp $FAKE_TP}"
fake_tp=${FAKE_TP:-$tmp/fake-tp}
[ -n "${FAKE_TP:-}" ] || (cd "$root" && go build -o "$fake_tp" ./cmd/fake-tp)
(cd "$root" && go test -c -tags arktoslab -o "$tmp/faketp-arktos.test" ./test/faketp-arktos)
echo "== running it in network namespace $ns"
cd "$root/test/faketp-arktos"
ip netns exec "$ns" bash -c 'for d in /var/lib /var/log /run; do mount -t tmpfs tpkit-faketp-arktos "$d" || exit 1; done; mkdir /run/tmp; exec "$@"' lab \
	env AWS_EC2_METADATA_DISABLED=true TMPDIR=/run/tmp ADVERTISE=10.254.0.1 ARKTOS_BIN="$bin" FAKE_TP="$fake_tp" \
	TPKIT_FAKETP_ARKTOS_LAB="$ns" LAB_SH="${LAB_SH:-$root/hack/arktos-lab.sh}" \
	"$tmp/faketp-arktos.test" -test.v -test.count=1 -test.timeout "${LAB_TIMEOUT:-15m}"
