#!/usr/bin/env bash
# cluster.sh: a scale-out Arktos cluster on this machine, with tpkit deployed
# (make cluster-up, make cluster-down, make cluster-status).
#
#   hack/cluster.sh up ARKTOS_BIN IMAGE_DIR   start it; prints its kubeconfigs
#   hack/cluster.sh down                      stop it and remove all it made
#   hack/cluster.sh status                    what runs, and the kubeconfigs
#   hack/cluster.sh restart-kubelet NODE      the kubelet of NODE stopped and
#                                             started again with its flags
#
# What runs where (docs/local-cluster.md):
#   - netns tpkit-cp, the control plane: the resource partition (RP) and two
#     tenant partitions (TPs), each an etcd and an API server
#     (hack/arktos-lab.sh), the RP's controller manager, each TP's
#     controller manager and scheduler with --resource-providers, as
#     Arktos's scale-out scripts run them. Its bridge tpkit-br0 has
#     10.254.0.1, the address the API servers advertise and serve on.
#   - netns tpkit-node1 and tpkit-node2, two real nodes: each has eth0 on the
#     bridge (10.254.0.11, 10.254.0.12), its own mount namespace, dockerd,
#     the kubelet (dockershim) and kube-proxy (iptables) for both TPs, and
#     its pods on a CNI bridge (10.88.1.0/24, 10.88.2.0/24), routed to the
#     other node's pods over tpkit-br0.
#   - on the host, one socat per API server on 127.0.0.1 (CLUSTER_PORT, +1,
#     +2: the RP, tp1, tp2), so that kubectl reaches them; nothing else.
#   - cgroups: every process is under /tpkit-cluster in each v1 hierarchy
#     (the kubelets' --cgroup-root and dockerd's --cgroup-parent too).
#   - tpkit, deployed from deploy/ as its READMEs say: partition-dns and the
#     node cache in tp1's system tenant, the admission webhook in both TPs.
#
# Environment: CLUSTER_DIR (default /tmp/tpkit-cluster: kubeconfigs, logs,
# state), CLUSTER_PORT (default 16440).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${CLUSTER_DIR:-/tmp/tpkit-cluster}
port0=${CLUSTER_PORT:-16440}
cp=tpkit-cp
nodes=(tpkit-node1 tpkit-node2)
cg=tpkit-cluster
hierarchies=(cpu cpuacct cpuset memory devices freezer blkio pids systemd)
bridge_ip=10.254.0.1
cluster_dns=10.96.0.10
pod_cidr=10.88.0.0/16
gates=AllAlpha=false,WorkloadInfoDefaulting=true,QPSDoubleGCController=true,QPSDoubleRSController=true,MandatoryArktosNetwork=true

say() { echo "cluster: $*" >&2; }
die() {
	say "$*"
	exit 1
}

node_ip() { echo "10.254.0.1$1"; }       # node N's address on the bridge
node_pods() { echo "10.88.$1.0/24"; }     # node N's pod range
holder_of() { cat "$dir/$1/holder.pid"; } # the process holding NS's mount namespace
# cgjoin PATH CMD... (bash -c "$cgjoin" cgjoin PATH CMD...): CMD, in the
# same process, in the cgroups PATH of every hierarchy, so that down finds
# it and whatever it starts.
# shellcheck disable=SC2016
cgjoin='p=$1; shift; for c in /sys/fs/cgroup/*/"$p"; do [ -d "$c" ] && echo $$ >"$c/cgroup.procs"; done; exec "$@"'
# inns NS CMD...: run CMD in NS's network and mount namespaces and cgroups.
inns() {
	local ns=$1
	shift
	bash -c "$cgjoin" cgjoin "$cg/$ns/system" nsenter -t "$(holder_of "$ns")" -m -n -- env AWS_EC2_METADATA_DISABLED=true "$@"
}
# daemon NS LOG CMD...: start CMD as inns does, in a session of its own,
# detached.
daemon() {
	local ns=$1 log=$2
	shift 2
	setsid bash -c "$cgjoin" cgjoin "$cg/$ns/system" nsenter -t "$(holder_of "$ns")" -m -n -- env AWS_EC2_METADATA_DISABLED=true "$@" \
		</dev/null >"$log" 2>&1 &
	disown
}
# has PROGRAM WORD: PROGRAM's --help mentions WORD (a patched binary's flag or
# gate). The help is read whole: grep -q would end the pipe early, and under
# pipefail the program's SIGPIPE would read as "no".
has() {
	local help
	help=$("$bin/$1" --help 2>&1 || true)
	[[ $help == *"$2"* ]]
}
# wait_for SECONDS WHAT CMD...: poll CMD until it succeeds.
wait_for() {
	local secs=$1 what=$2 i
	shift 2
	for ((i = 0; i < secs * 2; i++)); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.5
	done
	die "$what did not happen within ${secs}s"
}

