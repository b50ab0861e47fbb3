#!/usr/bin/env bash
# Start-up memory of partition-dns against 3 fake TPs (the scale goal): time to
# ready, peak RSS (VmHWM) and steady RSS, for each --list-page-size given.
#
#   SERVICES=72000 PODS=72000 PAGE_SIZES="-1 500" test/bench/memory/run.sh
#
# Each TP gets SERVICES services (half headless, with core/v1 Endpoints of 2
# ready addresses) and PODS pods: (1.5 x SERVICES + PODS) x 3 DNS-relevant
# objects in all. partition-dns runs once per page size against the same
# TPs, one run at a time.
set -euo pipefail
cd "$(dirname "$0")/../../.."

SERVICES=${SERVICES:-20000}
PODS=${PODS:-20000}
PAGE_SIZES=${PAGE_SIZES:-"-1 500"}
DNS_PORT=${DNS_PORT:-25753}
HEALTH_PORT=${HEALTH_PORT:-25780}

. test/bench/lib.sh
bench_init
start_tps "$SERVICES" "$PODS"
objects=$(( (SERVICES * 3 / 2 + PODS) * 3 ))
mib() { awk -v k="$1" 'BEGIN{printf "%.0f", k / 1024}'; }

echo
echo "| --list-page-size | objects | ready (s) | peak RSS (MB) | steady RSS (MB) |"
echo "| --- | --- | --- | --- | --- |"
for size in $PAGE_SIZES; do
  start=$(date +%s.%N)
  start_pdns --list-page-size "$size"
  ready=$(echo "$(date +%s.%N) - $start" | bc)
  sleep 5
  hwm=$(awk '/VmHWM/{print $2}' /proc/$pdns/status)
  rss=$(awk '/VmRSS/{print $2}' /proc/$pdns/status)
  kill -TERM "$pdns"; wait "$pdns" 2>/dev/null || true
  printf '| %s | %s | %.1f | %s | %s |\n' "$size" "$objects" "$ready" "$(mib "$hwm")" "$(mib "$rss")"
done
