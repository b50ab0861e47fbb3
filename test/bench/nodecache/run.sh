#!/usr/bin/env bash
# make bench-nodecache: what EDNS Client Subnet costs on the node-cache →
# partition-dns path (pod identity through the cache), on loopback, both sides in the same run.
#
#   SERVICES=2000 PODS=2000 DURATION=10 ROUNDS=3 test/bench/nodecache/run.sh
#
# 3 fake TPs (test/bench/dns/tps) and one partition-dns that trusts the node
# (--trusted-forwarders 127.0.0.1/32). Four node-caches forward to it over
# TCP, as in a cluster: with and without --client-subnet, each with its
# cache off (every query goes to partition-dns: the cost of the forward path
# with ECS added, parsed, scoped and answered) and on (the hit path, where
# answers scoped to one pod are looked up per pod). dnsperf runs the query
# mix of make bench-dns against each at full speed, best of ROUNDS,
# alternating the with/without pair, and the table gives the QPS ratio.
set -euo pipefail
cd "$(dirname "$0")/../../.."

SERVICES=${SERVICES:-2000}
PODS=${PODS:-2000}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
DNS_PORT=${DNS_PORT:-25653}
CACHE_PORT=${CACHE_PORT:-25654}
HEALTH_PORT=${HEALTH_PORT:-25680}

. test/bench/lib.sh
bench_init
start_tps "$SERVICES" "$PODS"

start_pdns --trusted-forwarders 127.0.0.1/32

# node-cache IP by configuration: ecs|plain x nocache|cache.
declare -A ip=([ecs-nocache]=127.0.0.61 [plain-nocache]=127.0.0.62 [ecs-cache]=127.0.0.63 [plain-cache]=127.0.0.64)
for cfg in "${!ip[@]}"; do
  args=(node-cache --local-ip "${ip[$cfg]}" --dns-port "$CACHE_PORT" --upstream-svc-ip 127.0.0.1 --upstream-svc-port "$DNS_PORT"
    --upstream-servers 127.0.0.1:9 --setup-interface=false --setup-iptables=false --health-port 0 --metrics-listen-address "")
  [[ $cfg == plain-* ]] && args+=(--client-subnet=false)
  [[ $cfg == *-nocache ]] && args+=(--success-capacity 0 --denial-capacity 0)
  "$work/partition-dns" "${args[@]}" >"$work/$cfg.log" 2>&1 &
  pids+=($!)
done
for cfg in "${!ip[@]}"; do
  until dig +short +time=1 +tries=1 @"${ip[$cfg]}" -p "$CACHE_PORT" dns-version.cluster.local TXT >/dev/null 2>&1; do sleep 0.1; done
done

perf() { # perf IP: prints "qps lost"
  dnsperf -s "$1" -p "$CACHE_PORT" -d "$work/queries.txt" -l "$DURATION" 2>&1 |
    awk '/Queries per second/{q=$4} /Queries lost/{l=$3} END{print q, l}'
}
declare -A best lost
for cfg in "${!ip[@]}"; do best[$cfg]=0; lost[$cfg]=0; done
for r in $(seq "$ROUNDS"); do
  for mode in nocache cache; do
    for side in ecs plain; do
      cfg=$side-$mode
      read -r q l < <(perf "${ip[$cfg]}"); echo "round $r $cfg: $q qps, $l lost" >&2
      (( $(echo "$q > ${best[$cfg]}" | bc) )) && best[$cfg]=$q; lost[$cfg]=$((lost[$cfg] + l))
    done
  done
done
ratio() { echo "scale=3; $1 / $2" | bc; }

cat <<OUT

| node-cache → partition-dns | with ECS (default) | without (--client-subnet=false) | ratio |
| --- | --- | --- | --- |
| cache off: every query forwarded (QPS) | $(printf %.0f "${best[ecs-nocache]}") | $(printf %.0f "${best[plain-nocache]}") | $(ratio "${best[ecs-nocache]}" "${best[plain-nocache]}") |
| cache on (QPS) | $(printf %.0f "${best[ecs-cache]}") | $(printf %.0f "${best[plain-cache]}") | $(ratio "${best[ecs-cache]}" "${best[plain-cache]}") |
| queries lost | $((lost[ecs-nocache] + lost[ecs-cache])) | $((lost[plain-nocache] + lost[plain-cache])) | |

Best of $ROUNDS x ${DURATION}s each; 3 TPs x ($SERVICES services + $PODS pods); one partition-dns trusting 127.0.0.1/32.
OUT
