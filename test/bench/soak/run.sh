#!/usr/bin/env bash
# make soak (flat memory over hours): partition-dns for SOAK under a steady load,
# watched for growth and checked for exact answers at the end.
#
#   SOAK=30m SOAK_WARMUP=5m SERVICES=13334 CHANGES=500 KEEP=3000 QPS=5000 FORWARD_PCT=15 test/bench/soak/run.sh
#
# 3 fake TPs (test/bench/dns/tps) each hold SERVICES services (half
# headless, with core/v1 Endpoints) and as many pods: 2.5 objects per
# service, so 13334 gives 100,005 objects over the 3 TPs (counted from the
# TPs and printed at the start). partition-dns runs over them with its
# defaults, as root in a memory cgroup of MEMCG_MIB (CoreDNS's limit, as in
# a pod), and forwards names outside the zones to an upstream that answers
# every query at once (test/bench/dns/floor).
#
# For the whole run:
#   - test/bench/scale/churn makes CHANGES changes a second, keeping KEEP
#     services of its own: creates until KEEP exist, then deletes (the
#     oldest) and creates in turn, so the object count stays flat; each
#     change must show in partition-dns's answers within 10 s;
#   - dnsperf asks at QPS queries a second (-Q), make bench-dns's mix of
#     cluster names with FORWARD_PCT % distinct *.example.org names added,
#     in slices of one minute, so that each minute's answers and errors are
#     known. After each slice the script samples partition-dns's RSS
#     (/proc/PID/status), heap in use and goroutines (/metrics).
#
# Then churn stops (the changes in flight show first) and
# test/bench/soak/check asks partition-dns for every service's name in the
# TPs, comparing each answer with the TPs' objects, and for every name churn
# deleted, which must be NXDOMAIN.
#
# It fails (exit 1), saying why, when:
#   - a sample after SOAK_WARMUP has RSS or goroutines more than GROWTH_PCT %
#     above the sample at SOAK_WARMUP (the baseline);
#   - dnsperf got any SERVFAIL or other error code, or partition-dns
#     dropped a forwarded query itself (over one of its bounds);
#   - dnsperf lost a query that the kernel did not drop: in a minute, more
#     queries lost than datagrams the kernel dropped at full UDP buffers and
#     receive backlogs (when the shared machine starves a process, its
#     socket fills and the kernel drops; what partition-dns reads it must
#     answer), or more than MAX_LOST_PPM queries per million lost in all
#     (see docs/benchmarks.md, "Soak");
#   - a change of churn never showed, or the final check found a wrong answer;
#   - partition-dns exited.
# It prints a line a minute, and a markdown table and a verdict at the end.
set -euo pipefail
cd "$(dirname "$0")/../../.."

SOAK=${SOAK:-30m}
SOAK_WARMUP=${SOAK_WARMUP:-5m}
SERVICES=${SERVICES:-13334}
CHANGES=${CHANGES:-500}
KEEP=${KEEP:-3000}
QPS=${QPS:-5000}
FORWARD_PCT=${FORWARD_PCT:-15}
GROWTH_PCT=${GROWTH_PCT:-5}
MAX_LOST_PPM=${MAX_LOST_PPM:-100}
MEMCG_MIB=${MEMCG_MIB:-170}
DNS_PORT=${DNS_PORT:-26153}
UPSTREAM_PORT=${UPSTREAM_PORT:-26154}
HEALTH_PORT=${HEALTH_PORT:-26180}
METRICS_PORT=${METRICS_PORT:-26181}

# minutes DURATION: whole minutes in 30m, 1h, 90s or 1800.
minutes() {
  local s
  case $1 in
  *h) s=$((${1%h} * 3600)) ;;
  *m) s=$((${1%m} * 60)) ;;
  *s) s=${1%s} ;;
  *) s=$1 ;;
  esac
  echo $((s / 60))
}
total=$(minutes "$SOAK") warmup=$(minutes "$SOAK_WARMUP")
if ((warmup < 1 || total <= warmup)); then
  echo "SOAK ($SOAK) must be longer than SOAK_WARMUP ($SOAK_WARMUP), and both at least a minute" >&2
  exit 2
fi

. test/bench/lib.sh
bench_init
go build -o "$work/churn" ./test/bench/scale/churn
go build -o "$work/check" ./test/bench/soak/check
go build -o "$work/floor" ./test/bench/dns/floor

start_tps "$SERVICES" "$SERVICES"
objects=$("$work/check" --kubeconfigs "$KUBECONFIGS" --count)
echo "TPs: $objects" >&2

"$work/floor" --listen "127.0.0.1:$UPSTREAM_PORT" >"$work/floor.log" 2>&1 &
pids+=($!)
memcg_make "$MEMCG_MIB"
pdns_upstream=127.0.0.1:$UPSTREAM_PORT pdns_metrics=127.0.0.1:$METRICS_PORT
start_pdns --profiling

