#!/usr/bin/env bash
# make demo: build, start 3 fake tenant partitions seeded from examples/tps,
# start partition-dns on loopback, print real answers, then keep running
# until Ctrl-C, which stops everything.
#
# It fails (exit 1, with a message saying why) when one of its ports is
# taken, or when a program it started exits or never becomes ready; the logs
# of a failed run are kept and their place printed. A clean stop (Ctrl-C,
# SIGTERM) exits 0 and removes them. The DEMO_* variables are in README.md.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-bin}
TP_LISTEN=${DEMO_TP_LISTEN:-127.0.0.1:0}   # port 0: each TP takes a free port
DNS_PORT=${DEMO_DNS_PORT:-25353}
HEALTH_PORT=${DEMO_HEALTH_PORT:-25380}
METRICS_PORT=${DEMO_METRICS_PORT:-25381}
READY_PORT=${DEMO_READY_PORT:-25382}         # CoreDNS-style /ready; partition-dns's default is :8181
ADMIN_PORT=${DEMO_ADMIN_PORT:-25340}
READY_TIMEOUT=${DEMO_READY_TIMEOUT:-60}      # seconds each program has to become ready

say() { printf '\n\033[1m%s\033[0m\n' "$*"; }
die() { printf 'make demo: %s\n' "$*" >&2; exit 1; }

# --- Ports: check them all before building anything, so that a taken port
# fails the demo at once, naming the variable that moves it. -----------------

# holder PROTO HOST PORT: when a socket already holds PORT where binding
# HOST:PORT would clash (HOST itself or a wildcard address), print who holds
# it and succeed; fail when the port is free.
holder() {
  local proto=$1 host=$2 port=$3 line addr who
  if ! command -v ss >/dev/null 2>&1; then
    # Without ss only a TCP listener can be seen (by connecting to it); a
    # taken UDP port shows up as partition-dns exiting at start.
    if [[ $proto == tcp ]] && (: <>"/dev/tcp/$host/$port") 2>/dev/null; then
      echo "tcp"
      return 0
    fi
    return 1
  fi
  # -p names the process (other users' only as root); a bound UDP socket
  # need not be "listening", so UDP looks at all sockets.
  local opts=-Hlntp
  [[ $proto == udp ]] && opts=-Haunp
  while read -r line; do
    [[ -n $line ]] || continue
    addr=$(awk '{print $4}' <<<"$line")
    addr=${addr%:*}
    addr=${addr%%\%*} # 127.0.0.1%lo: bound to a device
    case $addr in
      "$host" | 0.0.0.0 | '*' | '[::]' | "[::ffff:$host]") ;;
      *) [[ $host == 0.0.0.0 ]] || continue ;;
    esac
    who=$(sed -n 's/.*users:(("\([^"]*\)",pid=\([0-9]*\),.*/PID \2, \1/p' <<<"$line")
    echo "$proto, by ${who:-a process ss cannot name here; try: sudo ss -lptun 'sport = :$port'}"
    return 0
  done < <(ss "$opts" "sport = :$port" 2>/dev/null)
  return 1
}

