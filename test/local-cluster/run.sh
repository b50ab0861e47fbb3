#!/usr/bin/env bash
# run.sh ARKTOS_BIN IMAGE_DIR (make check-cluster): cluster-up, the checks of
# this package against it, cluster-down. It fails when a check fails or
# when cluster-down leaves anything on the host.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:?usage: run.sh ARKTOS_BIN IMAGE_DIR}
images=${2:?usage: run.sh ARKTOS_BIN IMAGE_DIR}
"$root/hack/cluster.sh" up "$bin" "$images" || exit 1
rc=0
(cd "$root/test/local-cluster" && go test -tags localcluster -count=1 -v -timeout 20m .) || rc=$?
if [ "$rc" != 0 ]; then
	logs=${TMPDIR:-/tmp}/tpkit-cluster-logs
	rm -rf "$logs" && cp -r "${CLUSTER_DIR:-/tmp/tpkit-cluster}/logs" "$logs" && echo "== a check failed: the cluster's logs are in $logs"
fi
"$root/hack/cluster.sh" down || rc=1
exit $rc
