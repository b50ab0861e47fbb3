#!/usr/bin/env bash
# make bench-scale (600k objects in 170 MiB, 1.5M in 340 MiB): partition-dns over 10 fake TPs at each
# size of SIZES (by default 60k, 300k and 600k DNS-relevant objects in all, and
# 60k and 1.5M of fake-tp --generate's shape). For each it reports the time to
# ready, the peak RSS (VmHWM, the start included) and the steady RSS, and the
# programming latency (p50/p99 from a change acknowledged by its TP to the
# changed answer, measured by test/bench/scale/churn at CHANGES per second
# for DURATION seconds while dnsperf runs). Then the node's parts against the
# same TPs, each in its own process (test/bench/scale/node): the kube-proxy
# view and the tporigin tracker, with their time to the first complete view,
# live heap and peak RSS.
#
# Every size's TPs and server stay up until the end, where dnsperf measures
# their QPS and the server's CPU per query in ROUNDS rounds of
# DURATION/ROUNDS seconds, churn changing that size's TPs during each: the
# sizes take turns within a round (the order rotating), so that the growth
# ratio compares rounds run under the same load from the machine's
# neighbours, not sizes run minutes apart. The best round of each size
# counts, and all are printed.
#
# As root, each partition-dns runs in a memory cgroup limited to MEMCG_MIB
# (CoreDNS's Deployment limit, 170 MiB), as in a pod, and its default
# --memory-limit=auto sizes the Go runtime to it; the cgroup's peak use and
# OOM kills are reported. MEMCG_MIB is one limit for every size, or one per
# size in the order of SIZES.
#
#   SIZES="2400 12000 24000" CHANGES=500 DURATION=21 ROUNDS=3 MEMCG_MIB=170 PDNS_FLAGS= test/bench/scale/run.sh
#   SIZES="2400 500:5000:10 12500:125000:10" MEMCG_MIB="170 170 340" test/bench/scale/run.sh
#
# With TRACE_DIR set, each churn writes there when each change was made and
# its latency (size<I>-<prefix>.trace, see churn --trace).
#
# PDNS_FLAGS are more flags for partition-dns (--gc-percent 10, say). The
# node's parts run for sizes of at most NODE_MAX_OBJECTS objects (600k).
#
# A size is services per TP; pods per TP are the same, and the headless half
# of the services has core/v1 Endpoints: 2.5 objects per service, so 24000
# gives 60k per TP and 600k over 10 TPs. A size S:P:K is S services and P
# pods per TP, every service with core/v1 Endpoints of K pod addresses (as
# an endpoints controller writes them): 2S + P objects per TP, so
# 12500:125000:10 is fake-tp --generate 125000's shape, 1.5M objects over 10
# TPs. Bytes per object are the steady RSS over the objects.
set -euo pipefail
cd "$(dirname "$0")/../../.."

SIZES=${SIZES:-"2400 12000 24000"}
TPS=${TPS:-10}
CHANGES=${CHANGES:-500}
DURATION=${DURATION:-21}
ROUNDS=${ROUNDS:-3}
MEMCG_MIB=${MEMCG_MIB:-170} # CoreDNS's Deployment limit
NODE_MAX_OBJECTS=${NODE_MAX_OBJECTS:-600000}
DNS_PORT=${DNS_PORT:-25953}
HEALTH_PORT=${HEALTH_PORT:-25980}

. test/bench/lib.sh
bench_init
go build -o "$work/churn" ./test/bench/scale/churn
go build -o "$work/node" ./test/bench/scale/node
mib() { awk -v k="$1" 'BEGIN{printf "%.0f", k / 1024}'; }

# churn_start I SECONDS PREFIX: churn against size I's TPs and server, in
# the background; its PID in $churn, its figures in its dir's churn.out.
# The TPs collect their garbage first (tps_collect).
churn_start() {
  tps_collect "${size_tps[$1]}" "${size_dir[$1]}/tps.out"
  "$work/churn" --kubeconfigs "${size_kcs[$1]}" --dns "127.0.0.1:${size_port[$1]}" --rate "$CHANGES" --duration "${2}s" \
    --name-prefix "$3" ${TRACE_DIR:+--trace "$TRACE_DIR/size$1-$3.trace"} >"${size_dir[$1]}/churn.out" 2>"${size_dir[$1]}/churn.err" &
  churn=$!
}

