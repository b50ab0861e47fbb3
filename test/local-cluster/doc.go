// Package localcluster holds the checks of `make check-cluster`, which run
// against the cluster that `make cluster-up` (hack/cluster.sh) leaves
// running: the resource partition, tp1 and tp2, and two real nodes joined by
// a bridge, with tpkit deployed from deploy/.
//
// The checks work as an admin would, from the host: Arktos's kubectl through
// the kubeconfigs cluster-up printed (tenants, deployments, services, pods,
// kubectl exec through each TP), and, for what only a node can show (the
// node cache's counters, killing a node), nsenter into the node's namespaces.
// They are:
//   - nodes-ready: both nodes Ready in the resource partition;
//   - webhook-in-both-tps: tpkit's admission webhook refuses a Tenant named
//     system in each TP, in its own words (Arktos has no such refusal);
//   - tenant-app-across-nodes: in each TP a tenant of its own, a
//     two-replica Deployment spread over both nodes and its Service; a client
//     pod on each node resolves the Service (full and short names) and gets
//     answers from both replicas;
//   - cross-node-system-service: in the system tenant of tp1 and of tp2, a
//     Service of one name whose only endpoint is on node 2; a pod on node 1
//     reaches it and always gets its own TP's endpoint;
//   - node-caches-answer: each node's cache counts the lookups of the pods
//     on its node;
//   - node-down: node 2's kubelet, dockerd and containers killed, node 1's
//     pods go on resolving (no lookup fails) and reaching the Services that
//     have endpoints on node 1 (once the endpoints change). It runs last:
//     the cluster is left with one working node.
//
// Each check prints its name and PASS or FAIL with what it saw. The test
// needs root and a running cluster, so `make test` does not build it (build
// tag localcluster).
package localcluster
