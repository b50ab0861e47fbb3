#!/usr/bin/env bash
# make demo: build, start 3 fake tenant partitions seeded from examples/tps,
# start partition-dns on loopback, print real answers, then keep running
# until Ctrl-C, which stops everything.
set -euo pipefail
cd "$(dirname "$0")/.."

BIN=${BIN:-bin}
TP_LISTEN=${DEMO_TP_LISTEN:-127.0.0.1:0}   # port 0: each TP takes a free port
DNS_PORT=${DEMO_DNS_PORT:-25353}
HEALTH_PORT=${DEMO_HEALTH_PORT:-25380}
METRICS_PORT=${DEMO_METRICS_PORT:-25381}
ADMIN_PORT=${DEMO_ADMIN_PORT:-25340}

say() { printf '\n\033[1m%s\033[0m\n' "$*"; }

./hack/ensure-tools.sh dig

say "Building"
mkdir -p "$BIN"
go build -o "$BIN/fake-tp" ./cmd/fake-tp
go build -o "$BIN/partition-dns" ./cmd/partition-dns

work=$(mktemp -d)
pids=()
cleanup() {
  trap - INT TERM EXIT
  if [ ${#pids[@]} -gt 0 ]; then
    echo
    echo "Stopping partition-dns and the fake TPs..."
    for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  fi
  rm -rf "$work"
  echo "Stopped."
}
trap 'cleanup; exit 0' INT TERM
trap cleanup EXIT

say "Starting 3 fake tenant partitions (logs: $work/fake-tp.log)"
"$BIN/fake-tp" --partitions 3 --listen "$TP_LISTEN" --kubeconfig-dir "$work" \
  --seed examples/tps --admin-listen "127.0.0.1:$ADMIN_PORT" >"$work/fake-tp.log" 2>&1 &
pids+=($!)
for i in $(seq 1 100); do
  [ -s "$work/tp1.kubeconfig" ] && [ -s "$work/tp2.kubeconfig" ] && [ -s "$work/tp3.kubeconfig" ] && break
  kill -0 "${pids[0]}" 2>/dev/null || { cat "$work/fake-tp.log"; exit 1; }
  sleep 0.1
done
for tp in tp1 tp2 tp3; do echo "$tp: $(grep -m1 'server:' "$work/$tp.kubeconfig" | awk '{print $2}')  kubeconfig $work/$tp.kubeconfig"; done

say "Starting partition-dns on 127.0.0.1:$DNS_PORT (logs: $work/partition-dns.log)"
"$BIN/partition-dns" \
  --tenant-server-kubeconfig "$work/tp1.kubeconfig,$work/tp2.kubeconfig,$work/tp3.kubeconfig" \
  --listen "127.0.0.1:$DNS_PORT" --zone cluster.local --zone in-addr.arpa --zone ip6.arpa \
  --health-listen "127.0.0.1:$HEALTH_PORT" --metrics-listen "127.0.0.1:$METRICS_PORT" \
  --tenant-isolation --isolation-unknown-sources allow >"$work/partition-dns.log" 2>&1 &
pids+=($!)
for i in $(seq 1 300); do
  curl -fsS "http://127.0.0.1:$HEALTH_PORT/readyz" >/dev/null 2>&1 && break
  kill -0 "${pids[1]}" 2>/dev/null || { cat "$work/partition-dns.log"; exit 1; }
  sleep 0.1
done
echo "ready: $(curl -fsS "http://127.0.0.1:$HEALTH_PORT/readyz")"

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

cat <<MSG

$(tput bold 2>/dev/null)Try it further$(tput sgr0 2>/dev/null) (everything stops on Ctrl-C):
  dig -p $DNS_PORT @127.0.0.1 frontend.web.acme.svc.cluster.local
  dig -p $DNS_PORT @127.0.0.1 -b 127.0.0.3 kube-dns.kube-system.svc.cluster.local
  dig -p $DNS_PORT @127.0.0.1 +tcp _postgres._tcp.db.web.acme.svc.cluster.local SRV
  kubectl --kubeconfig $work/tp2.kubeconfig -n default create service clusterip api --tcp=80   # then:
  dig -p $DNS_PORT @127.0.0.1 api.default.svc.cluster.local    # tp2's system tenant, legacy name
  # fake-tp's fault controls (outages, to watch serve-stale) are on http://127.0.0.1:$ADMIN_PORT (pkg/faketp AdminHandler)
  curl http://127.0.0.1:$HEALTH_PORT/readyz/partitions         # per-TP state (ok, not synced, stale)
  curl -s http://127.0.0.1:$METRICS_PORT/metrics | grep tpkit_dns
Logs: $work/partition-dns.log and $work/fake-tp.log
MSG
echo "Running. Press Ctrl-C to stop."
while kill -0 "${pids[0]}" 2>/dev/null && kill -0 "${pids[1]}" 2>/dev/null; do sleep 1; done
echo "A process exited unexpectedly; see the logs above." >&2
exit 1
