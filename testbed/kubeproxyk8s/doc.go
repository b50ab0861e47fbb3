// Package kubeproxyk8s feeds pkg/kubeproxy's view from client-go in process:
// the node proxy of tpkit's harnesses (test/multi-tp, test/bench/scale/node),
// which check the core's View against real TPs (fake-tp, or Arktos with
// make check-arktos) without an Arktos build. No program and no Arktos patch
// uses it: Arktos's kube-proxy feeds the core from its own informers
// (arktos/patches), and publishes the view's figures on its /metrics itself.
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
//
// Moved from pkg/kubeproxy/k8s (github.com/tpkit-dev/tpkit/pkg/kubeproxy/k8s,
// package k8s) with the test bed; FollowTracker and RegisterViewMetrics, which
// nothing called, went then.
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
