// Package tenantname is the admission decision for creating and deleting
// Arktos tenants.
//
// Rules:
//   - CREATE: the name must pass tenancy.ValidateTenantName (a DNS-1123 label
//     of at most 63 characters, not "all"), else Invalid (422); tenant names
//     become DNS labels in <svc>.<ns>.<tenant>.svc.<zone>. Creating "system"
//     is Forbidden: it exists in every tenant partition already.
//   - DELETE: deleting "system" is Forbidden.
//
// Other operations and resources are admitted. The Plugin holds no state, and
// every rejection is a *k8s.io/apimachinery/pkg/api/errors.StatusError.
package tenantname
