// Package store is the storage of one fake tenant partition: objects as JSON
// bytes keyed by resource/tenant/namespace/name, one resourceVersion counter,
// the history that watches and reads at older versions need, and optional
// persistence in bbolt.
//
// The store knows nothing about Kubernetes types. Callers hand it the final
// JSON through an Encode function that receives the resourceVersion the store
// assigns, so the bytes it keeps and serves always carry their own version.
//
// It keeps two histories, as an Arktos TP has two:
//   - a watch window per resource (Options.History, 100 by default, as
//     Arktos's watch cache): the last events of that resource, from which
//     watches start and resume;
//   - a revision log of the last changes of every resource
//     (Options.Revisions), as etcd keeps revisions until it is compacted,
//     from which ListAt rebuilds the state at an older version.
//
// Invariants:
//   - Every mutation takes the next resourceVersion of the store (one counter
//     for all resources, as etcd has) and appends exactly one event; so the
//     events in the revision log have consecutive resourceVersions.
//   - A watch of a resource from resourceVersion r sees every event of that
//     resource with a version above r, in order, or ErrGone when some of
//     them are no longer in the resource's window (it overflowed, or the
//     store was compacted): it never silently skips an event. A window that
//     has not overflowed reaches back to the store's opening (or last
//     compaction).
//   - ListAt(r) is exactly what List returned when the store was at r, for
//     every r from Compacted to RV.
//   - With a data file, a mutation is durable when its call returns (bbolt
//     commits and syncs before the in-memory state changes); after a crash or
//     a restart the objects and the counter come back, the histories do not,
//     so watches and reads from older versions get ErrGone and clients relist.
//   - Objects handed out are never modified; callers must not modify them.
package store
