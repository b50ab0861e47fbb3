#!/usr/bin/env bash
# run.sh [FAKE_TP]: how long fake-tp takes to --generate a benchmark's
# objects and how much memory it needs (make bench-generate). It starts
# fake-tp with $TPS TPs (10) and --generate $GENERATE (125000: 1.5M pods,
# services and Endpoints in all, 1.64M objects with the configmaps and
# namespaces), in one process as the benchmarks start them, under
# /usr/bin/time -v; waits until it is ready (its admin /readyz), stops it,
# and prints the time to ready, fake-tp's own "took", and the peak RSS.
# FAKE_TP is the binary to measure (default: built from this checkout).
set -euo pipefail
root=$(cd "$(dirname "$0")/../../.." && pwd)
TPS=${TPS:-10} GENERATE=${GENERATE:-125000}
tmp=$(mktemp -d /tmp/tpkit-bench-generate.XXXXXX)
pid=
cleanup() {
	[ -z "$pid" ] || kill "$pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
bin=${1:-}
if [ -z "$bin" ]; then
	(cd "$root" && go build -o "$tmp/fake-tp" ./cmd/fake-tp)
	bin=$tmp/fake-tp
fi
"$root/hack/ensure-tools.sh" curl python3
[ -x /usr/bin/time ] || { echo "run.sh: needs GNU time as /usr/bin/time (apt-get install time)" >&2; exit 1; }
admin=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
start=$(date +%s.%N)
/usr/bin/time -v -o "$tmp/time" "$bin" --partitions "$TPS" --generate "$GENERATE" --listen 127.0.0.1:0 \
	--kubeconfig-dir "$tmp" --admin-listen "127.0.0.1:$admin" >"$tmp/log" 2>&1 &
pid=$!
until curl -fsS "http://127.0.0.1:$admin/readyz" >/dev/null 2>&1; do
	kill -0 "$pid" 2>/dev/null || { cat "$tmp/log" >&2; exit 1; }
	sleep 0.2
done
ready=$(echo "$(date +%s.%N) - $start" | bc)
# Stop fake-tp itself, so that time reports on it.
kill -TERM "$(pgrep -P "$pid")"
wait "$pid" || true
pid=
took=$(sed -n 's/.*"Generated objects".*took="\([^"]*\)".*/\1/p' "$tmp/log")
rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$tmp/time")
cpu=$(awk -F': ' '/User time/ {u=$2} /System time/ {s=$2} END {print u+s}' "$tmp/time")
printf 'fake-tp --partitions %s --generate %s: ready after %.1f s (generating took %s), CPU %.1f s, peak RSS %d MiB\n' \
	"$TPS" "$GENERATE" "$ready" "$took" "$cpu" $((rss / 1024))
