#!/usr/bin/env bash
# arktos-lab.sh: real Arktos tenant partitions (TPs) on loopback, for the
# checks and labs that run tpkit against Arktos itself rather than fake-tp
# (make check-arktos, check-deploy, check-arktos-node, check-faketp-arktos,
# check-arktos-cluster).
#
#   hack/arktos-lab.sh up N DIR   start tp1..tpN, their files in DIR
#   hack/arktos-lab.sh down DIR   stop what `up` started in DIR
#
# Each TP is an etcd of its own and an Arktos kube-apiserver on it, API only:
# the insecure port on 127.0.0.1 (every caller a system admin), Arktos's
# TenantExists admission on, no service accounts. With
# KCM=1 each TP also gets its kube-controller-manager (tenant, namespace,
# service-account, endpoint and garbage-collector controllers) and the
# ServiceAccount admission plugin, so a namespace's pods wait for its default
# service account and Arktos writes the Endpoints of selector services.
#
# Environment:
#   ARKTOS_BIN  the folder holding Arktos's kube-apiserver (and, for KCM=1,
#               kube-controller-manager): a build of Arktos 6685f14, stock
#               (make arktos-src STOCK_BIN=DIR) or patched (WORK/bin of make
#               arktos-patch). The binaries never go into the repository.
#   KCM=1       start the controller managers too.
#   ADVERTISE   the address the API servers advertise. In a network namespace
#               with no default route set it to an address of the namespace
#               (the labs use lab0's, hack/lab-netns.sh): an API server needs
#               one to publish its "kubernetes" Endpoints, which Arktos's
#               kubelet and kube-proxy wait for.
#   RESOURCE_PROVIDERS  comma-separated kubeconfig files of resource
#               partitions, passed to every API server as --resource-providers
#               (a patched one: make arktos-patch): it finds the kubelet of a
#               pod (logs, exec, attach, port-forward) on their nodes, as in a
#               scale-out cluster, where nodes register with those only.
#   INSECURE_BIND  the address of the insecure port (default 127.0.0.1); the
#               local cluster (hack/cluster.sh) gives 0.0.0.0, so that its
#               nodes and pods reach the API servers over its bridge.
#   APISERVER_FLAGS  more flags for every kube-apiserver, split on spaces.
#
# What `up` leaves in DIR, which callers read:
#   DIR/kc/tpK.kubeconfig  a kubeconfig for TP K (context tpK, no credentials)
#   DIR/tpK/url            TP K's base URL, http://127.0.0.1:PORT
#   DIR/tpK/*.log          etcd.log, apiserver.log, kcm.log
#   DIR/pids               one pid a line, in start order: tp1's etcd, tp1's
#                          kube-apiserver, tp2's etcd, ..., then the controller
#                          managers (testbed/testbin.LabPIDs). test/multi-tp
#                          restarts an API server from its /proc cmdline, so
#                          --etcd-servers= and --insecure-port= stay single
#                          arguments.
# TP K serves services from 10.(95+K).0.0/16 (testbed/faketp/serviceips.go
# gives fake TPs the same ranges). `up` exits non-zero with the reason when a
# TP does not come up; what it started is in DIR/pids for `down` then too.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# Arktos 6685f14's features as its scale-out scripts set them; the labs give
# the controllers and schedulers they start the same gates.
GATES=AllAlpha=false,WorkloadInfoDefaulting=true,QPSDoubleGCController=true,QPSDoubleRSController=true,MandatoryArktosNetwork=true
ADMISSION=NamespaceLifecycle,LimitRanger,DefaultStorageClass,DefaultTolerationSeconds,MutatingAdmissionWebhook,ValidatingAdmissionWebhook,ResourceQuota,TenantExists
KCM_CONTROLLERS=tenant,namespace,serviceaccount,serviceaccount-token,endpoint,garbagecollector

say() { echo "arktos-lab: $*" >&2; }

usage() {
  sed -n '/^#   hack/s/^# *//p' "$0" >&2
  exit 2
}

# free_port prints a TCP port of 127.0.0.1 that nothing listens on now.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# alive PID: the process runs (a zombie counts as gone).
alive() { [[ -r /proc/$1/stat ]] && [[ $(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) != Z ]]; }

# await URL PID SECONDS WHAT LOG: poll URL until it answers 2xx; fail early
# when PID exits, showing the end of LOG.
await() {
  local url=$1 pid=$2 secs=$3 what=$4 log=$5 i
  for ((i = 0; i < secs * 2; i++)); do
    curl -sf --max-time 2 "$url" >/dev/null 2>&1 && return 0
    if ! alive "$pid"; then
      say "$what exited before it served $url; the end of $log:"
      tail -n 20 "$log" >&2
      return 1
    fi
    sleep 0.5
  done
  say "$what did not serve $url within ${secs}s; the end of $log:"
  tail -n 20 "$log" >&2
  return 1
}

# spawn LOG CMD...: start CMD in the background, detached from stdin, its
# output in LOG, and record its pid in $dir/pids; the pid is in $spawned.
spawn() {
  local log=$1
  shift
  "$@" >"$log" 2>&1 </dev/null &
  spawned=$!
  echo "$spawned" >>"$dir/pids"
}

