#!/usr/bin/env bash
# make bench-flood: cluster names under a forward flood (their fair share), for
# partition-dns and CoreDNS in the same run.
#
#   DURATION=10 ROUNDS=3 COREDNS_VERSION=v1.15.0 TPS=1 test/bench/flood/run.sh
#
# One fake TP (cmd/fake-tp) holds the kube-dns service (TPS=N: N fake TPs
# each hold it, partition-dns watches them all and CoreDNS tp1, as one
# CoreDNS per TP would; the question comes from an address no pod has, so
# partition-dns answers tp1's kube-dns at TTL 0, the name being held by
# several TPs); PARTITION_DNS names a partition-dns binary to measure
# instead of this checkout's. An upstream that
# never answers (test/bench/flood/silent) is both servers' forwarder, so
# every forwarded query waits until it times out. For each server, each
# round runs dnsperf asking for the cluster name alone (-c 2 -q 100) for
# DURATION seconds, then the same while a second dnsperf floods random
# names under example.org (-c 8 -q 5000, closed loop: a query is sent as
# soon as one is answered or times out). The table gives the mean QPS of
# the rounds, the share kept (the sum of the flood rounds over the sum of
# the rounds alone: a ratio within one run, since the 2 cores here are
# shared), the server's CPU per answered query in the rounds alone (dnsperf
# shares the 2 cores, so a server that needs less leaves dnsperf more and
# the QPS ratio understates the CPU one) and the server's peak RSS (VmHWM).
#
# The UDP floor (test/bench/udp/udpfloor -sockets 2 -batch 32: partition-dns's
# socket shape, a canned answer and no DNS work) gets the same rounds alone:
# what any responder can answer on this kernel beside dnsperf, so that the
# floor over CoreDNS says how far above CoreDNS any server could be here.
#
# CoreDNS (COREDNS_VERSION) is built once from the Go module proxy into
# ~/.cache/tpkit/coredns-VERSION, and runs kubeadm's plugins that matter
# here: kubernetes (against the fake TP through a kubeconfig; the TP serves
# EndpointSlices for it), forward with max_concurrent 1000, cache 30. If it
# cannot be built, the run goes on with partition-dns alone.
set -euo pipefail
cd "$(dirname "$0")/../../.."

DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
COREDNS_VERSION=${COREDNS_VERSION:-v1.15.0}
PDNS_PORT=${PDNS_PORT:-25953}
COREDNS_PORT=${COREDNS_PORT:-25954}
UPSTREAM_PORT=${UPSTREAM_PORT:-25955}
FLOOR_PORT=${FLOOR_PORT:-25956}
HEALTH_PORT=${HEALTH_PORT:-25980}
READY_PORT=${READY_PORT:-25981}
FLOOD_NAMES=${FLOOD_NAMES:-1000000}
TPS=${TPS:-1}

. test/bench/lib.sh
bench_init
if [[ -n ${PARTITION_DNS:-} ]]; then cp "$PARTITION_DNS" "$work/partition-dns"; fi
go build -o "$work/fake-tp" ./cmd/fake-tp
go build -o "$work/silent" ./test/bench/flood/silent
go build -o "$work/udpfloor" ./test/bench/udp/udpfloor

# CoreDNS, built once.
coredns=$HOME/.cache/tpkit/coredns-$COREDNS_VERSION
if [[ ! -x $coredns ]]; then
  echo "Building CoreDNS $COREDNS_VERSION from the Go module proxy into $coredns (a few minutes)..." >&2
  mkdir -p "$(dirname "$coredns")"
  if GOFLAGS=-buildvcs=false GOBIN="$work/gobin" go install "github.com/coredns/coredns@$COREDNS_VERSION" >"$work/coredns-build.log" 2>&1; then
    mv "$work/gobin/coredns" "$coredns"
  else
    echo "CoreDNS $COREDNS_VERSION could not be built; its last lines:" >&2
    tail -5 "$work/coredns-build.log" >&2
    echo "=> measuring partition-dns alone, without the CoreDNS row." >&2
    coredns=
  fi
fi

