#!/usr/bin/env bash
# run.sh STOCK_BIN PATCHED_BIN IMAGE_DIR: make bench-fleet. What tpkit's
# series costs the partitions' API servers in a fleet: the same local
# scale-out cluster (hack/cluster.sh up: the RP, tp1, tp2, two real nodes,
# tpkit deployed) and HOLLOW hollow nodes (kubemark's hollow-node, a hollow
# kubelet and a hollow proxy each), once with stock Arktos binaries and once
# with the patched ones, the same command lines for both.
#
# Each hollow kubelet registers with the RP and serves pods of both TPs
# (--tenant-server-kubeconfigs); each hollow proxy is started with tp1 as
# --kubeconfig and both TPs as --tenant-server-kubeconfigs (stock reads its
# --kubeconfig's TP only; patch 0030 makes it read every TP, as kube-proxy
# must for the services of both). On them run the node cache's DaemonSet
# (tp1's system tenant, from deploy/) and, per TP, a tenant with DEPLOYS
# deployments of REPLICAS pods.
#
# Measured once the fleet has settled (SETTLE s), over WINDOW s, per
# partition's API server: requests a second by verb and resource
# (apiserver_request_total), open watches (apiserver_longrunning_gauge,
# WATCH), bytes sent on its serving port (an iptables counter in the control
# plane's namespace), CPU (utime+stime) and RSS; per hollow node (kubelet
# plus proxy): CPU and RSS. RSS comes twice: VmRSS, and RssAnon, the
# process's own memory without the binary's mapped pages, which vary with
# how the binary came into the page cache (a binary just built maps up to
# 16 MiB more per process until the cache is dropped). Then pod start-up
# latency, created to seen Running by a watch (test/bench/fleet/podlatency),
# for PODS pods, half in each TP, created POD_QPS a second in all (5, as
# the density test creates its latency pods; each TP's half at half the
# rate, both at once). Printed: a table of patched/stock ratios; the raw
# figures are in OUT/{stock,patched}/.
#
# Environment: HOLLOW (default 100), WINDOW (60), SETTLE (30), PODS (300),
# POD_QPS (5), DEPLOYS (3), REPLICAS (5), PATCHED_KUBELET_FLAGS (more flags
# for the patched side's hollow kubelets only, split on spaces: stock
# hollow-node lacks most of the series' flags), ORDER ("stock patched";
# "patched stock" runs the patched side first, to tell an order effect from
# the series' cost), RUNS (1; K runs K pairs into OUT/run-1..K, the order
# turned round each time, then prints each ratio per run and their median),
# HOLLOW_V (the hollow kubelets' --v, 1; 3 logs each pod's steps: SyncLoop
# ADD, PLEG, the status writes), FLEET_OUT (default /tmp/tpkit-fleet),
# CLUSTER_DIR (default /tmp/tpkit-fleet-cluster). Root; no cluster may be up.
# Everything it starts goes at exit: the hollow nodes and the temporary
# folders they make (hollow-kubelet.* in the system temp folder), then the
# cluster (hack/cluster.sh down, which checks the host is as it was).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
stock=$(cd "${1:?usage: run.sh STOCK_BIN PATCHED_BIN IMAGE_DIR}" && pwd)
patched=$(cd "${2:?usage: run.sh STOCK_BIN PATCHED_BIN IMAGE_DIR}" && pwd)
images=$(cd "${3:?usage: run.sh STOCK_BIN PATCHED_BIN IMAGE_DIR}" && pwd)
N=${HOLLOW:-100}
WINDOW=${WINDOW:-60}
SETTLE=${SETTLE:-30}
PODS=${PODS:-300}
POD_QPS=${POD_QPS:-5}
DEPLOYS=${DEPLOYS:-3}
REPLICAS=${REPLICAS:-5}
out=${FLEET_OUT:-/tmp/tpkit-fleet}
export CLUSTER_DIR=${CLUSTER_DIR:-/tmp/tpkit-fleet-cluster}
dir=$CLUSTER_DIR

say() { echo "bench-fleet: $*" >&2; }
die() {
	say "$*"
	exit 1
}
[ "$(id -u)" = 0 ] || die "needs root (the cluster's namespaces)"
for b in "$stock" "$patched"; do
	[ -x "$b/hollow-node" ] || die "$b has no hollow-node (make arktos-patch builds it into WORK/bin; BUILD.md the stock one)"
done
"$root/hack/ensure-tools.sh" iptables curl python3