# kubeconfig K PORT: DIR/kc/tpK.kubeconfig for the insecure port.
kubeconfig() {
  cat >"$dir/kc/tp$1.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- cluster: {server: "http://127.0.0.1:$2/"}
  name: tp$1
users:
- name: admin
  user: {}
contexts:
- context: {cluster: tp$1, user: admin}
  name: tp$1
current-context: tp$1
EOF
}

up() {
  local n=$1 k t client peer api secure
  dir=$2
  [[ $n =~ ^[1-9][0-9]*$ ]] || { say "up: N must be a positive number, not '$n'"; return 2; }
  [[ -n ${ARKTOS_BIN:-} && -x ${ARKTOS_BIN:-}/kube-apiserver ]] || {
    say "set ARKTOS_BIN to the folder holding Arktos's kube-apiserver (make arktos-src STOCK_BIN=DIR builds one)"
    return 1
  }
  if [[ ${KCM:-0} == 1 && ! -x $ARKTOS_BIN/kube-controller-manager ]]; then
    say "KCM=1 needs $ARKTOS_BIN/kube-controller-manager"
    return 1
  fi
  "$here/ensure-tools.sh" etcd curl openssl python3 >&2 || return 1
  mkdir -p "$dir/kc" || return 1
  : >"$dir/pids"
  local apiservers=()
  for ((k = 1; k <= n; k++)); do
    t=$dir/tp$k
    mkdir -p "$t/certs"
    client=$(free_port) && peer=$(free_port) && api=$(free_port) && secure=$(free_port) || return 1
    spawn "$t/etcd.log" etcd --name "tp$k" --data-dir "$t/etcd" \
      --listen-client-urls "http://127.0.0.1:$client" --advertise-client-urls "http://127.0.0.1:$client" \
      --listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
      --initial-cluster "tp$k=http://127.0.0.1:$peer"
    await "http://127.0.0.1:$client/health" "$spawned" 60 "etcd of tp$k" "$t/etcd.log" || return 1

    local accounts=(--disable-admission-plugins=ServiceAccount) admission=$ADMISSION
    if [[ ${KCM:-0} == 1 ]]; then
      openssl genrsa -out "$t/sa.key" 2048 2>/dev/null || { say "openssl could not make tp$k's service-account key"; return 1; }
      accounts=(--service-account-key-file="$t/sa.key")
      admission=$ADMISSION,ServiceAccount
    fi
    spawn "$t/apiserver.log" "$ARKTOS_BIN/kube-apiserver" \
      --etcd-servers="http://127.0.0.1:$client" --storage-backend=etcd3 \
      --insecure-bind-address="${INSECURE_BIND:-127.0.0.1}" --insecure-port="$api" \
      --bind-address=127.0.0.1 --secure-port="$secure" --cert-dir="$t/certs" \
      ${ADVERTISE:+--advertise-address="$ADVERTISE"} \
      ${RESOURCE_PROVIDERS:+--resource-providers="$RESOURCE_PROVIDERS"} \
      "${accounts[@]}" --enable-admission-plugins="$admission" \
      --service-cluster-ip-range="10.$((95 + k)).0.0/16" \
      --authorization-mode=AlwaysAllow --feature-gates="$GATES" ${APISERVER_FLAGS:-}
    apiservers+=("$spawned")
    echo "http://127.0.0.1:$api" >"$t/url"
    kubeconfig "$k" "$api"
  done
  # The API servers start side by side; each has 120 s.
  for ((k = 1; k <= n; k++)); do
    await "$(cat "$dir/tp$k/url")/healthz" "${apiservers[k - 1]}" 120 "kube-apiserver of tp$k" "$dir/tp$k/apiserver.log" || return 1
  done
  if [[ ${KCM:-0} == 1 ]]; then
    for ((k = 1; k <= n; k++)); do
      spawn "$dir/tp$k/kcm.log" "$ARKTOS_BIN/kube-controller-manager" \
        --kubeconfig="$dir/kc/tp$k.kubeconfig" --controllers="$KCM_CONTROLLERS" \
        --service-account-private-key-file="$dir/tp$k/sa.key" \
        --leader-elect=false --port=0 --secure-port=0 --feature-gates="$GATES"
    done
  fi
}

# down DIR: SIGTERM to everything DIR/pids names, newest first (controller
# managers and API servers before their etcd), then SIGKILL to whatever is
# still running after 20 s. DIR/pids stays, for callers that check.
down() {
  local f=$1/pids p i left
  [[ -f $f ]] || return 0
  local pids=()
  mapfile -t pids < <(grep -E '^[0-9]+$' "$f")
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null; done
  for ((i = 0; i < 40; i++)); do
    left=0
    for p in "${pids[@]}"; do alive "$p" && left=1; done
    ((left)) || return 0
    sleep 0.5
  done
  for p in "${pids[@]}"; do alive "$p" && kill -9 "$p" 2>/dev/null; done
  return 0
}

case ${1:-} in
up) (($# == 3)) || usage; up "$2" "$3" ;;
down) (($# == 2)) || usage; down "$2" ;;
*) usage ;;
esac
