#!/usr/bin/env bash
# make bench-node: stock and patched Arktos kube-proxy
# against the same fake TPs, each kube-proxy alone in a network namespace of
# its own, one at a time, in every mode (proxy mode × iptables backend).
#
#   ARKTOS_BIN=STOCK/bin PATCHED_BIN=WORK/bin SIZES="1500 9000 30000" TPS=3 \
#     MODES="iptables/legacy iptables/nft ipvs/legacy" TIMEOUT=300 ENDPOINT_ROUNDS=3 \
#     SETTLE=10 test/bench/node/run.sh
#
# A size is the services of all TPS TPs together; fake-tp --generate fills
# each TP with SIZE/TPS services of 10 ready endpoints each (its pods, in
# the system tenant of every TP: the same names in each TP). For each size
# one fake-tp serves the TPs in a network namespace of its own; each
# kube-proxy run gets a fresh namespace joined to it by a veth pair, so it
# starts from empty rules, and it runs with PATH starting with a folder
# whose iptables, iptables-save and iptables-restore (and ip6tables*) are
# the mode's backend: Debian's xtables-legacy-multi or xtables-nft-multi.
# Both take the same flags, their defaults otherwise (the patched one's
# --tenant-partition-sync-timeout 30s, no --tenant-partition-state-dir).
# Per run (probe, test/bench/node/probe, measures inside the namespace;
# it stops kube-proxy while it dumps the rules after each sync and leaves
# that time out):
#   - first complete rules: seconds from kube-proxy's start to the end of
#     the first sync whose rules hold every service port of every TP that
#     has a cluster IP (its KUBE-SERVICES jump to a KUBE-SVC chain) and every
#     ready endpoint of those (a KUBE-SEP DNAT), as listed from the TPs at
#     the run's start (the `kubernetes` services included); "> TIMEOUT"
#     when there are none after TIMEOUT seconds;
#   - one new endpoint: a pod of svc-0 made Running and Ready in tp1 (the
#     endpoints controller adds it), seconds from the TP's acknowledgement
#     of that write to the end of the first sync that DNATs to it; the
#     median of ENDPOINT_ROUNDS (3) endpoints added one after the other
#     (Kubernetes 1.18's proxier rewrites every rule on each sync, so this
#     depends on where in a sync the change lands);
#   - steady RSS (VmRSS 10 s after that) and peak RSS (VmHWM), MiB, of the
#     kube-proxy process (its iptables-restore children are not included);
#   - the median iptables-restore kube-proxy traced in its log: the same
#     rules for both proxies, so its ratio shows how the machine's load
#     moved between the two runs.
# Stock and patched take turns in which goes first (by size and mode); with
# PAIRED=1 they run at the same time instead, each in its own namespace with
# its own xtables lock file (XTABLES_LOCKFILE: the default /run/xtables.lock
# would make one wait for the other's restore), so that both see the same
# machine load: the time ratios are then the binaries', not the load's.
# Ratios are patched / stock. ipvs needs the kernel's IPVS: without it
# (/proc/net/ip_vs missing after modprobe ip_vs) each proxy is started in
# ipvs mode once to record what it runs instead, and the mode is reported
# as blocked.
set -euo pipefail
cd "$(dirname "$0")/../../.."
root=$PWD
[ "$(id -u)" = 0 ] || { echo "bench-node needs root (network namespaces, iptables)" >&2; exit 2; }
: "${ARKTOS_BIN:?set ARKTOS_BIN to stock Arktos binaries (kube-proxy)}" "${PATCHED_BIN:?set PATCHED_BIN to the patched binaries (make arktos-patch WORK=DIR: DIR/bin)}"
stock_bin=$(cd "$ARKTOS_BIN" && pwd) patched_bin=$(cd "$PATCHED_BIN" && pwd)
SIZES=${SIZES:-"1500 9000 30000"}
TPS=${TPS:-3}
MODES=${MODES:-"iptables/legacy iptables/nft ipvs/legacy"}
TIMEOUT=${TIMEOUT:-300}
SETTLE=${SETTLE:-10}
ENDPOINT_ROUNDS=${ENDPOINT_ROUNDS:-3}
PAIRED=${PAIRED:-0}

