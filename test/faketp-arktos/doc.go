// Package faketparktos is the lab of `make check-faketp-arktos`: stock
// Arktos node binaries started against fake-tp, to show that fake-tp serves
// what Arktos's own components need to start (its master service
// default/kubernetes above all, which Arktos's kube-proxy waits for).
//
// run.sh makes a network namespace (a loopback and a veth pair whose both
// ends are inside it, as test/arktos-node's), builds fake-tp and this
// package's test with the arktoslab tag, and runs the test inside the
// namespace, with tmpfs on /var/lib, /var/log and /run (TMPDIR under /run,
// so hollow-node's root folders go with the namespace). The test starts:
//   - a resource-partition API server (hack/arktos-lab.sh up 1) for
//     the node object;
//   - fake-tp with two TPs on the namespace's address, seeded with a
//     service and its Endpoints in each;
//   - stock kube-proxy in iptables mode for both TPs
//     (--tenant-server-kubeconfig), and stock hollow-node --morph=kubelet
//     (--tenant-server-kubeconfigs).
//
// It checks that kube-proxy's API-server config manager found the master
// Endpoints, that kube-proxy programs the rules of each TP's services
// (their master services included), that hollow-node registers its Node,
// and that kube-proxy is still running once the config manager's 5 minutes
// of retries are over (FAKETP_ARKTOS_HOLD shortens that wait).
//
// The test is behind the arktoslab build tag: it needs Arktos's binaries
// and root, so `make test` does not build it.
package faketparktos
