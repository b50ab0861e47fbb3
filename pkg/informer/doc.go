// Package informer is how tpkit lists and watches an Arktos tenant partition
// (TP): one primitive that every consumer uses (partition-dns through
// pkg/dns/source and pkg/partition; the test bed's in-process kube-proxy and
// origin feeds, testbed/kubeproxyk8s and testbed/tporigink8s).
//
//   - ListWatch reads one resource through Arktos's tenant paths: every
//     tenant through /api/v1/tenants/all/{resource}, or one tenant (and one
//     namespace) through /api/v1/tenants/{t}/.... A short path
//     (/api/v1/{resource}) would mean only the caller's own tenant.
//   - EndpointsListWatch reads a TP's service endpoints as core/v1 Endpoints
//     (all Arktos has) or discovery.k8s.io/v1 EndpointSlices, by the TP's
//     discovery or as forced.
//   - Feed runs a list/watch into a Sink: a full list, then a watch; a
//     relist after a 410 Gone or a lost connection, within 625 ms of the
//     TP answering again; never a streaming watch-list, which Arktos
//     (Kubernetes 1.18) ignores. With FeedOptions.PageSize and a PagedSink,
//     the list is read in pages (limit and continue, a consistent read)
//     that the sink takes one by one, optionally one page at a time across
//     feeds (PageGate), and ends as one list at the end.
//
// client-go's informers key their stores by namespace/name. In an Arktos TP
// two tenants may each have default/web: in an upstream informer one hides the
// other, an update of one arrives as an update from the other, and a relist
// cannot tell that one of them was deleted. Here every sink keys by more than
// namespace/name, so each object has its own history, and a relist turns into
// exact adds, updates and deletes.
//
// Invariants: events for one Feed are delivered one at a time, in the order
// the TP reported them.
package informer
