#!/usr/bin/env bash
# run.sh ARKTOS_BIN: kubemark's hollow proxy at scale-out sizes (make
# bench-hollow-proxy). For each size in SIZES (services per TP), fake-tp
# serves TPS partitions of that many services (10 endpoints' worth of pods
# each: fake-tp --generate 10*size) and the patched hollow-node
# --morph=proxy (patch 0030) watches all of them on kubemark's fake
# iptables. Printed per size: the time from the hollow proxy's start to its
# first rules holding every TP's services (read from its /debug/iptables),
# the time a service created in the last TP then takes to be programmed,
# the size of the rules, and the hollow proxy's peak RSS.
#
# Everything runs in a network namespace made here (Arktos binaries run
# only in one), with AWS_EC2_METADATA_DISABLED=true; the namespace, its
# processes and the temp dir go at exit.
set -euo pipefail
bin=$(cd "${1:?usage: run.sh ARKTOS_BIN}" && pwd)
root=$(cd "$(dirname "$0")/../../.." && pwd)
[ "$(id -u)" = 0 ] || { echo "run.sh: needs root (network namespaces)" >&2; exit 2; }
[ -x "$bin/hollow-node" ] || { echo "run.sh: $bin has no hollow-node (make arktos-patch builds it into WORK/bin)" >&2; exit 2; }
# The help read whole: under pipefail, grep -q ending the pipe early would
# make hollow-node's SIGPIPE read as "no such flag".
grep -q -- --proxy-metrics-bind-address <<<"$("$bin/hollow-node" --help 2>&1 || true)" ||
	{ echo "run.sh: $bin/hollow-node has no --proxy-metrics-bind-address: build it with the series' patch 0030" >&2; exit 2; }