host_state() {
	local k
	for k in vm/overcommit_memory vm/panic_on_oom kernel/panic kernel/panic_on_oops net/ipv4/ip_forward; do
		printf '%s=%s ' "$k" "$(cat /proc/sys/$k)"
	done
	printf 'iptables=%s' "$(iptables-save 2>/dev/null | grep -c -- '^-A' || true)"
}

# port_owner PORT: what listens on 127.0.0.1:PORT of the host, if anything.
port_owner() { ss -Hltnp "sport = :$1" 2>/dev/null | head -1; }

# ---------------------------------------------------------------- up

# holder NS KIND: a process in netns NS and a new mount namespace, which
# every process of NS then joins, put in the cgroups /tpkit-cluster/NS. A
# node's (KIND node) gets tmpfs on the folders dockerd, its containerd,
# dockershim and the kubelet write, the cgroup hierarchies mounted again
# (`ip netns exec` and unshare leave /sys without them), and the four kernel
# sysctls the kubelet sets globally shadowed by files that already hold the
# values it wants, so it writes nothing of the host's. Every namespace gets
# /etc/hosts with the nodes' names: the API servers reach kubelets by name.
holder() {
	local ns=$1 kind=$2 h d=$dir/$1
	mkdir -p "$d"
	for h in "${hierarchies[@]}"; do
		[ -d "/sys/fs/cgroup/$h" ] || continue
		mkdir -p "/sys/fs/cgroup/$h/$cg/$ns/system"
		if [ "$h" = cpuset ]; then
			local c
			for c in "$cg" "$cg/$ns" "$cg/$ns/system"; do
				cat /sys/fs/cgroup/cpuset/cpuset.cpus >"/sys/fs/cgroup/cpuset/$c/cpuset.cpus"
				cat /sys/fs/cgroup/cpuset/cpuset.mems >"/sys/fs/cgroup/cpuset/$c/cpuset.mems"
			done
		fi
	done
	mkdir -p "$d/sysctl"
	echo 1 >"$d/sysctl/overcommit_memory"
	echo 0 >"$d/sysctl/panic_on_oom"
	echo 10 >"$d/sysctl/panic"
	echo 1 >"$d/sysctl/panic_on_oops"
	cp "$dir/hosts" "$d/hosts"
	# shellcheck disable=SC2016
	setsid bash -c "$cgjoin" cgjoin "$cg/$ns/system" ip netns exec "$ns" unshare -m --propagation private bash -c '
		set -e; d=$1; kind=$2; shift 2
		mount --bind $d/hosts /etc/hosts
		if [ "$kind" = node ]; then
			for m in /run /var/lib /var/log /opt /etc/docker /root/.kube; do mkdir -p $m; mount -t tmpfs tpkit-cluster $m; done
			mount -t tmpfs -o mode=755 tpkit-cluster-cg /sys/fs/cgroup
			for h in "$@"; do
				mkdir /sys/fs/cgroup/$h
				if [ "$h" = systemd ]; then mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/$h; else mount -t cgroup -o $h cgroup /sys/fs/cgroup/$h; fi
			done
			mkdir /sys/fs/cgroup/unified; mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified
			mount --bind $d/sysctl/overcommit_memory /proc/sys/vm/overcommit_memory
			mount --bind $d/sysctl/panic_on_oom /proc/sys/vm/panic_on_oom
			mount --bind $d/sysctl/panic /proc/sys/kernel/panic
			mount --bind $d/sysctl/panic_on_oops /proc/sys/kernel/panic_on_oops
			ln -s $d/docker.sock /run/docker.sock # cAdvisor looks for dockerd there
		fi
		touch $d/holder.ready
		exec sleep infinity' holder "$d" "$kind" $(for h in "${hierarchies[@]}"; do [ -d "/sys/fs/cgroup/$h" ] && echo "$h"; done) \
		</dev/null >"$d/holder.log" 2>&1 &
	echo $! >"$d/holder.pid"
	disown
	wait_for 20 "the $ns namespace holder" test -f "$d/holder.ready"
}

