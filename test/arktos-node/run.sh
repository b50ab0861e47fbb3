#!/usr/bin/env bash
# run.sh ARKTOS_BIN: the node lab (make check-arktos-node). Arktos's
# kubelet (hollow-node) and kube-proxy write mounts and iptables rules, so
# everything runs inside a network namespace made here: a loopback, and a
# veth pair with both ends inside it. lab0 has the address the API servers
# advertise (Arktos's kube-proxy waits for the "kubernetes" Endpoints) and
# takes the default route (the kubelet picks its node address from it); its
# peer has no address, so what is sent there is dropped and nothing leaves
# the namespace. (This kernel has no dummy devices.)
#
# `ip netns exec` gives the lab a mount namespace of its own (with / a slave
# of the host's, so nothing mounted inside shows outside). The lab mounts
# tmpfs there on /var/lib, /var/log and /run: hollow-node's dockershim keeps
# sandbox checkpoints in /var/lib/dockershim and its socket in /run, which
# would otherwise land on the host and outlive the lab. `ip netns exec` gives the
# lab its own mount namespace too. The namespace, its processes and the
# built test go at exit.
set -euo pipefail
bin=$(cd "${1:?usage: run.sh ARKTOS_BIN}" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
[ "$(id -u)" = 0 ] || { echo "run.sh: the node lab needs root (network namespaces, iptables)" >&2; exit 2; }
"$root/hack/ensure-tools.sh" iptables ip etcd curl openssl python3

ns=${LAB_NS:-tpkit-node-$$}
tmp=$(mktemp -d /tmp/tpkit-node-lab.XXXXXX)
. "$root/hack/lab-netns.sh"
lab_netns_start "$ns" "$tmp"

echo "== building the lab (go test -c -tags arktoslab ./test/arktos-node)"
(cd "$root" && go test -c -tags arktoslab -o "$tmp/arktos-node.test" ./test/arktos-node)
echo "== running it in network namespace $ns"
cd "$root/test/arktos-node"
ip netns exec "$ns" bash -c 'for d in /var/lib /var/log /run; do mount -t tmpfs tpkit-node-lab "$d" || exit 1; done; exec "$@"' lab \
	env AWS_EC2_METADATA_DISABLED=true ADVERTISE=10.254.0.1 ARKTOS_BIN="$bin" \
	TPKIT_NODE_LAB="$ns" LAB_SH="${LAB_SH:-$root/hack/arktos-lab.sh}" \
	"$tmp/arktos-node.test" -test.v -test.count=1 -test.timeout "${LAB_TIMEOUT:-10m}"
