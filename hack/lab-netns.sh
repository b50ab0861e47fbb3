# lab-netns.sh, sourced by the labs' run.sh (test/arktos-node,
# test/arktos-cluster, test/faketp-arktos): lab_netns_add NS makes the
# network namespace NS with a loopback and a veth pair whose both ends are
# inside it. lab0 has 10.254.0.1, the address the lab's API servers
# advertise, and takes the default route (a kubelet picks its node address
# from it); its peer has no address, so what is sent there is dropped and
# nothing leaves the namespace. (This kernel has no dummy devices.)
lab_netns_add() {
	local ns=$1
	ip netns add "$ns"
	ip -n "$ns" link set lo up
	ip -n "$ns" link add lab0 type veth peer name lab0-peer
	ip -n "$ns" addr add 10.254.0.1/32 dev lab0
	ip -n "$ns" link set lab0-peer up
	ip -n "$ns" link set lab0 up
	ip -n "$ns" route add default dev lab0
}

# lab_netns_del NS kills every process in NS and removes it.
lab_netns_del() {
	local p
	for p in $(ip netns pids "$1" 2>/dev/null); do kill -9 "$p" 2>/dev/null || true; done
	ip netns del "$1" 2>/dev/null || true
}

# lab_netns_start NS DIR...: lab_netns_add NS, with an exit trap that
# removes NS (lab_netns_del) and the folders DIR.
lab_netns_start() {
	_lab_ns=$1
	shift
	_lab_dirs=("$@")
	trap 'lab_netns_del "$_lab_ns"; rm -rf "${_lab_dirs[@]}"' EXIT
	lab_netns_add "$_lab_ns"
}
