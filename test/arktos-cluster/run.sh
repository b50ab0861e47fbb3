#!/usr/bin/env bash
# run.sh ARKTOS_BIN IMAGE_DIR: the cluster lab (make check-arktos-cluster),
# on the cluster of make cluster-up (hack/cluster.sh, docs/local-cluster.md):
# the resource partition, two TPs and two real nodes (Arktos's kubelet on
# dockerd through dockershim, kube-proxy), tpkit deployed from deploy/.
#
# It brings the cluster up, builds this package's test (build tag
# arktoscluster) and runs it inside node 1's network and mount namespaces,
# where its checks see what the node sees (the cluster DNS IP through
# kube-proxy and the node cache, the NOTRACK rules, the kubelet's port, its
# dockerd), then the cross-node checks of test/local-cluster from the host
# (the last kills node 2), then takes the cluster down; cluster-down says what, if
# anything, was left on the host, and run.sh fails then too. The checkout's
# git status from before cluster-up goes to the test (deploy-overlay-clean).
# The binaries may be stock: the lab then shows what they get wrong.
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=$(cd "${1:?usage: run.sh ARKTOS_BIN IMAGE_DIR}" && pwd) || exit 2
images=$(cd "${2:?usage: run.sh ARKTOS_BIN IMAGE_DIR}" && pwd) || exit 2
dir=${CLUSTER_DIR:-/tmp/tpkit-cluster}
before=$(git -C "$root" status --porcelain) || exit 1
"$root/hack/cluster.sh" up "$bin" "$images" || exit 1
rc=1
echo "== building the lab (go test -c -tags arktoscluster ./test/arktos-cluster)"
if (cd "$root" && go test -c -tags arktoscluster -o "$dir/arktos-cluster.test" ./test/arktos-cluster); then
	echo "== running it in tpkit-node1's namespaces"
	cd "$root/test/arktos-cluster" &&
		nsenter -t "$(cat "$dir/tpkit-node1/holder.pid")" -m -n --wd="$root/test/arktos-cluster" -- env CLUSTER_DIR="$dir" GIT_STATUS_BEFORE="$before" \
			AWS_EC2_METADATA_DISABLED=true PATH="$PATH" \
			"$dir/arktos-cluster.test" -test.v -test.count=1 -test.timeout "${LAB_TIMEOUT:-14m}" && rc=0
fi
# Then the cross-node checks of test/local-cluster (make check-cluster),
# from the host; the last of them kills node 2, so they come after the lab.
echo "== the cross-node checks (test/local-cluster)"
(cd "$root/test/local-cluster" && CLUSTER_DIR="$dir" go test -tags localcluster -count=1 -v -timeout 20m .) || rc=1
if [ "$rc" != 0 ]; then
	logs=${TMPDIR:-/tmp}/tpkit-cluster-logs
	rm -rf "$logs" && cp -r "$dir/logs" "$logs" && echo "== the lab failed: the cluster's logs are in $logs"
fi
"$root/hack/cluster.sh" down || rc=1
exit $rc