mkdir -p "$out"
podlatency=$out/podlatency
(cd "$root" && go build -o "$podlatency" ./test/bench/fleet/podlatency) || die "could not build podlatency"

hollow_pids=()
tmp_before=""
stop_fleet() {
	local p
	for p in "${hollow_pids[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${hollow_pids[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$p" 2>/dev/null || true
	done
	hollow_pids=()
	# The hollow kubelets' root folders: those made since the fleet started.
	if [ -n "$tmp_before" ]; then
		comm -13 "$tmp_before" <(ls -d "${TMPDIR:-/tmp}"/hollow-kubelet.* 2>/dev/null | sort) | while read -r d; do
			umount -R "$d" 2>/dev/null || true
			rm -rf "$d"
		done
		rm -f "$tmp_before"
		tmp_before=""
	fi
}
cleanup() {
	stop_fleet
	[ -f "$dir/state" ] && "$root/hack/cluster.sh" down >"$out/cluster-down.log" 2>&1 || true
}
trap cleanup EXIT

# snapshot PART FILE: what the window's rates and gauges are computed from.
snapshot() {
	local side_dir=$1 tag=$2 part pid port
	for part in rp tp1 tp2; do
		pid=$(apiserver_pid "$part")
		port=$(tr '\0' '\n' <"/proc/$pid/cmdline" | sed -n 's/^--insecure-port=//p')
		{
			echo "time $(date +%s.%N)"
			echo "stat $(cut -d' ' -f14,15 "/proc/$pid/stat")"
			echo "rss_kb $(awk '/^VmRSS:/{print $2}' "/proc/$pid/status")"
			echo "rss_anon_kb $(awk '/^RssAnon:/{print $2}' "/proc/$pid/status")"
			echo "bytes $(nsenter -t "$cp_holder" -n -- iptables -w -t filter -L TPKIT-FLEET-ACCT -vxn | awk -v p="spt:$port" '$0 ~ p"$" || $0 ~ p" " {print $2}' | head -1)"
			kubectl --kubeconfig="$dir/kubeconfig/$part.kubeconfig" get --raw /metrics |
				grep -E '^apiserver_(request_total|longrunning_gauge)\{' || true
		} >"$side_dir/$part.$tag"
	done
	local p
	for p in "${hollow_pids[@]}"; do
		[ -r "/proc/$p/stat" ] || continue
		echo "$p $(cut -d' ' -f14,15 "/proc/$p/stat") $(awk '/^VmRSS:/{r = $2} /^RssAnon:/{a = $2} END{print r, a}' "/proc/$p/status") $(tr '\0' '\n' <"/proc/$p/cmdline" | sed -n 's/^--morph=//p')"
	done >"$side_dir/hollow.$tag"
}

# apiserver_pid PART: the API server's pid, the second line of its lab's pids.
apiserver_pid() {
	case $1 in
	rp) sed -n 2p "$dir/rp/pids" ;;
	tp1) sed -n 2p "$dir/tps/pids" ;;
	tp2) sed -n 4p "$dir/tps/pids" ;;
	esac
}

wait_for() { # wait_for SECONDS WHAT CMD...
	local secs=$1 what=$2 end=$((SECONDS + $1))
	shift 2
	until "$@"; do
		[ $SECONDS -lt $end ] || die "$what: not within ${secs}s"
		sleep 2
	done
}
hollow_ready() {
	local n
	n=$(kubectl --kubeconfig="$dir/kubeconfig/rp.kubeconfig" get nodes -l tpkit-fleet=hollow \
		-o 'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' | grep -c True || true)
	[ "$n" -ge "$N" ]
}
hollow_registered() {
	[ "$(kubectl --kubeconfig="$dir/kubeconfig/rp.kubeconfig" get nodes -o name | grep -c '^node/hollow-' || true)" -ge "$N" ]
}
apps_running() {
	local tp n want=$((DEPLOYS * REPLICAS))
	for tp in tp1 tp2; do
		n=$("$bin/kubectl" --kubeconfig="$dir/kubeconfig/$tp.kubeconfig" --tenant "fleet-$tp" -n apps get pods \
			-o 'jsonpath={range .items[*]}{.status.phase}{"\n"}{end}' | grep -c Running || true)
		[ "$n" -ge "$want" ] || return 1
	done
	# Scheduled, not ready: a hollow kubelet runs no probe that could pass.
	n=$(kubectl --kubeconfig="$dir/kubeconfig/tp1.kubeconfig" -n kube-system get daemonset node-local-dns -o 'jsonpath={.status.currentNumberScheduled}')
	[ "${n:-0}" -ge "$((N + 2))" ]
}
tenant_ready() {
	"$bin/kubectl" --kubeconfig="$dir/kubeconfig/$1.kubeconfig" --tenant "fleet-$1" get namespace default >/dev/null 2>&1
}

