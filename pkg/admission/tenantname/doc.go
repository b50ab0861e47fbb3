/*
Copyright 2026 Authors of Arktos.
Copyright 2026 Authors of tpkit.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

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
// The name is the request's, or the object's when the request has none.
// Other operations and resources are admitted. The Plugin holds no state,
// reads only the admission.Request it is given, and every rejection is an
// *admission.Error (Forbidden or Invalid).
//
// An Arktos API server enforces most of this itself, in its own words: its
// tenant validation (ValidateTenantName) refuses "all" and names that are not
// DNS-1123 labels, and its NamespaceLifecycle plugin refuses deleting
// "system". Only "system is never created" has no Arktos counterpart: a
// real TP holds a Tenant object named system (the local cluster's TPs do),
// so there a create fails as AlreadyExists, after the webhook has refused
// it in these words. The plugin serves tpkit's webhook and
// fake-tp; it is not a drop-in for an Arktos plugin.
package tenantname
