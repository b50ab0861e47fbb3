// Package arktoscluster is the cluster lab of `make check-arktos-cluster`:
// Arktos's real kubelet, built with tpkit by `make arktos-patch`, with a real
// container runtime (dockerd, through the kubelet's dockershim), Arktos's
// kube-proxy, each TP's own controllers and scheduler, and tpkit's images
// (`make images`) deployed from deploy/ as an admin would: the cluster of
// `make cluster-up` (hack/cluster.sh), a resource partition, two TPs and
// two nodes.
//
// run.sh brings the cluster up, builds this package's test with the
// arktoscluster tag, runs it in node 1's network and mount namespaces, and
// takes the cluster down. The test reads the cluster's state (CLUSTER_DIR):
// the kubeconfigs with which the nodes reach the partitions, node 1's
// dockerd and the TPs' client CAs, which the kubelets take by
// --tenant-partition-client-ca-files (when they have it). The TPs' API
// servers get --resource-providers (when they have it): they find the node
// of a pod's kubelet in the resource partition, and no Node is copied into
// a TP. The kubelet-api-* checks (kubeletapi_test.go) run Arktos's kubectl
// (ARKTOS_BIN's) logs, exec, attach, port-forward and cp through each TP
// against two TPs' pods of one name, all pinned to node 1.
//
// Each check prints its name and PASS or FAIL (what it saw). The test needs
// root, the Arktos binaries and the images, so `make test` does not build it.
package arktoscluster