# hollow CMD...: CMD in the control plane's network namespace and in a mount
# namespace of its own, with tmpfs on /var/lib, /var/log and /run (as the
# node lab runs hollow-node, test/arktos-node/run.sh): a hollow kubelet's
# dockershim keeps sandbox checkpoints in /var/lib/dockershim and its socket
# in /run, which hollow kubelets sharing the host's would take from each
# other (and which would outlive the run). The mounts go with the process.
# Called with & only: it execs, so that $! is the hollow-node's pid.
hollow() {
	exec nsenter -t "$cp_holder" -n -- unshare -m --propagation private -- bash -c \
		'for d in /var/lib /var/log /run; do mount -t tmpfs tpkit-fleet "$d" || exit 1; done; exec env AWS_EC2_METADATA_DISABLED=true "$@"' hollow "$@"
}

side() { # side stock|patched
	local name=$1 side_dir=$out/$1 i tp
	bin=$stock
	[ "$name" = stock ] || bin=$patched
	rm -rf "$side_dir"
	mkdir -p "$side_dir"
	say "$name: cluster-up ($bin)"
	"$root/hack/cluster.sh" up "$bin" "$images" >"$side_dir/cluster-up.log" 2>&1 || die "$name: cluster-up failed: $(tail -5 "$side_dir/cluster-up.log")"
	cp_holder=$(cat "$dir/tpkit-cp/holder.pid")
	nsenter -t "$cp_holder" -n -- iptables -w -N TPKIT-FLEET-ACCT
	nsenter -t "$cp_holder" -n -- iptables -w -I OUTPUT -j TPKIT-FLEET-ACCT
	for part in rp tp1 tp2; do
		port=$(tr '\0' '\n' <"/proc/$(apiserver_pid $part)/cmdline" | sed -n 's/^--insecure-port=//p')
		nsenter -t "$cp_holder" -n -- iptables -w -A TPKIT-FLEET-ACCT -p tcp --sport "$port"
	done

	say "$name: a tenant per TP with $DEPLOYS deployments of $REPLICAS, for the hollow nodes"
	for tp in tp1 tp2; do
		local K=("$bin/kubectl" --kubeconfig="$dir/kubeconfig/$tp.kubeconfig")
		echo "{\"apiVersion\":\"v1\",\"kind\":\"Tenant\",\"metadata\":{\"name\":\"fleet-$tp\"},\"spec\":{\"storageClusterId\":\"0\"}}" | "${K[@]}" apply -f - >/dev/null
		wait_for 60 "tenant fleet-$tp's default namespace" tenant_ready "$tp"
		"${K[@]}" --tenant "fleet-$tp" create namespace apps >/dev/null
		"${K[@]}" create namespace fleet >/dev/null
		for i in $(seq "$DEPLOYS"); do
			"${K[@]}" --tenant "fleet-$tp" -n apps apply -f - >/dev/null <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: app-$i}
spec:
  replicas: $REPLICAS
  selector: {matchLabels: {app: app-$i}}
  template:
    metadata: {labels: {app: app-$i}}
    spec:
      nodeSelector: {tpkit-fleet: hollow}
      containers: [{name: app, image: tpkit-lab/pause:1}]