# The TP, with kube-dns in the system tenant.
mkdir -p "$work/seed"
cat >"$work/seed/system.yaml" <<'EOF'
apiVersion: v1
kind: Namespace
metadata: {name: kube-system, tenant: system}
---
apiVersion: v1
kind: Service
metadata: {name: kube-dns, namespace: kube-system, tenant: system}
spec:
  clusterIP: 10.96.0.10
  clusterIPs: [10.96.0.10]
  ports: [{name: dns, protocol: UDP, port: 53}]
EOF
names=tp1
kubeconfigs=$work/tp1.kubeconfig
for i in $(seq 2 "$TPS"); do names=$names,tp$i; kubeconfigs=$kubeconfigs,$work/tp$i.kubeconfig; done
"$work/fake-tp" --partition-names "$names" --listen 127.0.0.1:0 --kubeconfig-dir "$work" --seed "$work/seed" \
  --admin-listen "" --endpointslices >"$work/fake-tp.log" 2>&1 &
pids+=($!)
until grep -qs '"Serving tenant partition"' "$work/fake-tp.log"; do
  kill -0 "${pids[-1]}" 2>/dev/null || { cat "$work/fake-tp.log" >&2; exit 1; }
  sleep 0.1
done
kubeconfig=$work/tp1.kubeconfig

"$work/silent" -addr "127.0.0.1:$UPSTREAM_PORT" >"$work/silent.log" 2>&1 &
pids+=($!)

# name -> "pid port"
declare -A srv
"$work/partition-dns" --tenant-server-kubeconfig "$kubeconfigs" --listen "127.0.0.1:$PDNS_PORT" \
  --health-listen "127.0.0.1:$HEALTH_PORT" --metrics-listen "" --ready-listen "" \
  --upstream "127.0.0.1:$UPSTREAM_PORT" >"$work/pdns.log" 2>&1 &
pids+=($!)
srv[partition-dns]="$! $PDNS_PORT"
until curl -fsS "http://127.0.0.1:$HEALTH_PORT/readyz" >/dev/null 2>&1; do
  kill -0 "${pids[-1]}" 2>/dev/null || { cat "$work/pdns.log" >&2; exit 1; }
  sleep 0.1
done
servers=(partition-dns)

"$work/udpfloor" -addr "127.0.0.1:$FLOOR_PORT" -sockets 2 -batch 32 >"$work/udpfloor.log" 2>&1 &
pids+=($!)
srv[floor]="$! $FLOOR_PORT"

if [[ -n $coredns ]]; then
  cat >"$work/Corefile" <<EOF
.:$COREDNS_PORT {
    bind 127.0.0.1
    errors
    ready 127.0.0.1:$READY_PORT
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $kubeconfig
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    forward . 127.0.0.1:$UPSTREAM_PORT {
        max_concurrent 1000
    }
    cache 30
}
EOF
  # Its client-go would otherwise ask for a watch-list, which the TP (as
  # Arktos) ignores, and wait for it forever.
  KUBE_FEATURE_WatchListClient=false "$coredns" -conf "$work/Corefile" >"$work/coredns.log" 2>&1 &
  pids+=($!)
  srv[coredns]="$! $COREDNS_PORT"
  until curl -fsS "http://127.0.0.1:$READY_PORT/ready" >/dev/null 2>&1; do
    kill -0 "${pids[-1]}" 2>/dev/null || { cat "$work/coredns.log" >&2; exit 1; }
    sleep 0.1
  done
  servers+=(coredns)
fi
servers+=(floor)

echo "kube-dns.kube-system.svc.cluster.local A" >"$work/cluster.txt"
awk -v n="$FLOOD_NAMES" 'BEGIN { srand(); for (i = 0; i < n; i++) printf "r%08x%06x.example.org A\n", int(rand() * 4294967296), i }' >"$work/flood.txt"

# cluster_qps PID PORT: prints dnsperf's QPS for the cluster name over
# DURATION and the server's CPU (utime + stime of PID, /proc/PID/stat) per
# answered query in µs: the second is what the server spends, whoever is
# the limit of the first (dnsperf shares the 2 cores).
cluster_qps() {
  local t0 t1 out
  t0=$(awk '{print $14 + $15}' "/proc/$1/stat")
  out=$(dnsperf -s 127.0.0.1 -p "$2" -d "$work/cluster.txt" -c 2 -q 100 -l "$DURATION" 2>&1)
  t1=$(awk '{print $14 + $15}' "/proc/$1/stat")
  awk -v t="$((t1 - t0))" -v hz="$(getconf CLK_TCK)" '
    /Queries completed/ { n = $3 }
    /Queries per second/ { q = $4 }
    END { if (n > 0) printf "%.0f %.2f\n", q, t * 1000000 / hz / n; else print "0 0" }' <<<"$out"
}

