#!/usr/bin/env bash
# run.sh ARKTOS_BIN IMAGE_DIR: the cluster lab (make check-arktos-cluster).
# Arktos's real kubelet (not hollow-node) with a real container runtime
# (dockerd 20.10, through the kubelet's dockershim), Arktos's kube-proxy, and
# tpkit's images run as pods, all inside namespaces made here:
#
#   - a network namespace: a loopback, a veth pair with both ends inside it
#     (lab0 has 10.254.0.1, which the API servers advertise and pods reach;
#     the default route goes into the pair, so nothing leaves), and the pods'
#     CNI bridge, made by the bridge plugin;
#   - a private mount namespace, kept by a holder process, with tmpfs on
#     /run, /var/lib, /var/log, /opt, /etc/docker and /root/.kube (dockerd,
#     its containerd, dockershim and kubectl write there), the cgroup
#     hierarchies mounted again (`ip netns exec` remounts /sys without
#     them), its own /etc/hosts (the API servers reach the kubelet by node
#     name), and the four kernel sysctls the kubelet sets globally
#     (vm.overcommit_memory, vm.panic_on_oom, kernel.panic,
#     kernel.panic_on_oops) shadowed by files that already hold the values it
#     wants, so that it writes nothing of the host's;
#   - one cgroup subtree, /tpkit-cluster-PID in every v1 hierarchy: the
#     kubelet's --cgroup-root and dockerd's --cgroup-parent, so every pod and
#     container cgroup is made under it, and removed at the end.
#
# dockerd runs with its state in the lab's folder, no bridge, no iptables
# rules and no masquerading of its own, and with runc-wrap as its runtime:
# this machine gives no process CAP_SYS_RESOURCE, so runc cannot lower
# oom_score_adj to the -998 dockershim asks for a pod sandbox, and the
# wrapper raises a negative value to 0. Images are loaded, never pulled: a
# pause image built here (testdata/pause) and tpkit's partition-dns image
# from IMAGE_DIR (make images), converted from OCI to docker's archive form
# with skopeo.
#
# At exit every process of the lab (in its netns or its cgroups) is killed,
# the netns (veths, bridge) deleted, the cgroup subtree removed and the lab's
# folder with it; the end says what, if anything, was left.
set -euo pipefail
bin=$(cd "${1:?usage: run.sh ARKTOS_BIN IMAGE_DIR}" && pwd)
images=$(cd "${2:?usage: run.sh ARKTOS_BIN IMAGE_DIR}" && pwd)
root=$(cd "$(dirname "$0")/../.." && pwd)
here=$root/test/arktos-cluster
[ "$(id -u)" = 0 ] || { echo "run.sh: the cluster lab needs root (namespaces, cgroups, a container runtime)" >&2; exit 2; }
for b in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl; do
	[ -x "$bin/$b" ] || { echo "run.sh: $bin/$b is missing (make arktos-patch builds it)" >&2; exit 2; }
done
[ -f "$images/partition-dns.oci.tar" ] || { echo "run.sh: $images/partition-dns.oci.tar is missing (make images IMAGE_DIR=$images)" >&2; exit 2; }
"$root/hack/ensure-tools.sh" iptables ip etcd curl openssl dockerd runc skopeo cni-bridge kubectl python3 socat

# The host's state the lab must leave as it found: the sysctls the kubelet
# sets, and the root namespaces' iptables rules.
host_state() {
	for k in vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops net/ipv4/ip_forward; do
		printf '%s=%s ' "$k" "$(cat /proc/sys/$k)"
	done
	iptables-save 2>/dev/null | grep -c -- '^-A' || true
}
before=$(host_state)

id=$$
ns=tpkit-cluster-$id
cg=tpkit-cluster-$id
lab=$(mktemp -d /tmp/tpkit-cluster-lab.XXXXXX)
hierarchies=(cpu cpuacct cpuset memory devices freezer blkio pids systemd)
holder=""
inlab() { nsenter -t "$holder" -m -n -- env AWS_EC2_METADATA_DISABLED=true "$@"; }

