#!/usr/bin/env bash
# ensure-tools.sh CMD... installs the Debian packages that provide the given
# commands when they are missing, so CI, `make demo`, `make images` and
# `make bench-dns` work on a fresh machine. It only installs as root;
# otherwise it says what to run.
set -euo pipefail

declare -A pkg=(
  [dig]=bind9-dnsutils
  [dnsperf]=dnsperf
  [iptables]=iptables
  [ip]=iproute2
  [make]=make
  [etcd]=etcd-server # hack/arktos-lab.sh, hack/check-deploy.sh
  [curl]=curl
  [openssl]=openssl
  [go1.19]=golang-1.19-go # the cores' oldest Go (test/vendorable), as /usr/lib/go-1.19/bin/go
  # make images (hack/images.sh) and its tests (test/images)
  [buildah]=buildah
  [podman]=podman
  [runc]=runc # podman's default, crun, refuses hybrid cgroup hierarchies
  [mmdebstrap]=mmdebstrap
  [newuidmap]=uidmap
  [python3]=python3
  [kubectl]=kubernetes-client # the kubectl compatibility tests (testbed/faketp, test/multi-tp)
  # the cluster lab (test/arktos-cluster): a real container runtime for Arktos's kubelet
  [dockerd]=docker.io
  [skopeo]=skopeo
  [cni-bridge]=containernetworking-plugins
  [socat]=socat # dockershim's port-forward runs it in the pod's network namespace
  [busybox]=busybox-static # the local cluster's busybox image (hack/cluster.sh)
  # hack/conformance-build.sh: gcc for e2e.test (cgo) and the pause image (static C);
  # dpkg-source and bzip2 to unpack busybox's Debian source package
  [gcc]=gcc
  [dpkg-source]=dpkg-dev
  [bzip2]=bzip2
)
# Tools that are not commands on PATH: where they are installed.
declare -A file=(
  [cni-bridge]=/usr/lib/cni/bridge
)
# have CMD: CMD is on PATH, or (goX.Y) Debian's golang-X.Y-go is installed.
have() {
  [[ -n ${file[$1]:-} ]] && { [[ -x ${file[$1]} ]]; return; }
  command -v "$1" >/dev/null 2>&1 && return 0
  [[ $1 == go1.* ]] && [[ -x /usr/lib/go-${1#go}/bin/go ]]
}
need=()
for cmd in "$@"; do
  have "$cmd" && continue
  p=${pkg[$cmd]:-}
  [[ -n $p ]] || { echo "ensure-tools: no known package provides $cmd" >&2; exit 1; }
  need+=("$p")
done
((${#need[@]})) || exit 0
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-tools: missing ${need[*]}; install with: sudo apt-get install -y ${need[*]}" >&2
  exit 1
fi
echo "ensure-tools: installing ${need[*]}"
DEBIAN_FRONTEND=noninteractive apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