network() {
	local n m ns
	ip netns add $cp
	ip -n $cp link set lo up
	ip -n $cp link add tpkit-br0 type bridge
	ip -n $cp addr add $bridge_ip/24 dev tpkit-br0
	ip -n $cp link set tpkit-br0 up
	for n in 1 2; do
		ns=${nodes[n - 1]}
		m=$((3 - n))
		ip netns add "$ns"
		ip -n "$ns" link set lo up
		ip -n $cp link add "veth-node$n" type veth peer name eth0 netns "$ns"
		ip -n $cp link set "veth-node$n" master tpkit-br0 up
		ip -n "$ns" addr add "$(node_ip $n)/24" dev eth0
		ip -n "$ns" link set eth0 up
		ip -n "$ns" route add default via $bridge_ip
		ip -n "$ns" route add "$(node_pods $m)" via "$(node_ip $m)"
		ip -n $cp route add "$(node_pods $n)" via "$(node_ip $n)"
		# Per network namespace: the node routes its pods' packets.
		ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1
	done
	{
		cat /etc/hosts
		for n in 1 2; do echo "$(node_ip $n) ${nodes[n - 1]}"; done
	} >"$dir/hosts"
}

# kubeconfig FILE NAME SERVER: a kubeconfig with one context, NAME.
kubeconfig() {
	cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- cluster: {server: "$3"}
  name: $2
users:
- name: admin
  user: {}
contexts:
- context: {cluster: $2, user: admin}
  name: $2
current-context: $2
EOF
}

control_plane() {
	local k url p names=(rp tp1 tp2) part sub rpkc
	say "control plane: the resource partition and two tenant partitions (netns $cp)"
	# arktos-lab.sh starts etcd and the API server of each; they run in
	# tpkit-cp's namespaces, in this session's own process group.
	inns $cp env ARKTOS_BIN="$bin" ADVERTISE=$bridge_ip INSECURE_BIND=0.0.0.0 \
		setsid -w bash "$root/hack/arktos-lab.sh" up 1 "$dir/rp" >"$dir/logs/arktos-lab.rp.log" 2>&1 ||
		die "the resource partition did not start: $(tail -5 "$dir/logs/arktos-lab.rp.log")"
	rpkc=$dir/rp/kc/tp1.kubeconfig
	# A stock kube-apiserver has no --resource-providers (and finds no node
	# for kubectl logs or exec).
	local rps=RESOURCE_PROVIDERS=
	has kube-apiserver --resource-providers && rps=RESOURCE_PROVIDERS=$rpkc
	# Webhooks are reached at their endpoints (pods on the nodes, routed over
	# the bridge): the control plane runs no kube-proxy for cluster IPs.
	inns $cp env ARKTOS_BIN="$bin" ADVERTISE=$bridge_ip INSECURE_BIND=0.0.0.0 "$rps" \
		APISERVER_FLAGS=--enable-aggregator-routing=true \
		setsid -w bash "$root/hack/arktos-lab.sh" up 2 "$dir/tps" >"$dir/logs/arktos-lab.tps.log" 2>&1 ||
		die "the tenant partitions did not start: $(tail -5 "$dir/logs/arktos-lab.tps.log")"
	mkdir -p "$dir/kubeconfig" "$dir/node-kc"
	for k in 0 1 2; do
		part=${names[k]}
		case $part in rp) sub=$dir/rp/tp1 ;; *) sub=$dir/tps/$part ;; esac
		url=$(cat "$sub/url")
		p=${url##*:}
		# The nodes' and pods' kubeconfigs as Arktos's worker script writes
		# them (hack/arktos-worker-up.sh): every one with the context
		# local-up-cluster, so the kubelets, kube-proxies and partition-dns
		# name the TPs after the files, tp1 and tp2.
		kubeconfig "$dir/node-kc/$part.kubeconfig" local-up-cluster "http://$bridge_ip:$p"
		kubeconfig "$dir/kubeconfig/$part.kubeconfig" "$part" "http://127.0.0.1:$((port0 + k))"
		# The host's way in: a socat on 127.0.0.1 that carries each
		# connection into tpkit-cp.
		setsid bash -c "$cgjoin" cgjoin "$cg/$cp/system" socat "TCP-LISTEN:$((port0 + k)),bind=127.0.0.1,fork,reuseaddr" \
			"EXEC:nsenter --net=/run/netns/$cp socat STDIO TCP\:127.0.0.1\:$p" </dev/null >"$dir/logs/socat.$part.log" 2>&1 &
		echo $! >>"$dir/host.pids"
		disown
	done
	local tpkc=$dir/tps/kc/tp1.kubeconfig,$dir/tps/kc/tp2.kubeconfig
	daemon $cp "$dir/logs/kcm.rp.log" "$bin/kube-controller-manager" --kubeconfig="$rpkc" \
		--tenant-server-kubeconfig="$tpkc" --controllers=nodelifecycle,ttl \
		--leader-elect=false --port=0 --secure-port=0 --feature-gates=$gates --v=2
	for k in 1 2; do
		# The token controller gives every service account its token
		# Secret (Kubernetes's e2e framework waits for one in each test
		# namespace); the ServiceAccount admission plugin stays off, as in
		# arktos-lab.sh, so pods mount none.
		openssl genrsa -out "$dir/tps/tp$k/sa.key" 2048 2>/dev/null || die "openssl could not make tp$k's service-account key"
		daemon $cp "$dir/logs/kcm.tp$k.log" "$bin/kube-controller-manager" --kubeconfig="$dir/tps/kc/tp$k.kubeconfig" \
			--resource-providers="$rpkc" --controllers='*,-nodelifecycle,-nodeipam,-ttl' \
			--service-account-private-key-file="$dir/tps/tp$k/sa.key" --leader-elect=false --port=0 --secure-port=0 --feature-gates=$gates --v=2
		daemon $cp "$dir/logs/scheduler.tp$k.log" "$bin/kube-scheduler" --kubeconfig="$dir/tps/kc/tp$k.kubeconfig" \
			--resource-providers="$rpkc" --leader-elect=false --port=0 --secure-port=0 --feature-gates=$gates --v=2
	done
}