"$root/hack/ensure-tools.sh" ip curl
SIZES=${SIZES:-1500 9000}
TPS=${TPS:-2}
ns=${BENCH_NS:-tpkit-hollow-bench-$$}
tmp=$(mktemp -d /tmp/tpkit-hollow-bench.XXXXXX)
cleanup() {
	for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
	ip netns del "$ns" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
(cd "$root" && go build -o "$tmp/fake-tp" ./cmd/fake-tp)
ip netns add "$ns"
ip -n "$ns" link set lo up
inns() { ip netns exec "$ns" env AWS_EC2_METADATA_DISABLED=true "$@"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN{printf "%.1f", b-a}'; }
# rules: the hollow proxy's last restored rules ("" before the first).
rules() { inns curl -fsS -m 30 "http://127.0.0.1:10249/debug/iptables" 2>/dev/null || true; }
# restores: how many restores the hollow proxy has made (a HEAD request: the
# rules, tens of MB at these sizes, are fetched only after a new restore).
restores() {
	local n
	n=$(inns curl -fsSI -m 5 "http://127.0.0.1:10249/debug/iptables" 2>/dev/null | tr -d '\r' | sed -n 's/^X-Restores: //Ip')
	echo "${n:-0}"
}
# programmed: the service ports with a cluster IP rule (KUBE-SERVICES -> KUBE-SVC-*).
programmed() { rules | grep -c -- '^-A KUBE-SERVICES .*-j KUBE-SVC-' || true; }
# hwm: the peak RSS of the namespace's hollow-node (ip netns exec may run it
# as a child, so $! is not always its pid).
# stop_all: every process in the namespace (this run's fake-tp and hollow
# proxy; $! may be ip netns exec's pid, not theirs), so that the next size
# gets the ports.
stop_all() {
	local p
	for p in $(ip netns pids "$ns"); do kill "$p" 2>/dev/null || true; done
	for _ in $(seq 50); do [ -z "$(ip netns pids "$ns")" ] && return; sleep 0.2; done
	for p in $(ip netns pids "$ns"); do kill -9 "$p" 2>/dev/null || true; done
}
hwm() {
	local p
	for p in $(ip netns pids "$ns"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = hollow-node ] && { awk '/^VmHWM:/{printf "%.0f MiB", $2/1024}' "/proc/$p/status"; return; }
	done
	echo "?"
}

echo "size (services/TP)  TPs  first complete rules  new service  rules (bytes)  peak RSS"
for size in $SIZES; do
	d=$tmp/$size && mkdir -p "$d"
	inns "$tmp/fake-tp" --partitions "$TPS" --listen 127.0.0.1:0 --kubeconfig-dir "$d" \
		--generate $((size * 10)) --admin-listen 127.0.0.1:6440 >"$d/fake-tp.log" 2>&1 &
	tp=$!
	gen=$(now)
	for _ in $(seq 1200); do
		inns curl -fsS -m 2 -o /dev/null http://127.0.0.1:6440/readyz 2>/dev/null && [ -s "$d/tp$TPS.kubeconfig" ] && break
		kill -0 "$tp" 2>/dev/null || { tail -20 "$d/fake-tp.log" >&2; exit 1; }
		sleep 0.5
	done
	inns curl -fsS -m 2 -o /dev/null http://127.0.0.1:6440/readyz 2>/dev/null || { echo "run.sh: fake-tp not ready after 600 s" >&2; exit 1; }
	echo "  $size services/TP: fake-tp ready after $(since "$gen")s" >&2
	kcs=$(for i in $(seq "$TPS"); do printf '%s,' "$d/tp$i.kubeconfig"; done)
	start=$(now)
	inns "$bin/hollow-node" --morph=proxy --name=hollow-bench --kubeconfig="$d/tp1.kubeconfig" \
		--tenant-server-kubeconfigs="${kcs%,}" --kube-api-content-type=application/json \
		--proxy-metrics-bind-address=127.0.0.1:10249 --proxier-sync-period=30s --proxier-min-sync-period=0s \
		>"$d/hollow-proxy.log" 2>&1 &
	hp=$!
	want=$((size * TPS)) seen=0 n=0
	while [ "$n" -lt "$want" ]; do
		kill -0 "$hp" 2>/dev/null || { tail -20 "$d/hollow-proxy.log" >&2; exit 1; }
		[ "$(since "$start" | cut -d. -f1)" -lt "${LIMIT:-600}" ] ||
			{ echo "run.sh: $n of $want service ports programmed after ${LIMIT:-600} s; hollow proxy's log:" >&2; tail -20 "$d/hollow-proxy.log" >&2; exit 1; }
		r=$(restores)
		if [ "$r" -gt "$seen" ]; then
			first=$(since "$start") seen=$r n=$(programmed)
		else
			sleep 0.1
		fi
	done
	bytes=$(rules | wc -c)
	# One new service in the last TP, with one endpoint.
	url=$(awk '/server:/{print $2; exit}' "$d/tp$TPS.kubeconfig")
	url=${url%/}
	api=$url/api/v1/tenants/system/namespaces/default
	ip=$(inns curl -fsS -m 5 -H 'Content-Type: application/json' -X POST "$api/services" \
		-d '{"apiVersion":"v1","kind":"Service","metadata":{"name":"bench-new"},"spec":{"ports":[{"name":"http","port":80,"protocol":"TCP"}]}}' |
		sed -n 's/.*"clusterIP": *"\([0-9.]*\)".*/\1/p')
	[ -n "$ip" ] || { echo "run.sh: creating a service in tp$TPS gave no cluster IP" >&2; exit 1; }
	created=$(now) seen=$(restores)
	inns curl -fsS -m 5 -o /dev/null -H 'Content-Type: application/json' -X POST "$api/endpoints" \
		-d '{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"bench-new"},"subsets":[{"addresses":[{"ip":"10.244.200.1"}],"ports":[{"name":"http","port":8080,"protocol":"TCP"}]}]}'
	while :; do
		kill -0 "$hp" 2>/dev/null || { tail -20 "$d/hollow-proxy.log" >&2; exit 1; }
		[ "$(since "$created" | cut -d. -f1)" -lt 120 ] || { echo "run.sh: the new service was not programmed within 120 s" >&2; exit 1; }
		r=$(restores)
		if [ "$r" -gt "$seen" ]; then
			# The time of the restore that has it, not of the fetch after it.
			took=$(since "$created") seen=$r
			rules | grep -q -- "^-A KUBE-SERVICES .*-d $ip/32 .*-j KUBE-SVC-" && break
		else
			sleep 0.05
		fi
	done
	printf '%18s  %3s  %19ss  %10ss  %13s  %s\n' "$size" "$TPS" "$first" "$took" "$bytes" "$(hwm)"
	stop_all
	wait "$hp" "$tp" 2>/dev/null || true
done