taken=()
declare -A port_owner=()
# want VAR LABEL PORT HOST PROTO...: PORT, set by VAR, must be free to bind on
# HOST for each PROTO; LABEL names it in messages. Problems go to taken.
want() {
  local var=$1 label=$2 port=$3 host=$4 proto who
  shift 4
  [[ $port =~ ^[0-9]+$ ]] && ((10#$port > 0 && 10#$port < 65536)) || die "$var: '$port' is not a port number"
  port=$((10#$port))
  if [[ -n ${port_owner[$port]:-} ]]; then
    taken+=("$label is also ${port_owner[$port]}'s port; set $var to another free port")
    return
  fi
  port_owner[$port]=$var
  for proto in "$@"; do
    if who=$(holder "$proto" "$host" "$port"); then
      taken+=("$label is in use ($who); set $var to a free port")
      return
    fi
  done
}
want DEMO_DNS_PORT "DEMO_DNS_PORT $DNS_PORT" "$DNS_PORT" 127.0.0.1 udp tcp
want DEMO_HEALTH_PORT "DEMO_HEALTH_PORT $HEALTH_PORT" "$HEALTH_PORT" 127.0.0.1 tcp
want DEMO_METRICS_PORT "DEMO_METRICS_PORT $METRICS_PORT" "$METRICS_PORT" 127.0.0.1 tcp
want DEMO_READY_PORT "DEMO_READY_PORT $READY_PORT" "$READY_PORT" 127.0.0.1 tcp
want DEMO_ADMIN_PORT "DEMO_ADMIN_PORT $ADMIN_PORT" "$ADMIN_PORT" 127.0.0.1 tcp
tp_host=${TP_LISTEN%:*} tp_port=${TP_LISTEN##*:}
[[ $TP_LISTEN == *:* && $tp_port =~ ^[0-9]+$ ]] || die "DEMO_TP_LISTEN: '$TP_LISTEN' is not HOST:PORT"
if ((10#$tp_port != 0)); then
  # fake-tp puts tp2 and tp3 on the two ports after tp1's.
  for i in 0 1 2; do
    p=$((10#$tp_port + i))
    want DEMO_TP_LISTEN "DEMO_TP_LISTEN $TP_LISTEN: tp$((i + 1))'s port $p" "$p" "${tp_host:-0.0.0.0}" tcp
  done
fi
if ((${#taken[@]})); then
  printf 'make demo: %s\n' "${taken[@]}" >&2
  exit 1
fi

./hack/ensure-tools.sh dig curl # dig for the answers it shows, curl for the readiness polls

say "Building"
mkdir -p "$BIN"
ldflags="-X github.com/tpkit-dev/tpkit/internal/cliflag.version=$(./hack/version.sh)" # --version
go build -ldflags "$ldflags" -o "$BIN/fake-tp" ./cmd/fake-tp
go build -ldflags "$ldflags" -o "$BIN/partition-dns" ./cmd/partition-dns

# --- Processes, and what happens to them and their logs on the way out. ----

work=$(mktemp -d -t tpkit-demo.XXXXXX)
pids=() names=()
stop_all() {
  ((${#pids[@]})) || return 0
  echo
  echo "Stopping partition-dns and the fake TPs..."
  local i p n
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for i in "${!pids[@]}"; do
    p=${pids[$i]}
    for ((n = 0; n < 100; n++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$p" 2>/dev/null; then
      echo "${names[$i]} did not stop within 10s of SIGTERM; killing it" >&2
      kill -KILL "$p" 2>/dev/null || true
    fi
    wait "$p" 2>/dev/null || true
  done
  pids=()
}
on_exit() {
  local rc=$?
  trap - INT TERM EXIT
  stop_all
  if ((rc == 0)); then
    rm -rf "$work"
    echo "Stopped."
  else
    echo "make demo failed (exit $rc). Its logs are kept in $work:" $(cd "$work" && ls -- *.log 2>/dev/null) >&2
  fi
  exit "$rc"
}
trap on_exit EXIT
trap 'exit 0' INT TERM # Ctrl-C or kill: a clean stop

# fail NAME MESSAGE: the program NAME (its log: $work/NAME.log) failed.
fail() {
  {
    echo
    echo "make demo: $1 $2. The end of $work/$1.log:"
    tail -n 20 "$work/$1.log" | sed 's/^/  | /'
  } >&2
  exit 1
}
# exited NAME PID: fail if PID is gone, with its exit status.
exited() {
  kill -0 "$2" 2>/dev/null && return 0
  local rc=0
  wait "$2" 2>/dev/null || rc=$?
  fail "$1" "exited (status $rc)"
}
# serves PID PORT: PID itself listens on TCP PORT, not some other program
# that answers there (unknown without ss: then assume so).
serves() {
  command -v ss >/dev/null 2>&1 || return 0
  ss -Hlntp "sport = :$2" 2>/dev/null | grep -q "pid=$1,"
}
# wait_ready NAME PID CMD...: poll CMD until it succeeds; fail if PID exits
# first or DEMO_READY_TIMEOUT passes.
wait_ready() {
  local name=$1 pid=$2 deadline=$((SECONDS + READY_TIMEOUT))
  shift 2
  until "$@"; do
    exited "$name" "$pid"
    ((SECONDS < deadline)) || fail "$name" "did not become ready within ${READY_TIMEOUT}s (DEMO_READY_TIMEOUT)"
    sleep 0.2
  done
  exited "$name" "$pid"
}

say "Starting 3 fake tenant partitions (logs: $work/fake-tp.log)"
"$BIN/fake-tp" --partitions 3 --listen "$TP_LISTEN" --kubeconfig-dir "$work" \
  --seed examples/tps --admin-listen "127.0.0.1:$ADMIN_PORT" >"$work/fake-tp.log" 2>&1 &
tp_pid=$!
pids+=("$tp_pid") names+=(fake-tp)
fake_tp_ready() {
  [ -s "$work/tp1.kubeconfig" ] && [ -s "$work/tp2.kubeconfig" ] && [ -s "$work/tp3.kubeconfig" ] &&
    curl -fsS -m 2 -o /dev/null "http://127.0.0.1:$ADMIN_PORT/readyz" 2>/dev/null && serves "$tp_pid" "$ADMIN_PORT"
}
wait_ready fake-tp "$tp_pid" fake_tp_ready
for tp in tp1 tp2 tp3; do echo "$tp: $(grep -m1 'server:' "$work/$tp.kubeconfig" | awk '{print $2}')  kubeconfig $work/$tp.kubeconfig"; done

say "Starting partition-dns on 127.0.0.1:$DNS_PORT (logs: $work/partition-dns.log)"
"$BIN/partition-dns" \
  --tenant-server-kubeconfig "$work/tp1.kubeconfig,$work/tp2.kubeconfig,$work/tp3.kubeconfig" \
  --listen "127.0.0.1:$DNS_PORT" --zone cluster.local --zone in-addr.arpa --zone ip6.arpa \
  --health-listen "127.0.0.1:$HEALTH_PORT" --metrics-listen "127.0.0.1:$METRICS_PORT" \
  --ready-listen "127.0.0.1:$READY_PORT" \
  --tenant-isolation --isolation-unknown-sources allow >"$work/partition-dns.log" 2>&1 &
dns_pid=$!
pids+=("$dns_pid") names+=(partition-dns)
dns_ready() {
  curl -fsS -m 2 -o /dev/null "http://127.0.0.1:$HEALTH_PORT/readyz" 2>/dev/null && serves "$dns_pid" "$HEALTH_PORT"
}
wait_ready partition-dns "$dns_pid" dns_ready
echo "ready: $(curl -fsS -m 2 "http://127.0.0.1:$HEALTH_PORT/readyz")"

q() { # q [dig args...]: print the command and the answer
  echo "\$ dig -p $DNS_PORT @127.0.0.1 $*"
  dig -p "$DNS_PORT" @127.0.0.1 +noall +answer +comments "$@" \
    | grep -E 'status:|^[^;]' | sed -e 's/^;; ->>HEADER<<- opcode: QUERY, /   /' -e 's/, id: [0-9]*$//'
}

say "Tenant-aware names: <svc>.<ns>.<tenant>.svc.cluster.local"
q frontend.web.acme.svc.cluster.local A
q frontend.web.acme.svc.cluster.local AAAA
q frontend.web.globex.svc.cluster.local A
q _http._tcp.frontend.web.acme.svc.cluster.local SRV

say "Headless service (ready endpoints only) and an endpoint hostname"
q db.web.acme.svc.cluster.local A
q db-0.db.web.acme.svc.cluster.local A

say "ExternalName, reverse lookup, schema version"
q search.web.acme.svc.cluster.local CNAME
q -x 10.96.10.1
q dns-version.cluster.local TXT

say "The same system service (kube-dns) in tp1 and tp2: the answer follows the querier's TP"
echo "# from 127.0.0.2, a tp1 pod:"
q -b 127.0.0.2 kube-dns.kube-system.svc.cluster.local A
echo "# from 127.0.0.3, a tp2 pod:"
q -b 127.0.0.3 kube-dns.kube-system.svc.cluster.local A

say "Tenant isolation: acme's pod (127.0.0.11) cannot see globex"
q -b 127.0.0.11 frontend.web.globex.svc.cluster.local A
q -b 127.0.0.11 frontend.web.acme.svc.cluster.local A

say "NXDOMAIN versus NODATA"
q nope.web.acme.svc.cluster.local A
q web.acme.svc.cluster.local A

# Both must still be up: the answers above could have come from them alone.
exited fake-tp "$tp_pid"
exited partition-dns "$dns_pid"

cat <<MSG

$(tput bold 2>/dev/null)Try it further$(tput sgr0 2>/dev/null) (everything stops on Ctrl-C):
  dig -p $DNS_PORT @127.0.0.1 frontend.web.acme.svc.cluster.local
  dig -p $DNS_PORT @127.0.0.1 -b 127.0.0.3 kube-dns.kube-system.svc.cluster.local
  dig -p $DNS_PORT @127.0.0.1 +tcp _postgres._tcp.db.web.acme.svc.cluster.local SRV
  kubectl --kubeconfig $work/tp2.kubeconfig -n default create service clusterip api --tcp=80   # then:
  dig -p $DNS_PORT @127.0.0.1 api.default.svc.cluster.local    # tp2's system tenant, legacy name
  # fake-tp's fault controls (outages, to watch serve-stale) are on http://127.0.0.1:$ADMIN_PORT (testbed/faketp AdminHandler)
  curl http://127.0.0.1:$HEALTH_PORT/readyz/partitions         # per-TP state (ok, not synced, stale)
  curl http://127.0.0.1:$READY_PORT/ready                      # CoreDNS's ready plugin
  curl -s http://127.0.0.1:$METRICS_PORT/metrics | grep tpkit_dns
Logs: $work/partition-dns.log and $work/fake-tp.log (kept if the demo fails, removed on Ctrl-C)
MSG
echo "Running. Press Ctrl-C to stop."
while true; do
  exited fake-tp "$tp_pid"
  exited partition-dns "$dns_pid"
  sleep 1
done
