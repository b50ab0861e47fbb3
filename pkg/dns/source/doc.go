// Package source feeds the partition-dns index from every tenant partition:
// services, endpointslices, pods and namespaces, through informers whose
// transform keeps only what DNS needs.
//
// The informers are its own, not the partition's shared factory, because
// their cache keys must carry the tenant: two tenants of one TP may both
// have default/kubernetes, and a key of namespace/name would merge them.
// Every object is re-keyed to "<tenant>/<namespace>/<name>" as it is listed
// or watched, before the informer computes its key.
//
// Invariants:
//   - The index only learns of changes through informer events, so a TP
//     that becomes unreachable keeps its last known records (serve-stale).
//   - Objects outside --dns-tenant / --dns-namespace never reach the index.
package source