rc=0
cleanup() {
	set +e
	echo "== tearing the lab down"
	if [ "$rc" != 0 ] && [ -d "$lab" ]; then
		logs=${TMPDIR:-/tmp}/tpkit-cluster-logs.$id
		mkdir -p "$logs" && find "$lab" -maxdepth 3 -name '*.log' -not -path '*/docker/*' -exec cp --parents {} "$logs" \; 2>/dev/null
		echo "== the lab failed: its logs are in $logs"
	fi
	if [ -n "$holder" ] && kill -0 "$holder" 2>/dev/null; then
		# The kubelet first, so that nothing restarts a container; then
		# the containers, through dockerd, which then stops its containerd.
		for p in $(ip netns pids "$ns" 2>/dev/null); do
			case "$(cat /proc/"$p"/comm 2>/dev/null)" in kubelet | kube-proxy) kill "$p" ;; esac
		done
		sleep 1
		if [ -S "$lab/docker.sock" ]; then
			ids=$(inlab docker -H "unix://$lab/docker.sock" ps -aq 2>/dev/null)
			[ -z "$ids" ] || inlab docker -H "unix://$lab/docker.sock" rm -f $ids >/dev/null 2>&1
		fi
		for p in $(ip netns pids "$ns" 2>/dev/null); do
			[ "$(cat /proc/"$p"/comm 2>/dev/null)" = dockerd ] && kill "$p"
		done
		for _ in $(seq 50); do
			ip netns pids "$ns" 2>/dev/null | xargs -r -I{} cat /proc/{}/comm 2>/dev/null | grep -qx -e dockerd -e containerd || break
			sleep 0.2
		done
	fi
	# Whatever is left in the lab's cgroups or netns, the holder (and with
	# it the mount namespace and every mount in it) included.
	for f in $(find /sys/fs/cgroup/pids/"$cg" -name cgroup.procs 2>/dev/null); do
		for p in $(cat "$f"); do kill -9 "$p" 2>/dev/null; done
	done
	for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
	for _ in $(seq 50); do
		[ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break
		sleep 0.1
	done
	ip netns del "$ns" 2>/dev/null
	for h in "${hierarchies[@]}" unified; do
		d=/sys/fs/cgroup/$h/$cg
		[ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
	done
	rm -rf "$lab"
	left=()
	ip netns list | grep -q "^$ns\b" && left+=("netns $ns")
	for h in "${hierarchies[@]}" unified; do [ -d "/sys/fs/cgroup/$h/$cg" ] && left+=("cgroup $h/$cg"); done
	mount | grep -q "$lab" && left+=("mounts under $lab")
	after=$(host_state)
	[ "$after" = "$before" ] || left+=("host sysctls or iptables changed: before [$before], after [$after]")
	[ ${#left[@]} -eq 0 ] && echo "== nothing of the lab is left" || echo "== LEFT OVER: ${left[*]}"
}
trap cleanup EXIT

echo "== namespaces: netns $ns, cgroups /$cg, lab folder $lab"
. "$root/hack/lab-netns.sh"
lab_netns_add "$ns"
for h in "${hierarchies[@]}"; do [ -d "/sys/fs/cgroup/$h" ] && mkdir -p "/sys/fs/cgroup/$h/$cg"; done
cat /sys/fs/cgroup/cpuset/cpuset.cpus >"/sys/fs/cgroup/cpuset/$cg/cpuset.cpus"
cat /sys/fs/cgroup/cpuset/cpuset.mems >"/sys/fs/cgroup/cpuset/$cg/cpuset.mems"
mkdir -p "$lab/sysctl" "$lab/etc-docker"
echo 1 >"$lab/sysctl/overcommit_memory"
echo 0 >"$lab/sysctl/panic_on_oom"
echo 10 >"$lab/sysctl/panic"
echo 1 >"$lab/sysctl/panic_on_oops"
{ cat /etc/hosts; echo "10.254.0.1 tpkit-node"; } >"$lab/hosts"
echo "nameserver 10.254.0.1" >"$lab/resolv.conf"
ip netns exec "$ns" unshare -m --propagation private bash -c '
	set -e; lab=$1; shift
	for d in /run /var/lib /var/log /opt /etc/docker /root/.kube; do mkdir -p "$d"; mount -t tmpfs tpkit-cluster-lab "$d"; done
	mount -t tmpfs -o mode=755 tpkit-cluster-cg /sys/fs/cgroup
	for h in "$@"; do
		mkdir /sys/fs/cgroup/$h
		if [ "$h" = systemd ]; then mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/$h; else mount -t cgroup -o $h cgroup /sys/fs/cgroup/$h; fi
	done
	mkdir /sys/fs/cgroup/unified; mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified
	mount --bind $lab/sysctl/overcommit_memory /proc/sys/vm/overcommit_memory
	mount --bind $lab/sysctl/panic_on_oom /proc/sys/vm/panic_on_oom
	mount --bind $lab/sysctl/panic /proc/sys/kernel/panic
	mount --bind $lab/sysctl/panic_on_oops /proc/sys/kernel/panic_on_oops
	mount --bind $lab/hosts /etc/hosts
	ln -s $lab/docker.sock /run/docker.sock # cAdvisor looks for dockerd there
	touch $lab/holder.ready
	exec sleep infinity' holder "$lab" $(for h in "${hierarchies[@]}"; do [ -d "/sys/fs/cgroup/$h" ] && echo "$h"; done) </dev/null >"$lab/holder.log" 2>&1 &
holder=$!
disown "$holder"
for _ in $(seq 100); do [ -f "$lab/holder.ready" ] && break; sleep 0.1; done
[ -f "$lab/holder.ready" ] || { cat "$lab/holder.log" >&2; exit 1; }

echo "== dockerd, state in $lab/docker"
cp "$here/runc-wrap" "$lab/runc-wrap"
printf '{"runtimes": {"tpkit-runc": {"path": "%s"}}, "default-runtime": "tpkit-runc"}\n' "$lab/runc-wrap" >"$lab/daemon.json"
inlab dockerd --config-file="$lab/daemon.json" --data-root="$lab/docker" --exec-root="$lab/docker-exec" \
	--pidfile="$lab/docker.pid" --host="unix://$lab/docker.sock" --bridge=none --iptables=false --ip6tables=false \
	--ip-masq=false --ip-forward=false --userland-proxy=false --storage-driver=overlay2 \
	--exec-opt native.cgroupdriver=cgroupfs --cgroup-parent="/$cg/docker" --log-driver=json-file \
	</dev/null >"$lab/dockerd.log" 2>&1 &
docker=(inlab docker -H "unix://$lab/docker.sock")
for _ in $(seq 150); do "${docker[@]}" version >/dev/null 2>&1 && break; sleep 0.2; done
"${docker[@]}" version >/dev/null || { tail "$lab/dockerd.log" >&2; exit 1; }

echo "== images: pause (testdata/pause) and partition-dns ($images)"
mkdir -p "$lab/pause"
(cd "$here/testdata/pause" && CGO_ENABLED=0 go build -trimpath -ldflags=-s -o "$lab/pause/pause" .)
tar -C "$lab/pause" -cf "$lab/pause.tar" pause
"${docker[@]}" import --change 'ENTRYPOINT ["/pause"]' "$lab/pause.tar" tpkit-lab/pause:1 >/dev/null
# The image's name and tag as make images wrote them (hack/images.sh), which
# the lab sets in deploy/'s kustomization as an admin would.
ref=$(tar -xOf "$images/partition-dns.oci.tar" index.json | python3 -c '
import json, sys
a = json.load(sys.stdin)["manifests"][0].get("annotations", {})
print(a.get("org.opencontainers.image.ref.name") or a.get("io.containerd.image.name") or "")')
ref=${ref#docker.io/}
case $ref in tpkit/partition-dns:?*) ;; *) echo "run.sh: $images/partition-dns.oci.tar names no tpkit/partition-dns:TAG image ($ref)" >&2; exit 1 ;; esac
skopeo copy -q "oci-archive:$images/partition-dns.oci.tar" "docker-archive:$lab/partition-dns.docker.tar:$ref"
"${docker[@]}" load -q -i "$lab/partition-dns.docker.tar"
rm -f "$lab/partition-dns.docker.tar"

echo "== building the lab (go test -c -tags arktoscluster ./test/arktos-cluster)"
(cd "$root" && go test -c -tags arktoscluster -o "$lab/arktos-cluster.test" ./test/arktos-cluster)
echo "== running it in the lab's namespaces"
cd "$here"
rc=1
inlab env ADVERTISE=10.254.0.1 ARKTOS_BIN="$bin" LAB_DIR="$lab" CGROUP_ROOT="/$cg" NODE_NAME=tpkit-node \
	PARTITION_DNS_IMAGE="$ref" PAUSE_IMAGE=tpkit-lab/pause:1 DEPLOY_DIR="$root/deploy" IMAGE_DIR="$images" \
	LAB_SH="${LAB_SH:-$root/hack/arktos-lab.sh}" PATH="$PATH" \
	"$lab/arktos-cluster.test" -test.v -test.count=1 -test.timeout "${LAB_TIMEOUT:-14m}" && rc=0 || rc=$?
exit $rc