work=$(mktemp -d /tmp/tpkit-benchnode.XXXXXX)
tpns=tpkit-benchnode-tp-$$
proxyns=
cleanup() {
  # A paired run's proxy namespaces are its subshells' own.
  for ns in $proxyns $(ip netns list | awk -v p="tpkit-benchnode-[a-z]*-$$-" '$1 ~ "^" p {print $1}') $tpns; do
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap "exit 1" INT TERM

go build -o "$work/fake-tp" ./cmd/fake-tp
go build -o "$work/probe" ./test/bench/node/probe
# The backends: xtables-*-multi picks its program by the name it is run as.
for b in legacy nft; do
  mkdir -p "$work/$b"
  for t in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
    ln -s "/usr/sbin/xtables-$b-multi" "$work/$b/$t"
  done
done
ipvs_ok=false
{ [ -d /proc/net/ip_vs ] || modprobe ip_vs 2>/dev/null; } && [ -d /proc/net/ip_vs ] && command -v ipvsadm >/dev/null && ipvs_ok=true

# The TPs' namespace: fake-tp on 10.254.0.1 (its loopback), reached from
# proxy namespace k over the veth pair 10.254.k.1 – 10.254.k.2.
ip netns add "$tpns"
ip -n "$tpns" link set lo up
ip -n "$tpns" addr add 10.254.0.1/32 dev lo
tpn() { ip netns exec "$tpns" "$@"; }
run_k=0

# start_tps SIZE: fake-tp with SIZE services over TPS TPs; kubeconfigs in
# $kcs, returns once every TP is ready.
start_tps() {
  local per=$(( $1 / TPS )) i
  mkdir -p "$work/tps$1"
  echo "== $1 services: fake-tp --partitions $TPS --generate $((per * 10))" >&2
  local t0=$SECONDS
  ip netns exec "$tpns" env AWS_EC2_METADATA_DISABLED=true "$work/fake-tp" --partitions "$TPS" --listen 10.254.0.1:16443 \
    --admin-listen 127.0.0.1:16440 --kubeconfig-dir "$work/tps$1" --generate $((per * 10)) >"$work/tps$1/fake-tp.log" 2>&1 &
  fake=$!
  kcs=
  for i in $(seq "$TPS"); do kcs=$kcs${kcs:+,}$work/tps$1/tp$i.kubeconfig; done
  until tpn curl -fsS http://127.0.0.1:16440/readyz >/dev/null 2>&1; do
    kill -0 "$fake" 2>/dev/null || { tail -20 "$work/tps$1/fake-tp.log" >&2; exit 1; }
    sleep 1
  done
  echo "   ready after $((SECONDS - t0)) s, RSS $(awk '/VmRSS/{printf "%d MiB", $2/1024}' /proc/$fake/status)" >&2
}

stop_tps() { kill "$fake" 2>/dev/null || true; wait "$fake" 2>/dev/null || true; }

# run_proxy WHICH BIN MODE BACKEND SIZE [K]: one kube-proxy run, the K-th
# (its namespace, veth and endpoint addresses; the next one when not
# given); sets first, endpoint, steady, peak (and note).
run_proxy() {
  local which=$1 bin=$2 mode=$3 backend=$4 size=$5
  if [ -n "${6:-}" ]; then run_k=$6; else run_k=$((run_k + 1)); fi
  local k=$run_k ns=tpkit-benchnode-$which-$$-$run_k log=$work/kube-proxy.$size.$mode-$backend.$which.log
  proxyns=$ns
  ip netns add "$ns"
  ip -n "$ns" link set lo up
  ip -n "$ns" link add bn0 type veth peer name "bn$k" netns "$tpns"
  ip -n "$ns" addr add "10.254.$k.2/24" dev bn0
  ip -n "$tpns" addr add "10.254.$k.1/24" dev "bn$k"
  ip -n "$ns" link set bn0 up
  ip -n "$tpns" link set "bn$k" up
  ip -n "$ns" route add default via "10.254.$k.1"
  local pn="ip netns exec $ns env PATH=$work/$backend:$PATH"
  local want
  want=$($pn "$work/probe" expect --kubeconfigs "$kcs")
  local start
  start=$(date +%s.%N)
  $pn AWS_EC2_METADATA_DISABLED=true XTABLES_LOCKFILE="$work/xtables.$k.lock" "$bin/kube-proxy" --proxy-mode="$mode" --kubeconfig="${kcs%%,*}" \
    --tenant-server-kubeconfig="$kcs" --hostname-override=bench-node --bind-address=127.0.0.1 \
    --healthz-bind-address=127.0.0.1 --healthz-port=10256 --metrics-bind-address=127.0.0.1 --metrics-port=10249 \
    --conntrack-max-per-core=0 --conntrack-min=0 --conntrack-tcp-timeout-established=0 \
    --conntrack-tcp-timeout-close-wait=0 --v=2 >"$log" 2>&1 &
  local pid=$!
  first= endpoint= endpoints= steady= peak= note= restores=
  local running=
  for _ in $(seq 100); do
    running=$($pn curl -fsS http://127.0.0.1:10249/proxyMode 2>/dev/null) && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  if [ "$running" != "$mode" ]; then
    note="asked for $mode, runs ${running:-nothing}: $(grep -m3 -E "use ipvs proxy|Can't use ipvs proxier|Using [a-z]+ Proxier" "$log" | sed 's/^[^]]*] //' | paste -sd';' || true)"
  fi
  if [ -z "$note" ] && kill -0 "$pid" 2>/dev/null; then
    local out
    out=$($pn "$work/probe" wait --pid "$pid" --mode "$mode" --metrics http://127.0.0.1:10249/metrics \
      $(awk '{print "--services", $2, "--endpoints", $4}' <<<"$want") --since "$start" --timeout "${TIMEOUT}s") || true
    echo "   $which $mode/$backend: want $want; first complete rules: $out" >&2
    if [[ $out == timeout* ]]; then
      first="> $TIMEOUT"
    elif [ -n "$out" ]; then
      first=$(awk '{printf "%.1f", $1}' <<<"$out")
      local e times=()
      for e in $(seq "$ENDPOINT_ROUNDS"); do
        local ip="10.253.$k.$((e + 1))" acked
        acked=$($pn "$work/probe" endpoint --kubeconfig "${kcs%%,*}" --pod "bench-node-$k-$e" --ip "$ip") ||
          { note="adding endpoint $ip failed"; break; }
        out=$($pn "$work/probe" wait --pid "$pid" --mode "$mode" --metrics http://127.0.0.1:10249/metrics --ip "$ip" \
          --since "$acked" --timeout "${TIMEOUT}s") || true
        echo "   $which: new endpoint $ip: $out" >&2
        if [[ $out == timeout* ]]; then times+=(">$TIMEOUT"); break; fi
        times+=("$(awk '{printf "%.1f", $1}' <<<"$out")")
      done
      [ ${#times[@]} = 0 ] || endpoint=$(median "${times[@]}")
      endpoints=$(IFS=,; echo "${times[*]}")
      sleep "$SETTLE"
    fi
  fi
  if kill -0 "$pid" 2>/dev/null; then
    steady=$(awk '/VmRSS/{printf "%d", $2/1024}' "/proc/$pid/status")
    peak=$(awk '/VmHWM/{printf "%d", $2/1024}' "/proc/$pid/status")
  else
    note="${note:+$note; }kube-proxy exited: $(tail -1 "$log")"
  fi
  for p in $(ip netns pids "$ns"); do kill -9 "$p" 2>/dev/null || true; done
  wait "$pid" 2>/dev/null || true
  restores=$(restore_times "$log")
  ip netns del "$ns"
  proxyns=
}

# restore_times LOG: the median and count of the iptables-restore runs
# kube-proxy traced (those over 2 s, Kubernetes 1.18's utiltrace
# threshold), in seconds. The rules restored are the same for both proxies,
# so the ratio of these medians is the machine's load drift between the two
# runs, not the proxies'.
restore_times() {
  # No trace at all (every restore under 2 s) is no figure, not a failure.
  { grep -o '"iptables restore".*total time: [0-9.ms]*' "$1" || true; } | sed 's/.*total time: //' | awk '
    /ms$/ {sub("ms", ""); print $0 / 1000; next}
    /m/ {split($0, a, "m"); sub("s", "", a[2]); print a[1] * 60 + a[2]; next}
    {sub("s", ""); print}' | sort -n | awk '{a[NR] = $1} END {if (NR) printf "%.1f (%d)", NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2, NR}'
}

# median T...: the median of the times (one or more), "> TIMEOUT" when
# the last timed out.
median() {
  [[ ${!#} != ">"* ]] || { echo "> $TIMEOUT"; return; }
  printf '%s\n' "$@" | sort -n | awk '{a[NR] = $1} END {printf "%.1f", NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}

# ratio A B: B / A with two decimals, or "–".
ratio() {
  if [[ $1 =~ ^[0-9.]+$ && $2 =~ ^[0-9.]+$ ]] && awk -v a="$1" 'BEGIN{exit !(a > 0)}'; then
    awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f\n", b / a}'
  else
    echo "–"
  fi
}

# fake-tp --generate N gives each of its N/10 services 10 pods only when
# N/100 namespaces divide the services evenly.
for size in $SIZES; do
  (( size % (TPS * 10) == 0 )) || { echo "SIZES: $size is not a multiple of $((TPS * 10)) (10 endpoints a service over $TPS TPs)" >&2; exit 2; }
done

rows=() blocked=()
j=0
for size in $SIZES; do
  start_tps "$size"
  for m in $MODES; do
    mode=${m%/*} backend=${m#*/}
    j=$((j + 1))
    if [ "$mode" = ipvs ] && ! $ipvs_ok; then
      # What each kube-proxy does when asked for ipvs here, once.
      if [ ${#blocked[@]} = 0 ]; then
        for w in stock patched; do
          bin=$stock_bin; [ $w = stock ] || bin=$patched_bin
          run_proxy "$w" "$bin" ipvs "$backend" "$size"
          blocked+=("$w: ${note:-runs ipvs}")
        done
      fi
      continue
    fi
    order="stock patched"; [ $((j % 2)) = 0 ] && order="patched stock"
    declare -A r=()
    if [ "$PAIRED" = 1 ]; then
      # Both at once, each in a subshell that leaves its results in a file.
      pids=()
      for w in $order; do
        bin=$stock_bin; [ $w = stock ] || bin=$patched_bin
        run_k=$((run_k + 1))
        ( run_proxy "$w" "$bin" "$mode" "$backend" "$size" "$run_k"
          declare -p first endpoint endpoints steady peak note restores >"$work/result.$w" ) &
        pids+=($!)
      done
      wait "${pids[@]}" || true
    fi
    for w in $order; do
      if [ "$PAIRED" = 1 ]; then
        first= endpoint= endpoints= steady= peak= note="no result" restores=
        # shellcheck disable=SC1090
        [ ! -f "$work/result.$w" ] || source "$work/result.$w"
      else
        bin=$stock_bin; [ $w = stock ] || bin=$patched_bin
        run_proxy "$w" "$bin" "$mode" "$backend" "$size"
      fi
      r[$w-first]=$first r[$w-endpoint]=$endpoint r[$w-endpoints]=$endpoints r[$w-steady]=$steady r[$w-peak]=$peak r[$w-note]=$note r[$w-restores]=$restores
      [ -z "$note" ] || echo "   $w: $note" >&2
    done
    row="| $size | $mode / $backend | ${r[stock-first]:-–} / ${r[patched-first]:-–} | $(ratio "${r[stock-first]}" "${r[patched-first]}")"
    row="$row | ${r[stock-endpoint]:-–} / ${r[patched-endpoint]:-–} | $(ratio "${r[stock-endpoint]}" "${r[patched-endpoint]}")"
    row="$row | ${r[stock-restores]:-–} / ${r[patched-restores]:-–} | $(ratio "${r[stock-restores]%% *}" "${r[patched-restores]%% *}")"
    row="$row | ${r[stock-steady]:-–} / ${r[patched-steady]:-–} | $(ratio "${r[stock-steady]}" "${r[patched-steady]}")"
    row="$row | ${r[stock-peak]:-–} / ${r[patched-peak]:-–} | $(ratio "${r[stock-peak]}" "${r[patched-peak]}") |"
    rows+=("$row")
    echo "$row" >&2
    echo "   new endpoint, each round: stock ${r[stock-endpoints]:-–}, patched ${r[patched-endpoints]:-–}" >&2
    unset r
  done
  stop_tps
done

cat <<OUT

| services ($TPS TPs, 10 endpoints each) | mode / iptables backend | first complete rules (s), stock / patched | ratio | one new endpoint (s, median of $ENDPOINT_ROUNDS), stock / patched | ratio | iptables-restore, median (s) (runs), stock / patched: the load | ratio | steady RSS (MiB), stock / patched | ratio | peak RSS, VmHWM (MiB), stock / patched | ratio |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
$(printf '%s\n' "${rows[@]}")
OUT
if [ ${#blocked[@]} -gt 0 ]; then
  echo
  echo "ipvs: not measured, this kernel has no IPVS (/proc/net/ip_vs missing after modprobe ip_vs, or no ipvsadm):"
  printf -- '- %s\n' "${blocked[@]}"
fi
echo
echo "TIMEOUT=${TIMEOUT}s per wait; $([ "$PAIRED" = 1 ] && echo "stock and patched ran at the same time (PAIRED=1)" || echo "stock and patched ran one after the other"); load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
