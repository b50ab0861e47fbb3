// Package tenancy is tpkit's vocabulary for Arktos multi-tenancy: tenant names,
// the partition-qualified object key, and the tenant of an API object.
//
// Arktos adds metadata.tenant to every tenant-scoped object, and the REST paths
// /api/v1/tenants/{tenant}/namespaces/{ns}/{resource}. The upstream k8s.io/api
// types have no tenant field, so a typed client-go decode would drop it. Transport
// (see WrapConfig) closes that gap on the wire: it lifts metadata.tenant into the
// annotation TenantAnnotation on the way in, lowers it back on the way out, and
// routes requests to tenant paths when the request context names a tenant.
//
// Invariants:
//   - An object with no tenant belongs to SystemTenant.
//   - A Key's string form is Arktos's "<tenant>_<tp>/<namespace>/<name>" and
//     ParseKey(k.String()) == k for every valid key.
//   - Nothing here holds global state.
package tenancy
