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

package tenancy

// TenantHome is the one rule for a regular tenant's home TP, used by the
// DNS index, the kube-proxy view (through pkg/tporigin's answers) and the
// kubelet (pkg/tporigin): a regular tenant lives in exactly one TP, but
// its objects may be seen in several while it moves or when two TPs are
// misconfigured.
//
// TPs are given by their position in flag order (--tenant-server-kubeconfig,
// or any order where a lower position comes first). held are the positions
// of the TPs holding the tenant's objects, without repeats; static is the
// position of the TP an operator assigned it to, or -1. The rule:
//   - a static assignment wins, held or not;
//   - else the first TP in flag order that holds the tenant;
//   - a tenant held by more than one TP, or by another TP than its static
//     one, is in conflict: callers log it once and count it
//     (tpkit_dns_tenant_conflicts, tpkit_tporigin_tenants_in_conflict).
//
// home is -1 when the tenant has no home: held by none, and no static one.
// The system tenant is in every TP and has no home; callers never ask.
func TenantHome(held []int, static int) (home int, conflict bool) {
	home = -1
	for _, p := range held {
		if home < 0 || p < home {
			home = p
		}
	}
	conflict = len(held) > 1 || (static >= 0 && len(held) == 1 && held[0] != static)
	if static >= 0 {
		home = static
	}
	return home, conflict
}