declare -A alone under cpu
for name in "${servers[@]}"; do alone[$name]=0; under[$name]=0; cpu[$name]=0; done
for r in $(seq "$ROUNDS"); do
  for name in "${servers[@]}"; do
    read -r pid port <<<"${srv[$name]}"
    read -r a c < <(cluster_qps "$pid" "$port")
    alone[$name]=$((alone[$name] + a))
    cpu[$name]=$(echo "${cpu[$name]} + $c" | bc)
    if [[ $name == floor ]]; then # no forwarder: alone only
      echo "round $r UDP floor: $a QPS ($c µs CPU per query)" >&2
      continue
    fi
    dnsperf -s 127.0.0.1 -p "$port" -d "$work/flood.txt" -c 8 -q 5000 -l $((DURATION + 2)) >"$work/flood-$name-$r.out" 2>&1 &
    flood=$!
    sleep 1 # the flood fills the forwarding bounds
    read -r u _ < <(cluster_qps "$pid" "$port")
    wait "$flood"
    fq=$(awk '/Queries per second/{printf "%.0f", $4}' "$work/flood-$name-$r.out")
    echo "round $r $name: cluster $a QPS alone ($c µs CPU per query), $u under the flood ($(echo "scale=2; $u / $a" | bc)); the flood's answered QPS $fq" >&2
    under[$name]=$((under[$name] + u))
  done
done

echo
echo "| server | cluster QPS alone | server CPU per query alone (µs) | under the flood | share kept | peak RSS |"
echo "| --- | --- | --- | --- | --- | --- |"
for name in "${servers[@]}"; do
  read -r pid port <<<"${srv[$name]}"
  hwm=$(awk '/VmHWM/{printf "%.0f MiB", $2 / 1024}' "/proc/$pid/status")
  label=$name
  [[ $name == coredns ]] && label="CoreDNS ${COREDNS_VERSION#v}"
  if [[ $name == floor ]]; then
    echo "| the UDP floor (no DNS work) | $((alone[$name] / ROUNDS)) | $(echo "scale=2; ${cpu[$name]} / $ROUNDS" | bc) | - | - | $hwm |"
    continue
  fi
  echo "| $label | $((alone[$name] / ROUNDS)) | $(echo "scale=2; ${cpu[$name]} / $ROUNDS" | bc) | $((under[$name] / ROUNDS)) | $(echo "scale=2; ${under[$name]} / ${alone[$name]}" | bc) | $hwm |"
done
if [[ -n $coredns ]]; then
  echo
  echo "partition-dns / CoreDNS, cluster QPS alone: $(echo "scale=2; ${alone[partition-dns]} / ${alone[coredns]}" | bc)"
  echo "CoreDNS / partition-dns, server CPU per query alone: $(echo "scale=2; ${cpu[coredns]} / ${cpu[partition-dns]}" | bc)"
  echo "the UDP floor / CoreDNS, cluster QPS alone (a responder with no DNS work, beside the same dnsperf): $(echo "scale=2; ${alone[floor]} / ${alone[coredns]}" | bc)"
fi
echo "partition-dns / the UDP floor, cluster QPS alone: $(echo "scale=2; ${alone[partition-dns]} / ${alone[floor]}" | bc)"
echo
echo "$TPS fake TP(s) hold kube-dns.kube-system; partition-dns watches all of them, CoreDNS tp1."
echo "Mean of $ROUNDS rounds of ${DURATION}s each (cluster name: dnsperf -c 2 -q 100; flood: dnsperf -c 8 -q 5000 of random"
echo "*.example.org names, upstream never answers); share = sum under the flood / sum alone, within this run."
echo "The UDP floor: test/bench/udp/udpfloor -sockets 2 -batch 32, a canned answer, no DNS work, the rounds alone only."
[[ -n $coredns ]] || echo "CoreDNS was not measured: it could not be built (see above)."
