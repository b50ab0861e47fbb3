#!/usr/bin/env bash
# make bench-udp: partition-dns's UDP path against the kernel's practical
# limit (batched socket I/O), in the same run: udpfloor -batch 32
# (test/bench/udp/udpfloor: a reflector answering every query with a canned
# record, no DNS work, recvmmsg/sendmmsg; UDPFLOOR names another build of
# it), partition-dns with --udp-batch 32 (the default) and with
# --udp-batch 1 (one read and one write per packet).
#
#   DURATION=10 ROUNDS=3 test/bench/udp/run.sh
#
# Each server gets 2 SO_REUSEPORT sockets (the cores here). dnsperf runs the
# query mix of make bench-dns at full speed against each in turn; the table
# gives the best QPS and the server's CPU per query (utime + stime from
# /proc/PID/stat over the run, divided by the queries answered).
set -euo pipefail
cd "$(dirname "$0")/../../.."

SERVICES=${SERVICES:-2000}
PODS=${PODS:-2000}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
DNS_PORT=${DNS_PORT:-25853}
HEALTH_PORT=${HEALTH_PORT:-25880}
UDPFLOOR=${UDPFLOOR:-}

. test/bench/lib.sh
bench_init
if [[ -z $UDPFLOOR ]]; then
  go build -o "$work/udpfloor" ./test/bench/udp/udpfloor && UDPFLOOR=$work/udpfloor
fi
start_tps "$SERVICES" "$PODS"

# name -> "pid port"
declare -A srv
start_pdns --udp-sockets 2 --udp-batch 32
srv[batch32]="$pdns $DNS_PORT"
DNS_PORT=$((DNS_PORT + 1)) HEALTH_PORT=$((HEALTH_PORT + 1)) start_pdns --udp-sockets 2 --udp-batch 1
srv[batch1]="$pdns $((DNS_PORT + 1))"
"$UDPFLOOR" -addr "127.0.0.1:$((DNS_PORT + 2))" -sockets 2 -batch 32 >"$work/floor.log" 2>&1 &
pids+=($!)
srv[udpfloor]="$! $((DNS_PORT + 2))"
sleep 0.5

declare -A best cpu
for name in "${!srv[@]}"; do best[$name]=0; cpu[$name]=0; done
for r in $(seq "$ROUNDS"); do
  for name in udpfloor batch32 batch1; do
    read -r pid port <<<"${srv[$name]}"
    dnsperf_round "$pid" "$port" "$DURATION"
    echo "round $r $name: $round_qps qps, $round_cpu µs CPU per query" >&2
    if ((round_qps > best[$name])); then best[$name]=$round_qps; cpu[$name]=$round_cpu; fi
  done
done
ratio() { echo "scale=2; $1 / $2" | bc; }

cat <<OUT

| server | QPS (best of $ROUNDS x ${DURATION}s) | × udpfloor | server CPU per query (µs) | × udpfloor |
| --- | --- | --- | --- | --- |
| udpfloor -batch 32 | $(printf %.0f "${best[udpfloor]}") | 1 | ${cpu[udpfloor]} | 1 |
| partition-dns --udp-batch 32 | $(printf %.0f "${best[batch32]}") | $(ratio "${best[batch32]}" "${best[udpfloor]}") | ${cpu[batch32]} | $(ratio "${cpu[batch32]}" "${cpu[udpfloor]}") |
| partition-dns --udp-batch 1 | $(printf %.0f "${best[batch1]}") | $(ratio "${best[batch1]}" "${best[udpfloor]}") | ${cpu[batch1]} | $(ratio "${cpu[batch1]}" "${cpu[udpfloor]}") |

3 TPs x ($SERVICES services + $PODS pods); each server on 2 SO_REUSEPORT sockets; CPU from /proc/PID/stat.
OUT
