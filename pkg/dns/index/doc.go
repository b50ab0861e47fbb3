// Package index is partition-dns's answer index. Reflector stores write
// small records (Service, EndpointSlice, Pod, namespace presence) per tenant
// partition into a Builder; Publish folds the pending changes into a new
// immutable Snapshot and swaps it in with one atomic store. Queries read the
// current Snapshot with one atomic load and then only lookups in maps and
// sorted tables: no locks, no list walks, no allocations.
//
// Invariants:
//   - A published Snapshot and everything it points to is never modified;
//     Publish copies what it changes (copy-on-write per partition, tenant,
//     namespace, block of a namespace's services and service, and per shard
//     of the IP maps).
//   - Records are kept per partition: the system tenant exists in every TP,
//     so the same tenant/namespace/name can exist several times.
//   - A regular tenant found in several partitions is answered from the
//     lowest-indexed one and reported in Snapshot.Conflicts.
//   - Nothing is forgotten when a partition is unreachable: records change
//     only through the Set/Delete calls, so the last known state is served.
package index