# The queries: bench-dns's cluster names, and after them, in their stead
# FORWARD_PCT % of the lines, names under example.org, each once per pass
# through the file: at QPS 5000 a pass takes ~24 s, longer than the
# upstream's 5 s TTL, so they reach the upstream rather than the cache.
awk -v p="$FORWARD_PCT" '{ print; for (acc += p / (100 - p); acc >= 1; acc--) printf "s%06d.soak.example.org A\n", n++ }' \
  "$dir/queries.txt" >"$work/soak.txt"

churn_start=$(date +%s)
"$work/churn" --kubeconfigs "$KUBECONFIGS" --dns "127.0.0.1:$DNS_PORT" --rate "$CHANGES" --duration 0 --keep "$KEEP" \
  --deleted "$work/deleted.txt" >"$work/churn.out" 2>"$work/churn.err" &
churn=$!
pids+=($churn)

fail=()
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
metric() { awk -v m="$1" '$1 == m || index($1, m "{") == 1 { n += $2 } END { printf "%.0f", n }' "$work/metrics"; }
# drops: the datagrams dropped so far, "SOCKETS BUFFERS BACKLOG": at
# partition-dns's and the upstream's sockets (/proc/net/udp), and
# machine-wide at any full UDP receive buffer (dnsperf's too:
# RcvbufErrors, /proc/net/snmp) and in the kernel's receive backlogs
# (/proc/net/softnet_stat).
drops() {
  local sockets buffers backlog=0 _d d
  sockets=$(awk -v a="$(printf ':%04X' "$DNS_PORT")" -v b="$(printf ':%04X' "$UPSTREAM_PORT")" \
    'substr($2, length($2) - 4) == a || substr($2, length($2) - 4) == b { n += $NF } END { print n + 0 }' /proc/net/udp)
  buffers=$(awk '$1 == "Udp:" && $6 ~ /^[0-9]+$/ { print $6 }' /proc/net/snmp)
  while read -r _d d _; do backlog=$((backlog + 16#$d)); done </proc/net/softnet_stat
  echo "$sockets $buffers $backlog"
}
rows=() rss=() gor=()
lost_all=0 bad_all=0 answered_all=0 fwd_all=0
read -r sock0 buf0 backlog0 < <(drops)
fwd0=0
echo "minute  RSS MiB  heap MiB  goroutines  answered  lost  SERVFAIL  other  drops: forwards sockets buffers backlog  load" >&2
for m in $(seq "$total"); do
  out=$(dnsperf -s 127.0.0.1 -p "$DNS_PORT" -d "$work/soak.txt" -l 60 -Q "$QPS" 2>&1) || true
  kill -0 "$pdns" 2>/dev/null || { echo "partition-dns exited in minute $m:" >&2; tail -20 "$dir/pdns.log" >&2; exit 1; }
  # Goroutines: the least of three scrapes a second apart, so that one
  # that only passes (a forward, a watch being renewed) is not counted
  # while a leaked one is.
  gor[m]=
  for _ in 1 2 3; do
    curl -fsS "http://127.0.0.1:$METRICS_PORT/metrics" >"$work/metrics"
    g=$(metric go_goroutines)
    ((${gor[m]:-g} < g)) || gor[m]=$g
    sleep 1
  done
  rss[m]=$(awk '/^VmRSS/ { print $2 * 1024 }' "/proc/$pdns/status")
  heap=$(metric go_memstats_heap_inuse_bytes)
  read -r answered lost servfail other < <(awk '
    /Queries completed/ { c = $3 } /Queries lost/ { l = $3 }
    /Response codes/ { for (i = 3; i < NF; i += 3) { n = $(i + 1) + 0; if ($i == "SERVFAIL") s += n; else if ($i != "NOERROR" && $i != "NXDOMAIN") o += n } }
    END { print c + 0, l + 0, s + 0, o + 0 }' <<<"$out")
  if ((answered == 0)); then echo "dnsperf got no answers in minute $m:" >&2; echo "$out" >&2; exit 1; fi
  load=$(cut -d' ' -f1 /proc/loadavg)
  # Where lost queries went: partition-dns's own drops of forwards
  # (tpkit_dns_forward_dropped_total), the sockets', the kernel's.
  fwd=$(metric tpkit_dns_forward_dropped_total)
  read -r sock buf backlog < <(drops)
  d_fwd=$((fwd - fwd0)) d_sock=$((sock - sock0)) d_buf=$((buf - buf0)) d_backlog=$((backlog - backlog0))
  fwd0=$fwd sock0=$sock buf0=$buf backlog0=$backlog
  printf '%6d  %7s  %8s  %10d  %8d  %4d  %8d  %5d  %15d %7d %7d %7d  %4s\n' "$m" "$(mib "${rss[m]}")" "$(mib "$heap")" "${gor[m]}" \
    "$answered" "$lost" "$servfail" "$other" "$d_fwd" "$d_sock" "$d_buf" "$d_backlog" "$load" >&2
  rows+=("| $m | $(mib "${rss[m]}") | $(mib "$heap") | ${gor[m]} | $answered | $lost | $servfail | $other | $d_fwd / $d_sock / $d_buf / $d_backlog | $load |")
  answered_all=$((answered_all + answered)) lost_all=$((lost_all + lost)) bad_all=$((bad_all + servfail + other)) fwd_all=$((fwd_all + d_fwd))
  if ((lost > d_buf + d_backlog)); then
    fail+=("minute $m: dnsperf lost $lost queries, the kernel dropped only $((d_buf + d_backlog)) datagrams: partition-dns lost some itself")
  fi
  if ((m > warmup)); then
    if ((rss[m] * 100 > rss[warmup] * (100 + GROWTH_PCT))); then
      fail+=("minute $m: RSS $(mib "${rss[m]}") MiB is more than $GROWTH_PCT % above minute $warmup's $(mib "${rss[warmup]}") MiB")
    fi
    if ((gor[m] * 100 > gor[warmup] * (100 + GROWTH_PCT))); then
      fail+=("minute $m: ${gor[m]} goroutines, more than $GROWTH_PCT % above minute $warmup's ${gor[warmup]}")
    fi
  fi
done

# Stop the churn; its changes in flight show (or count as lost) first.
kill -TERM "$churn"
if ! wait "$churn"; then
  fail+=("churn: a change did not show in partition-dns's answers within 10 s (its last errors above)")
  grep -v 'Shutting down' "$work/churn.err" | tail -5 >&2
fi
churn_out=$(cat "$work/churn.out")
read -r _ changes _ <<<"$churn_out"
churn_rate=$((changes / ($(date +%s) - churn_start)))
sleep 1
check_out=$("$work/check" --kubeconfigs "$KUBECONFIGS" --dns "127.0.0.1:$DNS_PORT" --deleted "$work/deleted.txt") ||
  fail+=("final check: partition-dns answered names wrongly (below)")
echo "$check_out" >&2
objects_end=$("$work/check" --kubeconfigs "$KUBECONFIGS" --count)

if ((bad_all > 0)); then fail+=("dnsperf: $bad_all answers were SERVFAIL or another error code"); fi
if ((fwd_all > 0)); then fail+=("partition-dns dropped $fwd_all forwarded queries (tpkit_dns_forward_dropped_total)"); fi
if ((lost_all * 1000000 > answered_all * MAX_LOST_PPM)); then
  fail+=("dnsperf: $lost_all queries lost of $((answered_all + lost_all)), more than $MAX_LOST_PPM per million")
fi

max_rss=0 max_gor=0
for m in $(seq $((warmup + 1)) "$total"); do
  ((rss[m] > max_rss)) && max_rss=${rss[m]}
  ((gor[m] > max_gor)) && max_gor=${gor[m]}
done
cat <<OUT

| minute | RSS (MiB) | heap in use (MiB) | goroutines | answered | lost | SERVFAIL | other errors | datagrams dropped: forwards by partition-dns / at its and the upstream's sockets / at any UDP buffer, machine-wide / in the kernel's backlog, machine-wide | load average |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
$(printf '%s\n' "${rows[@]}")

| | at minute $warmup (baseline) | highest after it | growth (limit $GROWTH_PCT %) |
| --- | --- | --- | --- |
| RSS (MiB) | $(mib "${rss[warmup]}") | $(mib "$max_rss") | $(awk -v a="${rss[warmup]}" -v b="$max_rss" 'BEGIN { printf "%+.1f %%", (b - a) * 100 / a }') |
| goroutines | ${gor[warmup]} | $max_gor | $(awk -v a="${gor[warmup]}" -v b="$max_gor" 'BEGIN { printf "%+.1f %%", (b - a) * 100 / a }') |

TPs at the start: $objects
TPs at the end: $objects_end
partition-dns: peak RSS (VmHWM) $(awk '/^VmHWM/ { printf "%.1f MiB", $2 / 1024 }' "/proc/$pdns/status"), its ${MEMCG_MIB} MiB cgroup's peak use $(memcg_peak)
dnsperf: $answered_all answered at -Q $QPS ($FORWARD_PCT % forwarded names), $lost_all lost, $bad_all SERVFAIL or other errors
churn at $CHANGES changes/s ($churn_rate achieved), keeping $KEEP services: $(tr '\n' ' ' <<<"$churn_out")
final check: $(head -1 <<<"$check_out")
OUT

if ((${#fail[@]})); then
  echo
  echo "SOAK FAILED:"
  printf '  %s\n' "${fail[@]}"
  exit 1
fi
echo
echo "SOAK PASSED: $total minutes, RSS and goroutines within $GROWTH_PCT % of minute $warmup's, every answer right."
