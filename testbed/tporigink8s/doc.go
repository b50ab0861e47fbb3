// Package tporigink8s is pkg/tporigin's adapter for tpkit's own programs and tests:
// the client-go, klog and Prometheus glue around the standard-library core.
//
//   - Wire feeds a Tracker from every TP of a partition.Set through
//     pkg/informer: the node's pods (spec.nodeName), services and endpoints
//     of every tenant, observed on add and update, forgotten on delete, and
//     pruned after every full list.
//   - AddFlags binds tporigin.Options to Kubernetes-style flags
//     (--tporigin-db, --tporigin-rebuild, --tporigin-static-tenants,
//     --tporigin-batch-delay).
//   - Collector publishes the tracker's Stats as the tpkit_tporigin_*
//     Prometheus metrics, for the program's own registry.
//
// An Arktos kubelet vendors the core only: it records origins at its own pod
// sources (tporigin.ClientChooser.Record) and needs none of this.
package tporigink8s
