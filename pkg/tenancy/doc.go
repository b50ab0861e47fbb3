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

// Package tenancy is tpkit's vocabulary for Arktos multi-tenancy: tenant names,
// the partition-qualified object key, the tenant of an API object, and the
// one rule for a regular tenant's home TP (TenantHome), which the DNS index
// and pkg/tporigin (and through it kube-proxy and the kubelet) apply.
//
// It is a core: it needs only the standard library, so an Arktos tree can
// vendor it. The client-go glue (a transport that keeps metadata.tenant on
// upstream k8s.io/api types) is its adapter, pkg/tenancy/k8s.
//
// Invariants:
//   - An object with no tenant belongs to SystemTenant. An object's own
//     GetTenant (Arktos's ObjectMeta) wins over TenantAnnotation (tpkit's
//     stand-in for the field on upstream types).
//   - A Key's string form is Arktos's "<tenant>_<tp>/<namespace>/<name>";
//     a valid key's tenant (a DNS label) has no '_', so the form is
//     unambiguous.
//   - Nothing here holds global state.
package tenancy