sizes=($SIZES)
n=${#sizes[@]}
memcg_mibs=($MEMCG_MIB)
if ((${#memcg_mibs[@]} != 1 && ${#memcg_mibs[@]} != n)); then
  echo "MEMCG_MIB: one limit, or one per size of SIZES ($n)" >&2
  exit 2
fi
base_dns=$DNS_PORT base_health=$HEALTH_PORT
declare -a size_tps size_pdns size_port size_memcg size_dir size_kcs size_head size_latency size_steady size_objects size_mib
nodes=()
for i in "${!sizes[@]}"; do
  dir=$work/size$i
  IFS=: read -r svcs pods addrs <<<"${sizes[$i]}"
  if [ -z "$pods" ]; then
    start_tps "$svcs" "$svcs" "$TPS"
    objects=$(( (svcs * 5 / 2) * TPS ))
  else
    TPS_FLAGS="--endpoint-addresses ${addrs:-10}" start_tps "$svcs" "$pods" "$TPS"
    objects=$(( (2 * svcs + pods) * TPS ))
  fi
  size_objects[$i]=$objects
  size_mib[$i]=${memcg_mibs[$i]:-${memcg_mibs[0]}}
  memcg_make "${size_mib[$i]}" "$i"
  DNS_PORT=$((base_dns + i)) HEALTH_PORT=$((base_health + i))
  start=$(date +%s.%N)
  start_pdns ${PDNS_FLAGS:-}
  ready=$(echo "$(date +%s.%N) - $start" | bc)
  sleep 3
  size_steady[$i]=$(awk '/VmRSS/{print $2}' /proc/$pdns/status)
  size_tps[$i]=$tps_pid size_pdns[$i]=$pdns size_port[$i]=$DNS_PORT size_memcg[$i]=$memcg size_dir[$i]=$dir size_kcs[$i]=$KUBECONFIGS
  # The programming latency, with dnsperf loading the server meanwhile.
  churn_start "$i" "$DURATION" churn
  dnsperf -s 127.0.0.1 -p "$DNS_PORT" -d "$dir/queries.txt" -l "$DURATION" >/dev/null 2>&1
  wait "$churn" || { cat "$dir/churn.err" >&2; }
  read -r _ changes _ lost _ p50 _ p99 _ max <"$dir/churn.out"
  size_latency[$i]="$p50 / $p99 (max $max, $changes changes, $lost lost)"
  size_head[$i]="| $objects | $(printf %.1f "$ready")"
  for part in proxy origin; do
    ((objects <= NODE_MAX_OBJECTS)) || break
    read -r _ _ _ secs _ entries _ heap _ peak < <("$work/node" --kubeconfigs "$KUBECONFIGS" --part "$part" --dir "$work")
    nodes+=("| $part | $objects | $secs | $entries | $heap | $peak |")
    echo "${nodes[-1]}" >&2
    rm -f "$work/tporigin.db"
  done
done

# QPS: the sizes take turns, round by round.
declare -a best_qps best_cpu all_qps
for r in $(seq "$ROUNDS"); do
  for k in $(seq 0 $((n - 1))); do
    i=$(( (k + r - 1) % n ))
    dir=${size_dir[$i]} # dnsperf_round's queries.txt
    churn_start "$i" "$((DURATION / ROUNDS))" "round$r"
    dnsperf_round "${size_pdns[$i]}" "${size_port[$i]}" "$((DURATION / ROUNDS))"
    wait "$churn" || { cat "$dir/churn.err" >&2; }
    echo "round $r: ${sizes[$i]} services per TP: $round_qps QPS, $round_cpu µs per query" >&2
    all_qps[$i]="${all_qps[$i]:-}${all_qps[$i]:+, }$round_qps"
    if ((round_qps > ${best_qps[$i]:-0})); then best_qps[$i]=$round_qps best_cpu[$i]=$round_cpu; fi
  done
done

rows=()
for i in "${!sizes[@]}"; do
  p=${size_pdns[$i]}
  hwm=$(awk '/VmHWM/{print $2}' /proc/$p/status)
  after=$(awk '/VmRSS/{print $2}' /proc/$p/status)
  per=$(awk -v r="${size_steady[$i]}" -v a="$after" -v o="${size_objects[$i]}" 'BEGIN{printf "%.0f / %.0f", r * 1024 / o, a * 1024 / o}')
  # The first size of the same shape (plain, or S:P:K) is the base.
  for j in "${!sizes[@]}"; do [ "${sizes[$j]//[^:]/}" != "${sizes[$i]//[^:]/}" ] || break; done
  ratio=$(awk -v q="${best_qps[$i]}" -v b="${best_qps[$j]}" 'BEGIN{printf "%.2f", q / b}')
  rows+=("${size_head[$i]} | $(mib "$hwm") | ${size_mib[$i]} MiB: $(memcg_peak "${size_memcg[$i]}") | $(mib "${size_steady[$i]}") / $(mib "$after") | $per | ${size_latency[$i]} | ${best_qps[$i]} (${all_qps[$i]}) | $ratio | ${best_cpu[$i]} |")
done

cat <<OUT

| objects ($TPS TPs) | ready (s) | peak RSS, VmHWM (MiB) | memory cgroup: limit, peak use | steady RSS before / after the runs (MiB) | bytes per object, steady RSS before / after | programming latency p50 / p99 (ms) at $CHANGES changes/s | QPS, best of $ROUNDS rounds (each round) | QPS / the first size's of its shape | server CPU per query in the best round (µs) |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
$(printf '%s\n' "${rows[@]}")

Programming latency: churn for ${DURATION}s while dnsperf loads the server.
QPS: dnsperf with make bench-dns's query mix, $ROUNDS rounds of $((DURATION / ROUNDS))s per size, the sizes
taking turns in each round, churn changing the measured size's TPs; CPU from /proc/PID/stat.

| node part | objects ($TPS TPs) | to the first complete view (s) | entries | live heap after GC (MB) | peak RSS (MB) |
| --- | --- | --- | --- | --- | --- |
$(printf '%s\n' "${nodes[@]}")
OUT
