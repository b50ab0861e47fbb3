// Package source feeds the partition-dns index from every tenant partition:
// services, endpointslices, pods and namespaces, through one client-go
// reflector per partition and kind.
//
// The reflectors' stores are the index itself: each listed or watched
// object is turned into its small index record at once and handed to the
// index.Builder, which keeps what later updates and deletes need. There is
// no informer cache, delta queue or key string per object beside the index,
// which is most of partition-dns's memory saved (see docs/benchmarks.md). A
// (re)list replaces a partition's whole set of one kind, so objects deleted
// while a watch was down are dropped then.
//
// Every object is re-keyed to "<tenant>/<namespace>/<name>" as it is listed
// or watched: with watch-list, a reflector streams into a temporary store of
// its own keyed by namespace/name, where two tenants of one TP that both have
// default/kubernetes would merge.
//
// Invariants:
//   - The index only learns of changes through list and watch events, so a
//     TP that becomes unreachable keeps its last known records (serve-stale).
//   - Objects outside --dns-tenant / --dns-namespace never reach the index.
package source
