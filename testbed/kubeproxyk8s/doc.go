// Package kubeproxyk8s is pkg/kubeproxy's client-go adapter: what tpkit's programs
// and tests run around the core, and what an Arktos build does not vendor.
//
//   - Source runs a tenant-keyed Service and endpoints list/watch
//     (pkg/informer) on every TP of a partition.Set, core/v1 Endpoints or
//     EndpointSlices as the TP's discovery says, converts each object into
//     the core's records (ServiceFromAPI, EndpointsFromAPI, SliceFromAPI)
//     and calls the core's handlers with the TP's tenantPartitionId. Its
//     sync timeout stops waiting for slow TPs and names them (Missing).
//   - PartitionsOf names a partition.Set's TPs by the core's
//     tenantPartitionIds: a TP's id is its position in
//     --tenant-server-kubeconfig (partition.Partition.Index), as in Arktos's
//     kube-proxy, whose client i is TP i (kubeproxy.Partitions).
//   - FollowTracker makes a view follow pkg/tporigin's tracker, the oracle
//     behind kubeproxy.Partitions.Tenants.
//   - RegisterViewMetrics publishes the view's counters as the
//     tpkit_kubeproxy_* Prometheus metrics.
//
// Invariants:
//   - Every event reaches the handlers tagged with the id of the TP it came
//     from; a removed TP's events stop before its deletes are sent.
//   - Each TP's Synced calls come once: when its own list arrived, when the
//     sync timeout passed (Missing names it), or when it was removed.
//   - Conversion copies fields; the core validates. Nothing is changed in
//     the informers' objects.
//   - No global state; goroutines run only inside Source.Run.
package kubeproxyk8s
