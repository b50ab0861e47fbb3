// Package source feeds the partition-dns index from every tenant partition:
// namespaces, services, endpoints and pods, through one pkg/informer feed
// per partition and kind, read through Arktos's /tenants/all/ paths (or the
// --dns-tenant's own path).
//
// The scope options are applied by the TP where Arktos can, so that what is
// not served is never sent, decoded or held:
//   - --dns-namespace: services and endpoints are read one namespace at a
//     time, /tenants/{t}/namespaces/{ns}/ with --dns-tenant, else
//     /tenants/all/ with the field selector metadata.namespace={ns} (Arktos
//     answers /tenants/all/namespaces/{ns}/ with an empty list, and
//     per-tenant paths would need feeds that follow the tenants). A feed
//     merges its namespaces' list/watches into one, each watch resuming
//     from its own resourceVersion. Namespace objects are still read whole
//     (Arktos selects none by name across tenants; they are small, a few per
//     tenant) and pods too, as they say who is asking;
//   - --dns-tenant: the tenant's own paths, plus the system tenant's
//     default/kubernetes (services selected by name, endpoints by name in the
//     store, the system tenant's default namespace being read whole), so
//     that kubernetes.default, which every pod uses to reach the API server,
//     keeps answering.
//
// Endpoints are core/v1 Endpoints, all Arktos serves, or discovery.k8s.io/v1
// EndpointSlices where a TP serves them (informer.EndpointsListWatch); both
// become the same index record, with ready addresses only.
//
// The feeds' sinks are the index itself: each listed or watched object is
// turned into its small index record at once and handed to the
// index.Builder, which keeps what later updates and deletes need, keyed by
// tenant, namespace and name. There is no informer cache, delta queue or key
// string per object beside the index, which is most of partition-dns's
// memory saved (see docs/benchmarks.md). A (re)list replaces a partition's
// whole set of one kind, so objects deleted while a watch was down are
// dropped then.
//
// Invariants:
//   - The index only learns of changes through list and watch events, so a
//     TP that becomes unreachable keeps its last known records (serve-stale).
//   - Objects outside --dns-tenant / --dns-namespace never reach the index,
//     but the system tenant's default/kubernetes under --dns-tenant.
//   - A partition counts as synced (Synced, CheckReady, the partition set's
//     tpkit_partition_synced) only once all four of its feeds have listed.
package source
