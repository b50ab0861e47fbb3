// Package k8s is pkg/tenancy's client-go adapter: it keeps Arktos tenants on
// upstream k8s.io/api types.
//
// Arktos adds metadata.tenant to every tenant-scoped object, and the REST paths
// /api/v1/tenants/{tenant}/namespaces/{ns}/{resource}. The upstream k8s.io/api
// types have no tenant field, so a typed client-go decode would drop it.
// Transport (see WrapConfig) closes that gap on the wire: it lifts
// metadata.tenant into the annotation tenancy.TenantAnnotation on the way in,
// lowers it back on the way out, and routes requests to tenant paths when the
// request context names a tenant (WithTenant).
//
// An Arktos build, whose types carry the tenant, does not need this package.
package k8s
