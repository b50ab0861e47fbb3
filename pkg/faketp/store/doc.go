// Package store is the storage of one fake tenant partition: objects as JSON
// bytes keyed by resource/tenant/namespace/name, one resourceVersion counter,
// an event history for watches, and optional persistence in bbolt.
//
// The store knows nothing about Kubernetes types. Callers hand it the final
// JSON through an Encode function that receives the resourceVersion the store
// assigns, so the bytes it keeps and serves always carry their own version.
//
// Invariants:
//   - Every mutation takes the next resourceVersion of the store (one counter
//     for all resources, as etcd has) and appends exactly one event; so the
//     events in the history have consecutive resourceVersions.
//   - A watch from resourceVersion r sees every event with a version above r,
//     in order, or ErrGone when those events are no longer held (the history
//     overflowed or was compacted): it never silently skips an event.
//   - With a data file, a mutation is durable when its call returns (bbolt
//     commits and syncs before the in-memory state changes); after a crash or
//     a restart the objects and the counter come back, the history does not,
//     so watches from older versions get ErrGone and clients relist.
//   - Objects handed out are never modified; callers must not modify them.
package store
