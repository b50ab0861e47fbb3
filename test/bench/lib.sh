# Shared by the load runs under test/bench: sourced, not run.
#
# bench_init makes $work (removed at exit, with every process in pids
# stopped), needs dnsperf, and builds partition-dns and the fake TPs there.
bench_init() {
  command -v dnsperf >/dev/null || { echo "dnsperf is missing: apt-get install -y dnsperf" >&2; exit 1; }
  work=$(mktemp -d)
  pids=()
  trap bench_cleanup EXIT INT TERM
  go build -o "$work/partition-dns" ./cmd/partition-dns
  go build -o "$work/tps" ./test/bench/dns/tps
}

bench_cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}

# start_tps SERVICES PODS [TPS]: TPS (default 3) fake TPs with SERVICES
# services and PODS pods each, kubeconfigs and queries.txt in $work, their
# list in $KUBECONFIGS; returns once they serve, their PID in $tps_pid.
start_tps() {
  local n=${3:-3} i
  echo "Seeding $n fake TPs with $1 services and $2 pods each..." >&2
  "$work/tps" --dir "$work" --partitions "$n" --services "$1" --pods "$2" >"$work/tps.out" 2>"$work/tps.err" &
  local tps=$!
  tps_pid=$tps
  KUBECONFIGS=$work/tp1.kubeconfig
  for i in $(seq 2 "$n"); do KUBECONFIGS=$KUBECONFIGS,$work/tp$i.kubeconfig; done
  pids+=($tps)
  until grep -q READY "$work/tps.out"; do
    kill -0 "$tps" 2>/dev/null || { cat "$work/tps.err" >&2; exit 1; }
    sleep 0.5
  done
}

# start_pdns [FLAG...]: partition-dns over the TPs of $KUBECONFIGS on
# 127.0.0.1:$DNS_PORT, with /readyz on $HEALTH_PORT; returns once it is
# ready, its PID in $pdns.
start_pdns() {
  "$work/partition-dns" --tenant-server-kubeconfig "$KUBECONFIGS" \
    --listen "127.0.0.1:$DNS_PORT" --health-listen "127.0.0.1:$HEALTH_PORT" --metrics-listen "" --ready-listen "" \
    --upstream none "$@" >"$work/pdns.log" 2>&1 &
  pdns=$!
  pids+=($pdns)
  until curl -fsS "http://127.0.0.1:$HEALTH_PORT/readyz" >/dev/null 2>&1; do
    kill -0 "$pdns" 2>/dev/null || { cat "$work/pdns.log" >&2; exit 1; }
    sleep 0.1
  done
}