# node N: dockerd, the images, the kubelet and kube-proxy of node N.
node() {
	local n=$1 ns=${nodes[$1 - 1]} d=$dir/${nodes[$1 - 1]} p
	say "node $ns: dockerd, images, kubelet, kube-proxy ($(node_ip "$n"), pods $(node_pods "$n"))"
	cp "$root/test/arktos-cluster/runc-wrap" "$d/runc-wrap"
	printf '{"runtimes": {"tpkit-runc": {"path": "%s"}}, "default-runtime": "tpkit-runc"}\n' "$d/runc-wrap" >"$d/daemon.json"
	daemon "$ns" "$dir/logs/dockerd.$ns.log" dockerd --config-file="$d/daemon.json" --data-root="$d/docker" \
		--exec-root="$d/docker-exec" --pidfile="$d/docker.pid" --host="unix://$d/docker.sock" --bridge=none \
		--iptables=false --ip6tables=false --ip-masq=false --ip-forward=false --userland-proxy=false \
		--storage-driver=overlay2 --exec-opt native.cgroupdriver=cgroupfs --cgroup-parent="/$cg/$ns/docker" \
		--log-driver=json-file
	local docker=(inns "$ns" docker -H "unix://$d/docker.sock")
	wait_for 30 "dockerd of $ns answering" "${docker[@]}" version
	"${docker[@]}" import --change 'ENTRYPOINT ["/pause"]' "$dir/images/pause.tar" tpkit-lab/pause:1 >/dev/null
	"${docker[@]}" import --change 'CMD ["sh"]' --change 'ENV PATH=/bin' "$dir/images/busybox.tar" tpkit-lab/busybox:1.29 >/dev/null
	for p in "$dir"/images/*.docker.tar; do "${docker[@]}" load -q -i "$p" >/dev/null; done

	local cni=$d/cni
	mkdir -p "$cni/bin" "$cni/net.d" "$cni/cache" "$cni/ipam"
	for p in bridge host-local loopback; do cp "/usr/lib/cni/$p" "$cni/bin/"; done
	cat >"$cni/net.d/10-tpkit.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "tpkit-cluster", "plugins": [{"type": "bridge", "bridge": "tpkit0",
  "isGateway": true, "ipMasq": false, "hairpinMode": true,
  "ipam": {"type": "host-local", "ranges": [[{"subnet": "$(node_pods "$n")", "gateway": "10.88.$n.1"}]],
           "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "$cni/ipam"}}]}
EOF
	echo "nameserver $bridge_ip" >"$d/resolv.conf"
	start_kubelet "$n"
	local tps=$dir/node-kc/tp1.kubeconfig,$dir/node-kc/tp2.kubeconfig
	local state=()
	has kube-proxy --tenant-partition-state-dir && state=(--tenant-partition-state-dir="$d/kube-proxy-state")
	daemon "$ns" "$dir/logs/kube-proxy.$ns.log" "$bin/kube-proxy" --proxy-mode=iptables \
		--kubeconfig="$dir/node-kc/rp.kubeconfig" --tenant-server-kubeconfig="$tps" --hostname-override="$ns" \
		--cluster-cidr=$pod_cidr --bind-address=127.0.0.1 --healthz-bind-address=127.0.0.1 \
		--metrics-bind-address=127.0.0.1 --conntrack-max-per-core=0 --conntrack-min=0 \
		--conntrack-tcp-timeout-established=0 --conntrack-tcp-timeout-close-wait=0 "${state[@]}" --v=2
}

# start_kubelet N: node N's kubelet, on its dockerd, for both TPs (a client
# CA per TP when it has --tenant-partition-client-ca-files), its log
# appended to.
start_kubelet() {
	local n=$1 ns=${nodes[$1 - 1]} d=$dir/${nodes[$1 - 1]} cni=$dir/${nodes[$1 - 1]}/cni extra=()
	local tps=$dir/node-kc/tp1.kubeconfig,$dir/node-kc/tp2.kubeconfig
	has kubelet TenantDNSSearch && extra+=(--feature-gates=TenantDNSSearch=true)
	has kubelet --tenant-partition-client-ca-files && extra+=(--tenant-partition-client-ca-files="$dir/ca/tp1-ca.crt,$dir/ca/tp2-ca.crt")
	echo "== kubelet started $(date -u +%FT%TZ)" >>"$dir/logs/kubelet.$ns.log"
	setsid bash -c "$cgjoin" cgjoin "$cg/$ns/system" nsenter -t "$(holder_of "$ns")" -m -n -- env AWS_EC2_METADATA_DISABLED=true \
		"$bin/kubelet" --kubeconfig="$dir/node-kc/rp.kubeconfig" \
		--tenant-server-kubeconfig="$tps" --hostname-override="$ns" --node-ip="$(node_ip "$n")" \
		--root-dir="$d/kubelet" --cert-dir="$d/kubelet/pki" --seccomp-profile-root="$d/kubelet/seccomp" \
		--volume-plugin-dir="$d/kubelet-plugins" --cgroup-driver=cgroupfs --cgroups-per-qos=true \
		--cgroup-root="/$cg/$ns" --enforce-node-allocatable= --fail-swap-on=false --resolv-conf="$d/resolv.conf" \
		--read-only-port=0 --healthz-bind-address=127.0.0.1 --image-gc-high-threshold=100 --image-gc-low-threshold=99 \
		--container-runtime=docker --docker-endpoint="unix://$d/docker.sock" --pod-infra-container-image=tpkit-lab/pause:1 \
		--network-plugin=cni --cni-conf-dir="$cni/net.d" --cni-bin-dir="$cni/bin" --cni-cache-dir="$cni/cache" \
		--hairpin-mode=hairpin-veth --cluster-dns=$cluster_dns --cluster-domain=cluster.local "${extra[@]}" --v=2 \
		</dev/null >>"$dir/logs/kubelet.$ns.log" 2>&1 &
	disown
}

# kubelet_pid NS: the pid of NS's kubelet, if one runs: the kubelet in the
# network namespace of NS's holder (found through /proc, not ip netns, so
# that this works in a node's mount namespace too, where /run is its own).
kubelet_pid() {
	local p net
	net=$(readlink "/proc/$(holder_of "$1")/ns/net") || return 0
	for p in $(pgrep -x kubelet); do
		[ "$(readlink "/proc/$p/ns/net" 2>/dev/null)" = "$net" ] && echo "$p"
	done
	return 0
}

# restart_kubelet NODE: SIGTERM to NODE's kubelet, and once it is gone the
# same kubelet again (the same flags, root dir and TP origin file).
restart_kubelet() {
	local ns=$1 n p i
	case $ns in tpkit-node1) n=1 ;; tpkit-node2) n=2 ;; *) die "restart-kubelet: no node $ns (tpkit-node1, tpkit-node2)" ;; esac
	[ -f "$dir/state" ] || die "no cluster is up ($dir/state does not exist)"
	. "$dir/state"
	p=$(kubelet_pid "$ns")
	if [ -n "$p" ]; then
		kill "$p"
		for ((i = 0; i < 300; i++)); do
			[ -d "/proc/$p" ] || break
			sleep 0.1
		done
		[ ! -d "/proc/$p" ] || die "the kubelet of $ns (pid $p) did not exit on SIGTERM in 30 s"
	fi
	start_kubelet "$n"
	say "restarted the kubelet of $ns"
}

# client_cas: a client CA per TP in DIR/ca (tpN-ca.crt) and a client
# certificate of each (tpN-apiserver.crt/.key, the identity a TP's API server
# would present to a kubelet), for the kubelets'
# --tenant-partition-client-ca-files.
client_cas() {
	local k c=$dir/ca
	mkdir -p "$c"
	for k in 1 2; do
		openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 30 -subj "/CN=tp$k-client-ca" \
			-keyout "$c/tp$k-ca.key" -out "$c/tp$k-ca.crt" 2>/dev/null
		openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=tp$k-apiserver" \
			-keyout "$c/tp$k-apiserver.key" -out "$c/tp$k-apiserver.csr" 2>/dev/null
		openssl x509 -req -in "$c/tp$k-apiserver.csr" -CA "$c/tp$k-ca.crt" -CAkey "$c/tp$k-ca.key" -CAcreateserial \
			-days 30 -extfile <(printf 'extendedKeyUsage=clientAuth\nkeyUsage=digitalSignature\n') -out "$c/tp$k-apiserver.crt" 2>/dev/null
		[ -s "$c/tp$k-apiserver.crt" ] || die "openssl could not make tp$k's client CA in $c"
	done
}

# images: the pause image (built here) and tpkit's images from IMAGE_DIR in
# docker's archive form, for every node's dockerd.
images() {
	local p ref
	mkdir -p "$dir/images/pause"
	(cd "$root/test/arktos-cluster/testdata/pause" && CGO_ENABLED=0 go build -trimpath -ldflags=-s -o "$dir/images/pause/pause" .)
	tar -C "$dir/images/pause" -cf "$dir/images/pause.tar" pause
	# busybox, from Debian's static build, as Kubernetes's tests name it
	# (docker.io/library/busybox:1.29, here tpkit-lab/busybox:1.29): a
	# shell, wget, nslookup and httpd for trying the cluster out.
	mkdir -p "$dir/images/busybox/bin"
	cp "$(command -v busybox)" "$dir/images/busybox/bin/busybox"
	for p in $("$dir/images/busybox/bin/busybox" --list); do
		[ "$p" = busybox ] || ln -s busybox "$dir/images/busybox/bin/$p"
	done
	mkdir -p "$dir/images/busybox/etc" "$dir/images/busybox/tmp" "$dir/images/busybox/var/www"
	echo 'root:x:0:0:root:/root:/bin/sh' >"$dir/images/busybox/etc/passwd"
	tar -C "$dir/images/busybox" -cf "$dir/images/busybox.tar" .
	for p in partition-dns tp-admission-webhook; do
		ref=$(tar -xOf "$images/$p.oci.tar" index.json | python3 -c '
import json, sys
a = json.load(sys.stdin)["manifests"][0].get("annotations", {})
print(a.get("org.opencontainers.image.ref.name") or a.get("io.containerd.image.name") or "")')
		ref=${ref#docker.io/}
		[[ $ref == tpkit/$p:?* ]] || die "$images/$p.oci.tar names no tpkit/$p:TAG image ($ref)"
		skopeo copy -q "oci-archive:$images/$p.oci.tar" "docker-archive:$dir/images/$p.docker.tar:$ref"
		echo "${p//-/_}_image=$ref" >>"$dir/state"
	done
	printf 'pause_image=tpkit-lab/pause:1\nbusybox_image=tpkit-lab/busybox:1.29\n' >>"$dir/state"
}

# kubectl_ PART ARGS...: the host's kubectl (Debian's kubernetes-client:
# Arktos's kubectl has a kustomize too old for deploy/'s overlays).
kubectl_() { kubectl --kubeconfig="$dir/kubeconfig/$1.kubeconfig" --cache-dir="$dir/kcache" "${@:2}"; }

nodes_ready() {
	local out
	out=$(kubectl_ rp get nodes -o 'jsonpath={range .items[*]}{.metadata.name}={.status.conditions[?(@.type=="Ready")].status} {end}')
	[[ $out == *"tpkit-node1=True"* && $out == *"tpkit-node2=True"* ]]
}

# ready TP NS SELECTOR N: N pods of SELECTOR in TP's system tenant run and are ready.
ready() {
	local out
	out=$(kubectl_ "$1" -n "$2" get pods -l "$3" -o 'jsonpath={range .items[*]}{.status.conditions[?(@.type=="Ready")].status} {end}')
	[[ $(grep -o True <<<"$out" | wc -l) -ge $4 ]]
}

deploy_tpkit() {
	local tp overlay=$dir/overlay
	say "tpkit: the admission webhook in both TPs, partition-dns and the node cache in tp1 (deploy/)"
	go build -o "$dir/tp-admission-webhook" "$root/cmd/tp-admission-webhook"
	# The README's development pair: serves for a moment, having written it.
	timeout 5 "$dir/tp-admission-webhook" --self-signed-dir "$dir/webhook-certs" --listen 127.0.0.1:0 >/dev/null 2>&1 || true
	[ -f "$dir/webhook-certs/ca.crt" ] || die "tp-admission-webhook wrote no serving certificate into $dir/webhook-certs"
	bash "$root/hack/deploy-overlay.sh" "$overlay" --image-dir "$images" --cluster-ip $cluster_dns --pod-cidr $pod_cidr \
		--trusted-forwarders "10.88.1.1/32,10.88.2.1/32,$(node_ip 1)/32,$(node_ip 2)/32" \
		--webhook-ca "$dir/webhook-certs/ca.crt" >"$dir/logs/deploy-overlay.log" 2>&1 ||
		die "hack/deploy-overlay.sh: $(cat "$dir/logs/deploy-overlay.log")"
	for tp in tp1 tp2; do
		kubectl_ $tp apply -f "$root/deploy/partition-dns/rbac-per-tp.yaml" >/dev/null
		kubectl_ $tp -n kube-system create secret tls tp-admission-webhook-tls \
			--cert="$dir/webhook-certs/tls.crt" --key="$dir/webhook-certs/tls.key" >/dev/null
		kubectl_ $tp apply -k "$overlay/tp-admission-webhook" >/dev/null
	done
	for tp in tp1 tp2; do
		wait_for 180 "two tp-admission-webhook pods ready in $tp" ready $tp kube-system app.kubernetes.io/name=tp-admission-webhook 2
	done
	kubectl_ tp1 -n kube-system create secret generic partition-dns-kubeconfigs \
		--from-file="$dir/node-kc/tp1.kubeconfig" --from-file="$dir/node-kc/tp2.kubeconfig" >/dev/null
	kubectl_ tp1 apply -k "$overlay/dns" >/dev/null
	wait_for 180 "two partition-dns pods ready in tp1" ready tp1 kube-system app.kubernetes.io/name=partition-dns 2
	wait_for 120 "the node cache ready on both nodes" ready tp1 kube-system k8s-app=node-local-dns 2
}

print_access() {
	local part
	echo
	echo "The cluster is up (${SECONDS}s): the resource partition, tp1 and tp2, nodes tpkit-node1 and tpkit-node2."
	echo "Arktos's kubectl is $bin/kubectl; Kubernetes's kubectl works too, without --tenant."
	for part in rp tp1 tp2; do
		printf '  %-3s  export KUBECONFIG=%s\n' "$part" "$dir/kubeconfig/$part.kubeconfig"
	done
	echo "Nodes:  kubectl --kubeconfig $dir/kubeconfig/rp.kubeconfig get nodes"
	echo "Logs:   $dir/logs"
	echo "Stop:   make cluster-down   (hack/cluster.sh down)"
}

up() {
	bin=$(cd "${1:?usage: cluster.sh up ARKTOS_BIN IMAGE_DIR}" && pwd)
	images=$(cd "${2:?usage: cluster.sh up ARKTOS_BIN IMAGE_DIR}" && pwd)
	[ "$(id -u)" = 0 ] || die "the cluster needs root (namespaces, cgroups, a container runtime)"
	local b p ns
	for b in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy kubectl; do
		[ -x "$bin/$b" ] || die "$bin/$b is missing (make arktos-patch builds it)"
	done
	for p in partition-dns tp-admission-webhook; do
		[ -f "$images/$p.oci.tar" ] || die "$images/$p.oci.tar is missing (make images IMAGE_DIR=$images)"
	done
	if [ -e "$dir/state" ]; then
		die "a cluster is already up ($dir/state); make cluster-down first"
	fi
	for ns in $cp "${nodes[@]}"; do
		! ip netns list | grep -q "^$ns\b" || die "network namespace $ns exists: a cluster is up or was left over; make cluster-down"
	done
	[ ! -d "/sys/fs/cgroup/pids/$cg" ] || die "cgroup /$cg exists: a cluster is up or was left over; make cluster-down"
	for p in 0 1 2; do
		local owner
		owner=$(port_owner $((port0 + p)))
		[ -z "$owner" ] || die "port $((port0 + p)) of 127.0.0.1 is taken ($owner); set CLUSTER_PORT to another base"
	done
	command -v go >/dev/null || die "go is not on PATH: the cluster builds its pause image and the webhook's certificates"
	"$root/hack/ensure-tools.sh" iptables ip etcd curl openssl dockerd runc skopeo cni-bridge python3 socat kubectl busybox ||
		die "a tool the cluster needs is missing (above)"

	rm -rf "$dir"
	mkdir -p "$dir/logs"
	host_state >"$dir/host-state"
	printf 'bin=%s\nimages=%s\nport=%s\n' "$bin" "$images" "$port0" >"$dir/state"
	# From here a failure takes down what was started.
	trap 'rc=$?; if [ $rc != 0 ]; then say "cluster-up failed; logs kept in ${TMPDIR:-/tmp}/tpkit-cluster-logs, taking down what it started"; mkdir -p ${TMPDIR:-/tmp}/tpkit-cluster-logs; cp -r "$dir/logs/." ${TMPDIR:-/tmp}/tpkit-cluster-logs/ 2>/dev/null; down; fi' EXIT
	say "namespaces: netns $cp, ${nodes[*]}; cgroups /$cg; state in $dir"
	network
	holder $cp cp
	for ns in "${nodes[@]}"; do holder "$ns" node; done
	images
	client_cas
	control_plane
	node 1
	node 2
	wait_for 120 "both nodes Ready in the resource partition" nodes_ready
	deploy_tpkit
	trap - EXIT
	print_access
}

# ---------------------------------------------------------------- down

down() {
	set +e
	local ns d p ids h f left=()
	[ -d "$dir" ] || [ -n "$(ip netns list | grep -E '^tpkit-(cp|node[12])\b')" ] || {
		say "no cluster is up"
		return 0
	}
	say "stopping the cluster"
	for ns in "${nodes[@]}"; do
		# The kubelet and kube-proxy first, so that nothing restarts a
		# container; then the containers, through dockerd; then dockerd.
		for p in $(ip netns pids "$ns" 2>/dev/null); do
			case "$(cat /proc/"$p"/comm 2>/dev/null)" in kubelet | kube-proxy) kill "$p" ;; esac
		done
	done
	sleep 1
	for ns in "${nodes[@]}"; do
		d=$dir/$ns
		if [ -S "$d/docker.sock" ] && [ -f "$d/holder.pid" ]; then
			ids=$(inns "$ns" docker -H "unix://$d/docker.sock" ps -aq 2>/dev/null)
			[ -z "$ids" ] || inns "$ns" docker -H "unix://$d/docker.sock" rm -f $ids >/dev/null 2>&1
		fi
		for p in $(ip netns pids "$ns" 2>/dev/null); do
			[ "$(cat /proc/"$p"/comm 2>/dev/null)" = dockerd ] && kill "$p"
		done
	done
	for _ in $(seq 50); do
		ip netns pids "${nodes[0]}" "${nodes[1]}" 2>/dev/null | xargs -r -I{} cat /proc/{}/comm 2>/dev/null | grep -qx -e dockerd -e containerd || break
		sleep 0.2
	done
	[ -f "$dir/host.pids" ] && for p in $(cat "$dir/host.pids"); do kill "$p" 2>/dev/null; done
	# What is left in the cluster's cgroups or namespaces, holders (and with
	# them the mount namespaces and their mounts) included.
	for _ in 1 2 3; do
		for f in $(find /sys/fs/cgroup/pids/$cg -name cgroup.procs 2>/dev/null); do
			for p in $(cat "$f"); do kill -9 "$p" 2>/dev/null; done
		done
		for ns in $cp "${nodes[@]}"; do
			for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
		done
		sleep 0.3
	done
	for ns in "${nodes[@]}" $cp; do
		for _ in $(seq 50); do
			[ -z "$(ip netns pids "$ns" 2>/dev/null)" ] && break
			sleep 0.1
		done
		ip netns del "$ns" 2>/dev/null
	done
	for h in "${hierarchies[@]}" unified; do
		d=/sys/fs/cgroup/$h/$cg
		[ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} \; 2>/dev/null
	done
	local before=""
	[ -f "$dir/host-state" ] && before=$(cat "$dir/host-state")
	mount | grep -q " $dir/" && left+=("mounts under $dir")
	rm -rf "$dir"
	for ns in $cp "${nodes[@]}"; do ip netns list | grep -q "^$ns\b" && left+=("netns $ns"); done
	local procs
	procs=$(pgrep -f -- "$dir/" | grep -vx "$$" | tr '\n' ' ')
	[ -z "$procs" ] || left+=("processes naming $dir: $procs")
	for h in "${hierarchies[@]}" unified; do [ -d "/sys/fs/cgroup/$h/$cg" ] && left+=("cgroup $h/$cg"); done
	if [ -n "$before" ] && [ "$(host_state)" != "$before" ]; then
		left+=("host sysctls or iptables changed: before [$before], after [$(host_state)]")
	fi
	if [ ${#left[@]} -eq 0 ]; then
		say "stopped; nothing of it is left on the host"
		return 0
	fi
	say "LEFT OVER: ${left[*]}"
	return 1
}

status() {
	local ns
	[ -f "$dir/state" ] || {
		echo "no cluster is up ($dir/state does not exist)"
		return 1
	}
	. "$dir/state"
	for ns in $cp "${nodes[@]}"; do
		echo "$ns: $(ip netns pids $ns 2>/dev/null | xargs -r -I{} cat /proc/{}/comm 2>/dev/null | sort | uniq -c | awk '{printf "%s%s ", $2, ($1 > 1 ? "×" $1 : "")}')"
	done
	"$bin/kubectl" --kubeconfig="$dir/kubeconfig/rp.kubeconfig" --cache-dir="$dir/kcache" get nodes -o wide || true
	for part in rp tp1 tp2; do printf 'export KUBECONFIG=%s\n' "$dir/kubeconfig/$part.kubeconfig"; done
}

case ${1:-} in
up) (($# == 3)) || die "usage: cluster.sh up ARKTOS_BIN IMAGE_DIR"; up "$2" "$3" ;;
down) down ;;
restart-kubelet) (($# == 2)) || die "usage: cluster.sh restart-kubelet NODE"; restart_kubelet "$2" ;;
status) status ;;
*) sed -n '/^#   hack/s/^# *//p' "$0" >&2; exit 2 ;;
esac
