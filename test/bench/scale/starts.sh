#!/usr/bin/env bash
# Single starts of partition-dns against one set of fake TPs (the 1.5M-object
# goal: ready within 30 s): the TPs are seeded once, then each binary of BINARIES starts ROUNDS
# times, the binaries alternated, each start in its own memory cgroup of
# MEMCG_MIB. For each start: the time from exec to /readyz, partition-dns's
# CPU (user + system) to ready, the CPU the TPs spent meanwhile (they serve
# the list pages on the same cores), the steady RSS 3 s after ready, VmHWM,
# and the cgroup's peak use and OOM kills.
#
#   SIZE=12500:125000:10 TPS=10 MEMCG_MIB=340 ROUNDS=2 \
#     BINARIES="/tmp/old/partition-dns /tmp/new/partition-dns" test/bench/scale/starts.sh
#
# BINARIES defaults to this tree's partition-dns; PDNS_FLAGS are more flags
# for every start (--profiling, say). With TPS_PID and KUBECONFIGS set, the
# starts use TPs that are already serving (test/bench/dns/tps with SIZE and
# TPS) instead of seeding their own. With PROFILE=1 each start is also
# profiled (CPU, from exec to ready) into $PROFILE_DIR/start-N.cpu.pprof.
set -euo pipefail
cd "$(dirname "$0")/../../.."

SIZE=${SIZE:-12500:125000:10}
TPS=${TPS:-10}
MEMCG_MIB=${MEMCG_MIB:-340}
ROUNDS=${ROUNDS:-2}
DNS_PORT=${DNS_PORT:-26953}
HEALTH_PORT=${HEALTH_PORT:-26980}
PROFILE=${PROFILE:-0}
PROFILE_DIR=${PROFILE_DIR:-/tmp}

. test/bench/lib.sh
bench_init
BINARIES=${BINARIES:-$work/partition-dns}
clk=$(getconf CLK_TCK)
# cpu PID: the process's user + system CPU in seconds.
cpu() { awk -v t="$clk" '{printf "%.2f", ($14 + $15) / t}' "/proc/$1/stat"; }

IFS=: read -r svcs pods addrs <<<"$SIZE"
if [ -n "${TPS_PID:-}" ]; then
  # TPs already serving (test/bench/dns/tps of SIZE and TPS, its PID and
  # kubeconfigs given), for several runs against one seeding.
  tps_pid=$TPS_PID
else
  TPS_FLAGS="--endpoint-addresses ${addrs:-10}" start_tps "$svcs" "${pods:-$svcs}" "$TPS"
fi
objects=$(( (2 * svcs + ${pods:-$svcs}) * TPS ))
echo "| start | binary | ready (s) | CPU to ready (s) | TPs' CPU meanwhile (s) | steady RSS (MiB) | bytes per object | VmHWM (MiB) | cgroup peak |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
n=0
for r in $(seq "$ROUNDS"); do
  for bin in $BINARIES; do
    n=$((n + 1))
    memcg_make "$MEMCG_MIB" "start$n"
    [ "$bin" -ef "$work/partition-dns" ] || cp "$bin" "$work/partition-dns"
    flags=(${PDNS_FLAGS:-})
    ((PROFILE)) && flags+=(--profiling)
    tps0=$(cpu "$tps_pid")
    start=$(date +%s.%N)
    if ((PROFILE)); then
      # start_pdns waits for ready; the profile runs from its first second.
      (sleep 1; curl -fsS -o "$PROFILE_DIR/start-$n.cpu.pprof" "http://127.0.0.1:$HEALTH_PORT/debug/pprof/profile?seconds=${PROFILE_SECONDS:-40}") &
      prof=$!
    fi
    # In a subshell, whose exit on a start that dies (an OOM kill) ends
    # only that start.
    if ! (start_pdns "${flags[@]}" && echo "$pdns" >"$work/pdns.pid") 2>"$work/start.err"; then
      echo "| $n | $bin | died: $(grep -c . "$work/start.err") log lines, last: $(tail -1 "$work/start.err" | cut -c1-80) | | | | | | $(memcg_peak) |"
      ((PROFILE)) && wait "$prof"
      memcg_drop
      continue
    fi
    pdns=$(cat "$work/pdns.pid")
    ready=$(echo "$(date +%s.%N) - $start" | bc)
    c=$(cpu "$pdns") tc=$(echo "$(cpu "$tps_pid") - $tps0" | bc)
    sleep 3
    rss=$(awk '/VmRSS/{print $2}' "/proc/$pdns/status") hwm=$(awk '/VmHWM/{print $2}' "/proc/$pdns/status")
    ((PROFILE)) && wait "$prof"
    kill -TERM "$pdns"
    while kill -0 "$pdns" 2>/dev/null; do sleep 0.1; done # not this shell's child
    echo "| $n | $bin | $(printf %.1f "$ready") | $c | $tc | $((rss / 1024)) | $((rss * 1024 / objects)) | $((hwm / 1024)) | $(memcg_peak) |"
    memcg_drop
  done
done
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
