# Shared by the load runs under test/bench: sourced, not run.
#
# bench_init makes $work (removed at exit, with every process in pids
# stopped and every cgroup in memcgs removed), needs dnsperf, and builds
# partition-dns and the fake TPs there. The files of the TPs and servers
# started next (kubeconfigs, queries.txt, logs) go in $dir, $work unless a
# run sets it.
bench_init() {
  command -v dnsperf >/dev/null || { echo "dnsperf is missing: apt-get install -y dnsperf" >&2; exit 1; }
  work=$(mktemp -d)
  dir=$work
  pids=()
  memcgs=()
  trap bench_cleanup EXIT INT TERM
  go build -o "$work/partition-dns" ./cmd/partition-dns
  go build -o "$work/tps" ./test/bench/dns/tps
}

bench_cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  for c in "${memcgs[@]}"; do rmdir "$c" 2>/dev/null || true; done
  rm -rf "$work"
}

# start_tps SERVICES PODS [TPS]: TPS (default 3) fake TPs with SERVICES
# services and PODS pods each, kubeconfigs and queries.txt in $dir, their
# list in $KUBECONFIGS; returns once they serve, their PID in $tps_pid.
# TPS_FLAGS are more flags for test/bench/dns/tps.
start_tps() {
  local n=${3:-3} i
  echo "Seeding $n fake TPs with $1 services and $2 pods each..." >&2
  mkdir -p "$dir"
  "$work/tps" --dir "$dir" --partitions "$n" --services "$1" --pods "$2" ${TPS_FLAGS:-} >"$dir/tps.out" 2>"$dir/tps.err" &
  local tps=$!
  tps_pid=$tps
  KUBECONFIGS=$dir/tp1.kubeconfig
  for i in $(seq 2 "$n"); do KUBECONFIGS=$KUBECONFIGS,$dir/tp$i.kubeconfig; done
  pids+=($tps)
  until grep -q READY "$dir/tps.out"; do
    kill -0 "$tps" 2>/dev/null || { cat "$dir/tps.err" >&2; exit 1; }
    sleep 0.5
  done
}

# tps_collect [PID [OUT]]: has the TPs of start_tps (PID, $tps_pid; their
# stdout OUT, $dir/tps.out) collect their garbage, and returns once they
# have: their collection then does not fall in the window measured next.
tps_collect() {
  local p=${1:-$tps_pid} out=${2:-$dir/tps.out} n
  n=$(grep -c COLLECTED "$out" || true)
  kill -USR1 "$p"
  until (($(grep -c COLLECTED "$out" || true) > n)); do
    kill -0 "$p" 2>/dev/null || { echo "the TPs ($p) exited" >&2; exit 1; }
    sleep 0.1
  done
}

# memcg_make MIB [NAME]: a memory cgroup limited to MIB MiB, as a
# container's limit would be (cgroup v1's memory controller or v2), its
# directory in $memcg; $memcg is empty for MIB 0, or when none can be made
# (not root, no controller). NAME tells a run's cgroups apart.
memcg_make() {
  memcg=
  [ "$1" -gt 0 ] || return 0
  local self base
  if self=$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/self/cgroup) && [ -n "$self" ] &&
    base=/sys/fs/cgroup/memory$self && [ -d "$base" ]; then
    memcg=$base/tpkit-bench-$$${2:+-$2}
    mkdir -p "$memcg" 2>/dev/null && echo $(( $1 * 1048576 )) >"$memcg/memory.limit_in_bytes" 2>/dev/null || memcg=
  elif self=$(awk -F: '$1 == "0" {print $3}' /proc/self/cgroup) && [ -f "/sys/fs/cgroup$self/cgroup.controllers" ]; then
    memcg=/sys/fs/cgroup$self/tpkit-bench-$$${2:+-$2}
    mkdir -p "$memcg" 2>/dev/null && echo $(( $1 * 1048576 )) >"$memcg/memory.max" 2>/dev/null || memcg=
  fi
  [ -z "$memcg" ] || memcgs+=("$memcg")
}

# memcg_peak [CGROUP]: the cgroup's ($memcg's) peak usage in MiB and its
# OOM kills, "n/a" without a cgroup.
memcg_peak() {
  local cg=${1-$memcg}
  if [ -z "$cg" ]; then echo "n/a"; return; fi
  if [ -f "$cg/memory.max_usage_in_bytes" ]; then
    echo "$(( $(cat "$cg/memory.max_usage_in_bytes") / 1048576 )) MiB, $(awk '/oom_kill /{print $2}' "$cg/memory.oom_control") OOM kills"
  else
    echo "$(( $(cat "$cg/memory.peak") / 1048576 )) MiB, $(awk '/oom_kill /{print $2}' "$cg/memory.events") OOM kills"
  fi
}

# memcg_drop removes the cgroup once its processes are gone.
memcg_drop() { [ -z "$memcg" ] || rmdir "$memcg" 2>/dev/null || true; memcg=; }

# start_pdns [FLAG...]: partition-dns over the TPs of $KUBECONFIGS on
# 127.0.0.1:$DNS_PORT, with /readyz on $HEALTH_PORT, inside $memcg when it
# is set; returns once it is ready, its PID in $pdns. Names outside the
# zones go to $pdns_upstream (host:port; REFUSED when unset), and /metrics
# is on $pdns_metrics (host:port; off when unset).
start_pdns() {
  local cg=${memcg:+$memcg/cgroup.procs}
  sh -c '[ -z "$1" ] || echo $$ >"$1"; shift; exec "$@"' sh "$cg" "$work/partition-dns" --tenant-server-kubeconfig "$KUBECONFIGS" \
    --listen "127.0.0.1:$DNS_PORT" --health-listen "127.0.0.1:$HEALTH_PORT" --metrics-listen "${pdns_metrics:-}" --ready-listen "" \
    --upstream "${pdns_upstream:-none}" "$@" >"$dir/pdns.log" 2>&1 &
  pdns=$!
  pids+=($pdns)
  until curl -fsS "http://127.0.0.1:$HEALTH_PORT/readyz" >/dev/null 2>&1; do
    kill -0 "$pdns" 2>/dev/null || { cat "$dir/pdns.log" >&2; exit 1; }
    sleep 0.1
  done
}

# dnsperf_round PID PORT SECONDS: dnsperf with $dir/queries.txt against
# 127.0.0.1:PORT for SECONDS; sets round_qps (dnsperf's queries per second)
# and round_cpu (the server PID's user + system CPU per answered query, in
# µs, from /proc/PID/stat).
dnsperf_round() {
  local t0 t1 out answered
  t0=$(awk '{print $14 + $15}' "/proc/$1/stat")
  out=$(dnsperf -s 127.0.0.1 -p "$2" -d "$dir/queries.txt" -l "$3" 2>&1)
  t1=$(awk '{print $14 + $15}' "/proc/$1/stat")
  round_qps=$(awk '/Queries per second/{printf "%.0f", $4}' <<<"$out")
  answered=$(awk '/Queries completed/{print $3}' <<<"$out")
  round_cpu=$(echo "scale=2; ($t1 - $t0) * 1000000 / $(getconf CLK_TCK) / $answered" | bc)
}