EOF
			"${K[@]}" --tenant "fleet-$tp" -n apps expose deployment "app-$i" --port=80 >/dev/null
		done
	done

	say "$name: $N hollow nodes"
	tmp_before=$(mktemp)
	ls -d "${TMPDIR:-/tmp}"/hollow-kubelet.* 2>/dev/null | sort >"$tmp_before" || true
	local kc=$dir/node-kc tps=$dir/node-kc/tp1.kubeconfig,$dir/node-kc/tp2.kubeconfig extra=()
	[ "$name" = patched ] && read -ra extra <<<"${PATCHED_KUBELET_FLAGS:-}"
	mkdir -p "$side_dir/hollow"
	for i in $(seq "$N"); do
		hollow "$bin/hollow-node" --morph=kubelet --name="hollow-$i" \
			--kubeconfig="$kc/rp.kubeconfig" --resource-server-kubeconfig="$kc/rp.kubeconfig" --tenant-server-kubeconfigs="$tps" \
			--kube-api-content-type=application/json --kubelet-port=$((20000 + i)) --kubelet-read-only-port=0 \
			--v="${HOLLOW_V:-1}" "${extra[@]}" >"$side_dir/hollow/kubelet-$i.log" 2>&1 &
		hollow_pids+=($!)
		hollow "$bin/hollow-node" --morph=proxy --name="hollow-$i" \
			--kubeconfig="$kc/tp1.kubeconfig" --tenant-server-kubeconfigs="$tps" \
			--kube-api-content-type=application/json --v=1 >"$side_dir/hollow/proxy-$i.log" 2>&1 &
		hollow_pids+=($!)
		sleep 0.2
	done
	wait_for 600 "$N hollow nodes registered with the RP" hollow_registered
	# The label the tenants' pods select (the hollow kubelet takes no
	# --node-labels): the real nodes keep only tpkit's own pods.
	kubectl --kubeconfig="$dir/kubeconfig/rp.kubeconfig" label nodes $(seq -f 'hollow-%g' "$N") tpkit-fleet=hollow --overwrite >/dev/null
	wait_for 600 "$N hollow nodes Ready" hollow_ready
	wait_for 600 "the tenants' deployments and the node cache running on every node" apps_running
	say "$name: settled; measuring over ${WINDOW}s after ${SETTLE}s"
	sleep "$SETTLE"
	snapshot "$side_dir" a
	sleep "$WINDOW"
	snapshot "$side_dir" b

	# The events the window's writes were about, most repeated first (a
	# PATCH of an event is one more occurrence of it).
	for tp in tp1 tp2; do
		for t in system "fleet-$tp"; do
			"$bin/kubectl" --kubeconfig="$dir/kubeconfig/$tp.kubeconfig" --tenant "$t" get events --all-namespaces \
				-o custom-columns='COUNT:.count,REASON:.reason,SOURCE:.source.component,HOST:.source.host,OBJECT:.involvedObject.name,MESSAGE:.message' \
				--sort-by=.count 2>&1 | tail -15
		done >"$side_dir/events-$tp.txt"
	done

	say "$name: pod start-up latency, $PODS pods"
	local half=$((PODS / 2)) rc=0 lat=() qps
	qps=$(awk -v q="$POD_QPS" 'BEGIN { print q / 2 }')
	for tp in tp1 tp2; do
		nsenter -t "$cp_holder" -n -- "$podlatency" --kubeconfig="$dir/node-kc/$tp.kubeconfig" --namespace=fleet \
			--count="$half" --qps="$qps" --prefix="lat-$tp" >"$side_dir/latency-$tp.txt" 2>"$side_dir/latency-$tp.err" &
		lat+=($!)
	done
	for p in "${lat[@]}"; do wait "$p" || rc=$?; done # not the hollow nodes, also this shell's children
	[ $rc = 0 ] || say "$name: podlatency: $(cat "$side_dir"/latency-*.err)"

	stop_fleet
	say "$name: cluster-down"
	"$root/hack/cluster.sh" down >"$side_dir/cluster-down.log" 2>&1 || die "$name: cluster-down: $(tail -5 "$side_dir/cluster-down.log")"
}

ORDER=${ORDER:-stock patched}
RUNS=${RUNS:-1}
case "$ORDER" in
"stock patched") order=(stock patched) ;;
"patched stock") order=(patched stock) ;;
*) die "ORDER is \"stock patched\" or \"patched stock\", not \"$ORDER\"" ;;
esac
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || die "RUNS is a count of runs, not \"$RUNS\""

# RUNS pairs, each in OUT/run-K, the order turned round from one pair to the
# next so that a drift of the machine over the runs lands on both sides.
base=$out
for ((r = 1; r <= RUNS; r++)); do
	if [ "$RUNS" -gt 1 ]; then
		out=$base/run-$r
		mkdir -p "$out"
		say "run $r of $RUNS: ${order[0]}, then ${order[1]}"
	fi
	side "${order[0]}"
	side "${order[1]}"
	python3 "$root/test/bench/fleet/table.py" "$out" "$N" "$WINDOW" | tee "$out/table.md"
	order=("${order[1]}" "${order[0]}")
done
if [ "$RUNS" -gt 1 ]; then
	# In run order (a glob would put run-10 before run-2).
	python3 "$root/test/bench/fleet/summary.py" $(seq -f "$base/run-%g/table.md" "$RUNS") | tee "$base/summary.md"
fi
