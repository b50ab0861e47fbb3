#!/usr/bin/env bash
# make bench-dns: partition-dns under dnsperf on loopback, against a
# canned-answer miekg/dns server (the floor) in the same run.
#
#   SERVICES=10000 PODS=10000 DURATION=15 ROUNDS=3 LAT_QPS=5000 test/bench/dns/run.sh
#
# 3 fake TPs (test/bench/dns/tps) each get SERVICES services (half
# ClusterIP, half headless with core/v1 Endpoints of 2 ready addresses) and PODS pods; a fifth of
# them are in the system tenant. The query file mixes tenant-form A (45%),
# legacy system A (20%), misses (15%), SRV (10%) and headless A (10%).
# Throughput: dnsperf at full speed (100 outstanding), best of ROUNDS,
# alternating servers. Latency: a second pass at LAT_QPS queries per second
# with per-query timings (dnsperf -v) for p50 and p99. RSS: partition-dns's
# VmRSS after the sync and after the load (split into anonymous and file
# pages), and its peak (VmHWM), in MiB.
set -euo pipefail
cd "$(dirname "$0")/../../.."

SERVICES=${SERVICES:-10000}
PODS=${PODS:-10000}
DURATION=${DURATION:-15}
ROUNDS=${ROUNDS:-3}
LAT_QPS=${LAT_QPS:-5000}
DNS_PORT=${DNS_PORT:-25553}
FLOOR_PORT=${FLOOR_PORT:-25554}
HEALTH_PORT=${HEALTH_PORT:-25580}

. test/bench/lib.sh
bench_init
go build -o "$work/floor" ./test/bench/dns/floor
start_tps "$SERVICES" "$PODS"

start=$(date +%s.%N)
start_pdns
sync_s=$(echo "$(date +%s.%N) - $start" | bc)
sleep 2
rss_idle=$(awk '/VmRSS/{print $2}' /proc/$pdns/status)

"$work/floor" --listen "127.0.0.1:$FLOOR_PORT" >"$work/floor.log" 2>&1 &
pids+=($!)
sleep 0.5

perf() { # perf PORT: prints "qps lost"
  dnsperf -s 127.0.0.1 -p "$1" -d "$work/queries.txt" -l "$DURATION" 2>&1 |
    awk '/Queries per second/{q=$4} /Queries lost/{l=$3} END{print q, l}'
}
lat() { # lat PORT: prints "p50 p99" in microseconds
  dnsperf -s 127.0.0.1 -p "$1" -d "$work/queries.txt" -l 5 -Q "$LAT_QPS" -v 2>/dev/null |
    awk '/^> /{print $NF}' | sort -n |
    awk '{a[NR]=$1} END{printf "%.0f %.0f\n", a[int(NR*0.5)]*1e6, a[int(NR*0.99)]*1e6}'
}

best_p=0; best_f=0; lost_p=0; lost_f=0
for r in $(seq "$ROUNDS"); do
  read -r q l < <(perf "$FLOOR_PORT"); echo "round $r floor:         $q qps, $l lost" >&2
  (( $(echo "$q > $best_f" | bc) )) && best_f=$q; lost_f=$((lost_f + l))
  read -r q l < <(perf "$DNS_PORT"); echo "round $r partition-dns: $q qps, $l lost" >&2
  (( $(echo "$q > $best_p" | bc) )) && best_p=$q; lost_p=$((lost_p + l))
done
read -r p50_f p99_f < <(lat "$FLOOR_PORT")
read -r p50_p p99_p < <(lat "$DNS_PORT")
rss_load=$(awk '/VmRSS/{print $2}' /proc/$pdns/status)
hwm=$(awk '/VmHWM/{print $2}' /proc/$pdns/status)
anon=$(awk '/RssAnon/{print $2}' /proc/$pdns/status)
file=$(awk '/RssFile/{print $2}' /proc/$pdns/status)
ratio=$(echo "scale=3; $best_p / $best_f" | bc)
mib() { awk -v k="$1" 'BEGIN{printf "%.1f", k / 1024}'; } # kB -> MB (MiB), one decimal

cat <<OUT

| | partition-dns | floor (canned miekg/dns) |
| --- | --- | --- |
| QPS (best of $ROUNDS x ${DURATION}s) | $(printf %.0f "$best_p") | $(printf %.0f "$best_f") |
| ratio to floor | $ratio | 1 |
| queries lost | $lost_p | $lost_f |
| p50 / p99 latency at $LAT_QPS qps (µs) | $p50_p / $p99_p | $p50_f / $p99_f |

partition-dns: 3 TPs x ($SERVICES services + $PODS pods), synced and ready in ${sync_s}s;
RSS after sync $(mib "$rss_idle") MB, after load $(mib "$rss_load") MB, peak (VmHWM) $(mib "$hwm") MB;
after load $(mib "$anon") MB of it anonymous (heap, stacks, runtime) and $(mib "$file") MB the binary's file pages.
OUT
