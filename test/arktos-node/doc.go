// Package arktosnode is the node lab of `make check-arktos-node`: Arktos's
// own node binaries, built with tpkit by `make arktos-patch` (or stock, to
// show what the series changes), run against real Arktos API servers.
//
// run.sh makes a network namespace with only a loopback and a veth pair
// whose both ends are inside it (the default route goes into the pair, so
// nothing leaves the namespace), builds
// this package's test with the arktoslab tag and runs it inside the
// namespace. The test then starts, as processes in that namespace:
//   - a resource-partition API server for the node object and two TP API
//     servers (etcd and kube-apiserver each, by hack/arktos-lab.sh);
//   - hollow-node --morph=kubelet for both TPs (a real kubelet on a fake
//     container runtime);
//   - kube-proxy in iptables mode for both TPs, whose rules land in the
//     namespace's own tables.
//   - for one check, hollow-node --morph=proxy for both TPs (Arktos's
//     iptables proxier on kubemark's fake iptables), whose rules the lab
//     reads from its /debug/iptables.
//
// Each check prints its name and PASS or FAIL (what it saw). With patched
// binaries every check must pass. With stock binaries (no --tporigin-file
// flag on hollow-node) the lab reports which checks differ and fails only
// when the lab itself could not run; docs/vendoring.md quotes that run.
//
// The test is behind the arktoslab build tag: it needs the Arktos binaries
// and root, so `make test` does not build it.
package arktosnode
