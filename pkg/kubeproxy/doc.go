// Package kubeproxy is a multi-TP service and endpoint view for node proxies.
//
// A node's kube-proxy in Arktos scale-out watches Services and EndpointSlices
// in every tenant partition (TP). The system tenant exists in every TP, so
// system/kube-system/kube-dns can exist in TP1 and in TP2, each with its own
// endpoints. This package keeps them apart:
//
//   - Source runs tenant-keyed Service and EndpointSlice informers
//     (pkg/informer) on every TP of a partition.Set and fans their events out
//     to ServiceHandler and
//     EndpointSliceHandler implementations, each event tagged with its TP.
//     The handler methods are upstream kube-proxy's, plus the TP.
//   - View is such a handler. It turns API objects into small records
//     (Service, EndpointSlice) at once, keeps the current state per TP, and
//     records which services changed, as upstream's change trackers do.
//   - Snapshot is what a proxier reads: service port → ready endpoints.
//     View.Apply brings a Snapshot up to date with only the services that
//     changed; View.Snapshot builds a complete one.
//   - Runner applies pending changes to a proxier in batches, at a bounded
//     rate, and only once every TP has synced.
//
// Sub-package iptables is a reference dataplane that renders a Snapshot into
// iptables rules.
//
// Invariants:
//   - Every service port is identified by ServicePortName, whose key carries
//     the TP: "<tenant>_<tp>/<namespace>/<name>:<port>".
//   - An EndpointSlice feeds only the service of its own TP, tenant and
//     namespace. Nothing joins records across TPs.
//   - A regular tenant's services are served only from the TP the tenant
//     lives in, when a TenantPartitions oracle (pkg/tporigin's tracker) knows
//     it; copies seen in other TPs are held back, not served.
//   - Synced is reported only after every TP has synced services and slices.
//   - A TP that is unreachable keeps its last state: the view changes only on
//     events. RemovePartition (or SetPartitions) deletes a TP's services.
//   - Bad input (unparsable IPs, missing labels, unknown address types) is
//     skipped and counted, never a panic.
//   - Nothing here holds global state or starts goroutines outside Run.
package kubeproxy
