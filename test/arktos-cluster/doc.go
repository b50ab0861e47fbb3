// Package arktoscluster is the cluster lab of `make check-arktos-cluster`:
// Arktos's real kubelet, built with tpkit by `make arktos-patch`, with a real
// container runtime (dockerd, through the kubelet's dockershim), Arktos's
// kube-proxy, each TP's own controllers and scheduler, and tpkit's images
// (`make images`) deployed from deploy/ as an admin would, all inside
// namespaces run.sh makes.
//
// run.sh makes the network and mount namespaces, the lab's cgroup subtree
// and dockerd, loads the images, builds this package's test with the
// arktoscluster tag and runs it inside the namespaces; at exit it removes
// every process, mount, cgroup, bridge and file the lab made. The test
// starts, as processes in the namespaces:
//   - a resource-partition API server for the node and two TP API servers
//     (etcd and kube-apiserver each, by hack/arktos-lab.sh);
//   - each TP's kube-controller-manager and kube-scheduler, placing pods on
//     the resource partition's node (--resource-providers), as Arktos's
//     scale-out scripts run them;
//   - the kubelet for both TPs (--tenant-server-kubeconfig), with a client
//     CA per TP when it has --tenant-partition-client-ca-files, and
//     kube-proxy in iptables mode for both TPs.
//
// The TPs' API servers get --resource-providers (when they have it): they
// find the node of a pod's kubelet in the resource partition, and no Node
// is copied into a TP. The kubelet-api-* checks (kubeletapi_test.go) run
// Arktos's kubectl (ARKTOS_BIN's) logs, exec, attach, port-forward and cp
// through each TP against two TPs' pods of one name.
//
// Each check prints its name and PASS or FAIL (what it saw). The test needs
// root, the Arktos binaries and the images, so `make test` does not build it.
package arktoscluster
