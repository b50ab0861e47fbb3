#!/usr/bin/env bash
# make bench-scale (issue 20): partition-dns over 10 fake TPs at three sizes,
# 60k, 300k and 600k DNS-relevant objects in all. For each it reports the time to
# ready, the peak RSS (VmHWM, the start included) and the steady RSS, the
# programming latency (p50/p99 from a change acknowledged by its TP to the
# changed answer, measured by test/bench/scale/churn at CHANGES per second
# while dnsperf runs), and dnsperf's QPS with the server's CPU per query
# (ROUNDS rounds of DURATION/ROUNDS seconds; the best round counts).
# Then the node's parts against the same TPs, each in its own process
# (test/bench/scale/node): the kube-proxy view and the tporigin tracker,
# with their time to the first complete view, live heap and peak RSS.
# As root, partition-dns runs in a memory cgroup limited to MEMCG_MIB
# (CoreDNS's Deployment limit, 170 MiB), as in a pod, and its default
# --memory-limit=auto sizes the Go runtime to it; the cgroup's peak use and
# OOM kills are reported.
#
#   SIZES="2400 12000 24000" CHANGES=500 DURATION=21 ROUNDS=3 MEMCG_MIB=170 PDNS_FLAGS= test/bench/scale/run.sh
#
# PDNS_FLAGS are more flags for partition-dns (--gc-percent 10, say).
#
# A size is services per TP; pods per TP are the same, and the headless half
# of the services has core/v1 Endpoints: 2.5 objects per service, so 24000
# gives 60k per TP and 600k over 10 TPs.
set -euo pipefail
cd "$(dirname "$0")/../../.."

SIZES=${SIZES:-"2400 12000 24000"}
TPS=${TPS:-10}
CHANGES=${CHANGES:-500}
DURATION=${DURATION:-21}
ROUNDS=${ROUNDS:-3}
MEMCG_MIB=${MEMCG_MIB:-170} # CoreDNS's Deployment limit
DNS_PORT=${DNS_PORT:-25953}
HEALTH_PORT=${HEALTH_PORT:-25980}

. test/bench/lib.sh
bench_init
go build -o "$work/churn" ./test/bench/scale/churn
go build -o "$work/node" ./test/bench/scale/node
mib() { awk -v k="$1" 'BEGIN{printf "%.0f", k / 1024}'; }

rows=()
nodes=()
for size in $SIZES; do
  start_tps "$size" "$size" "$TPS"
  objects=$(( (size * 5 / 2) * TPS ))
  memcg_make "$MEMCG_MIB"
  start=$(date +%s.%N)
  start_pdns ${PDNS_FLAGS:-}
  ready=$(echo "$(date +%s.%N) - $start" | bc)
  sleep 3
  steady=$(awk '/VmRSS/{print $2}' /proc/$pdns/status)
  "$work/churn" --kubeconfigs "$KUBECONFIGS" --dns "127.0.0.1:$DNS_PORT" --rate "$CHANGES" --duration "${DURATION}s" \
    >"$work/churn.out" 2>"$work/churn.err" &
  churn=$!
  # dnsperf in ROUNDS back-to-back rounds while churn runs; the best round
  # counts (as make bench-udp's), so that a burst of load from the machine's
  # neighbours in one round does not decide the size's figure.
  qps=0 cpu=0 all=
  for r in $(seq "$ROUNDS"); do
    dnsperf_round "$pdns" "$DNS_PORT" "$((DURATION / ROUNDS))"
    all="$all${all:+, }$round_qps"
    if ((round_qps > qps)); then qps=$round_qps cpu=$round_cpu; fi
  done
  wait "$churn" || { cat "$work/churn.err" >&2; }
  qps="$qps ($all)"
  read -r _ changes _ lost _ p50 _ p99 _ max <"$work/churn.out"
  hwm=$(awk '/VmHWM/{print $2}' /proc/$pdns/status)
  after=$(awk '/VmRSS/{print $2}' /proc/$pdns/status)
  rows+=("| $objects | $(printf %.1f "$ready") | $(mib "$hwm") | $(memcg_peak) | $(mib "$steady") / $(mib "$after") | $p50 / $p99 (max $max, $changes changes, $lost lost) | $qps | $cpu |")
  echo "${rows[-1]}" >&2
  kill -TERM "$pdns"; wait "$pdns" 2>/dev/null || true
  memcg_drop
  for part in proxy origin; do
    read -r _ _ _ secs _ entries _ heap _ peak < <("$work/node" --kubeconfigs "$KUBECONFIGS" --part "$part" --dir "$work")
    nodes+=("| $part | $objects | $secs | $entries | $heap | $peak |")
    echo "${nodes[-1]}" >&2
    rm -f "$work/tporigin.db"
  done
  kill -TERM "$tps_pid"; wait "$tps_pid" 2>/dev/null || true
done

cat <<OUT

| objects ($TPS TPs) | ready (s) | peak RSS, VmHWM (MiB) | peak use of its ${MEMCG_MIB} MiB memory cgroup | steady RSS before / after the run (MiB) | programming latency p50 / p99 (ms) at $CHANGES changes/s | QPS, best of $ROUNDS rounds (each round) | server CPU per query in the best round (µs) |
| --- | --- | --- | --- | --- | --- | --- | --- |
$(printf '%s\n' "${rows[@]}")

dnsperf with make bench-dns's query mix for $ROUNDS rounds of $((DURATION / ROUNDS))s while churn changes the TPs for ${DURATION}s; CPU from /proc/PID/stat.

| node part | objects ($TPS TPs) | to the first complete view (s) | entries | live heap after GC (MB) | peak RSS (MB) |
| --- | --- | --- | --- | --- | --- |
$(printf '%s\n' "${nodes[@]}")
OUT
