// Package informer is a tenant-aware informer: one list/watch of one TP,
// kept in a store keyed by tenant/namespace/name, with add, update and delete
// events for a handler.
//
// client-go's informers key their stores by namespace/name. In an Arktos TP
// two tenants may each have default/web: in an upstream informer one hides the
// other, an update of one arrives as an update from the other, and a relist
// cannot tell that one of them was deleted. Here the key carries the tenant,
// so each object has its own history, and a relist (after a 410 or a lost
// connection) turns into exact adds, updates and deletes.
//
// Invariants: events for one Informer are delivered one at a time, in the
// order the TP reported them, and never while the store's lock is held, so a
// handler may call List. An update always pairs two versions of the same
// tenant/namespace/name.
package informer
